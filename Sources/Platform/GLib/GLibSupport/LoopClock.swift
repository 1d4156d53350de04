import Foundation

/// The time the service reads and its timers: one clock, shared by the
/// recorder, the preview, the service core, the console and the server link.
/// In production the wall clock and GLib main-loop timers (`MainLoopClock`);
/// in tests a clock that only moves when the test moves it (ClockTesting's
/// `TestClock`), so a test that only waits (a retry backoff, a grace period,
/// a reconnect delay) does not wait in real time.
///
/// A timer that measures the real world (the frame watchdog: no frame for
/// `frame_timeout_s` of real time) stays on `MainLoop`: skipping ahead would
/// take a live source for frozen.
///
/// Threading: main-loop thread only; timers fire there. (Work from other
/// threads reaches the loop with `MainLoop.post`, which is no timer.)
public protocol LoopClock: AnyObject {
    var now: Date { get }
    /// Calls `body` once after `seconds`.
    @discardableResult func after(_ seconds: Double, _ body: @escaping () -> Void) -> LoopTimer
    /// Calls `body` every `seconds` until it returns false or the timer is cancelled.
    @discardableResult func every(_ seconds: Double, _ body: @escaping () -> Bool) -> LoopTimer
}

public protocol LoopTimer: AnyObject {
    func cancel()
}

extension MainLoop.Source: LoopTimer {}

/// The wall clock and GLib main-loop timers.
public final class MainLoopClock: LoopClock {
    /// The one every part uses unless a test gives another.
    public static let shared = MainLoopClock()
    public init() {}
    public var now: Date { Date() }
    @discardableResult
    public func after(_ seconds: Double, _ body: @escaping () -> Void) -> LoopTimer { MainLoop.after(seconds, body) }
    @discardableResult
    public func every(_ seconds: Double, _ body: @escaping () -> Bool) -> LoopTimer { MainLoop.every(seconds, body) }
}
