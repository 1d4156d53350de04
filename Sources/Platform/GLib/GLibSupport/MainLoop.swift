import CGLib
import Foundation

/// The GLib main loop on the default main context. Whoever runs it owns
/// every object that is driven by it (pipeline bus watches, timers, signal
/// handlers, later libsoup and Avahi). Other threads reach that owner
/// with `MainLoop.post`.
public final class MainLoop {
    private let loop: OpaquePointer

    public init() {
        loop = g_main_loop_new(nil, 0)
    }

    deinit { g_main_loop_unref(loop) }

    /// Runs until `quit()`.
    public func run() { g_main_loop_run(loop) }

    /// Runs until `quit()` or until `seconds` have passed; true if quit was called.
    @discardableResult
    public func run(forAtMost seconds: Double) -> Bool {
        var timedOut = false
        let timer = MainLoop.after(seconds) { [self] in timedOut = true; quit() }
        g_main_loop_run(loop)
        if !timedOut { timer.cancel() }
        return !timedOut
    }

    public func quit() { g_main_loop_quit(loop) }

    /// Dispatches what is ready on the default main context, first waiting for something when
    /// `mayBlock`; true if anything was dispatched. For test helpers that drive a `LoopClock` of
    /// their own beside the real loop.
    @discardableResult
    public static func iterate(mayBlock: Bool) -> Bool { g_main_context_iteration(nil, mayBlock ? 1 : 0) != 0 }

    // MARK: Ownership

    /// True on the thread that owns the main loop: the thread running it
    /// now, or, while no thread runs it, the process's main thread (which
    /// sets things up before it runs the loop, and runs it).
    public static var isOnLoopThread: Bool {
        let context = g_main_context_default()
        if g_main_context_is_owner(context) != 0 { return true }
        guard Thread.isMainThread else { return false }
        // Not running here: the main thread still owns it unless another thread runs it now.
        guard g_main_context_acquire(context) != 0 else { return false }
        g_main_context_release(context)
        return true
    }

    /// Stops the process when called off the main loop's thread, like
    /// swift-nio's `preconditionInEventLoop`: main-loop-owned objects call it
    /// at the entry of their methods, so a call from a streaming thread or a
    /// worker fails at once instead of racing. Active in every build (a
    /// pointer compare and, off the loop, one uncontended lock).
    public static func preconditionOnLoop(_ what: @autoclosure () -> String = "",
                                          file: StaticString = #fileID, line: UInt = #line) {
        precondition(isOnLoopThread, "must run on the main loop's thread: \(what())", file: file, line: line)
    }

    /// Runs `block` on the main-loop thread soon. Safe from any thread.
    public static func post(_ block: @escaping () -> Void) {
        _ = g_idle_add_full(G_PRIORITY_DEFAULT, { data in
            CallbackBox<() -> Void>.from(data!)()
            return 0
        }, CallbackBox(block).retainedPointer, { CallbackBox<() -> Void>.release($0) })
    }

    /// A timer or signal source; cancel to stop it.
    public final class Source {
        fileprivate var id: guint
        fileprivate init(id: guint) { self.id = id }
        public func cancel() {
            if id != 0 { g_source_remove(id); id = 0 }
        }
    }

    /// Calls `block` once after `seconds`, on the main-loop thread.
    @discardableResult
    public static func after(_ seconds: Double, _ block: @escaping () -> Void) -> Source {
        let source = Source(id: 0)
        let fire: () -> Void = { source.id = 0; block() }
        source.id = g_timeout_add_full(G_PRIORITY_DEFAULT, guint(max(0, seconds * 1000)), { data in
            CallbackBox<() -> Void>.from(data!)()
            return 0
        }, CallbackBox(fire).retainedPointer, { CallbackBox<() -> Void>.release($0) })
        return source
    }

    /// Calls `block` every `seconds` until it returns false or the source is cancelled.
    @discardableResult
    public static func every(_ seconds: Double, _ block: @escaping () -> Bool) -> Source {
        let source = Source(id: 0)
        // A source that stopped itself is gone: cancelling it afterwards must not remove its (reused) id.
        let tick: () -> Bool = { if block() { return true }; source.id = 0; return false }
        source.id = g_timeout_add_full(G_PRIORITY_DEFAULT, guint(max(1, seconds * 1000)), { data in
            CallbackBox<() -> Bool>.from(data!)() ? 1 : 0
        }, CallbackBox(tick).retainedPointer, { CallbackBox<() -> Bool>.release($0) })
        return source
    }

    /// Handles a Unix signal (SIGINT, SIGTERM, SIGHUP) on the main-loop thread.
    @discardableResult
    public static func onSignal(_ signal: Int32, _ block: @escaping () -> Void) -> Source {
        let id = g_unix_signal_add_full(G_PRIORITY_DEFAULT, signal, { data in
            CallbackBox<() -> Void>.from(data!)()
            return 1
        }, CallbackBox(block).retainedPointer, { CallbackBox<() -> Void>.release($0) })
        return Source(id: id)
    }
}
