import CGLib

extension MainLoop {
    /// Traps (in debug builds) when called from a thread other than the one
    /// running the main loop, like swift-nio's `preconditionInEventLoop`.
    /// Types owned by the main loop call it at the entry of their public
    /// methods. Before any loop runs, the caller becomes the owner to be:
    /// only a call made while another thread holds the default context fails.
    @inlinable
    public static func preconditionOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(isOnLoopThread, "called off the main loop's thread", file: file, line: line)
    }

    /// True on the thread that runs the main loop (or could: nobody runs it now).
    public static var isOnLoopThread: Bool {
        let context = g_main_context_default()
        // Acquire is re-entrant for the owner and fails while another thread owns the context.
        guard g_main_context_acquire(context) != 0 else { return false }
        g_main_context_release(context)
        return true
    }
}
