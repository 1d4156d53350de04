import Foundation
import GLibSupport

/// The time the link reads and its timers (reconnect delay, keep-alive
/// watchdog, reply deadline, upload retries). In production the wall clock
/// and GLib main-loop timers; in tests ServerLinkTesting's clock, which only
/// moves when the test moves it.
///
/// Threading: main-loop thread only; timers fire there.
public protocol LinkClock: AnyObject {
    var now: Date { get }
    /// Calls `body` once after `seconds`.
    func after(_ seconds: Double, _ body: @escaping () -> Void) -> LinkTimer
    /// Calls `body` every `seconds` until it returns false or the timer is cancelled.
    func every(_ seconds: Double, _ body: @escaping () -> Bool) -> LinkTimer
}

public protocol LinkTimer: AnyObject {
    func cancel()
}

extension MainLoop.Source: LinkTimer {}

/// The wall clock and GLib main-loop timers.
public final class MainLoopClock: LinkClock {
    public init() {}
    public var now: Date { Date() }
    public func after(_ seconds: Double, _ body: @escaping () -> Void) -> LinkTimer { MainLoop.after(seconds, body) }
    public func every(_ seconds: Double, _ body: @escaping () -> Bool) -> LinkTimer { MainLoop.every(seconds, body) }
}
