import Foundation
import GLibSupport

/// A clock that only moves when the test moves it, and the event loop the
/// in-memory channel runs on (in the manner of swift-nio's EmbeddedEventLoop):
/// timers and posted work run in time order inside `run()` / `advance(by:)`,
/// on the test's thread, never on their own. It is the service's `LoopClock`
/// (GLibSupport) for tests: the server link, the recorder, the preview, the
/// service core and the console take it in place of the main loop's timers.
///
/// Threading: the test's thread only (it stands in for the main loop).
public final class TestClock: LoopClock {
    public private(set) var now: Date
    private var tasks: [Task] = []
    private var nextID = 0

    private final class Task: LoopTimer {
        let id: Int
        var due: Date
        let interval: Double?
        let body: () -> Bool
        var cancelled = false
        init(id: Int, due: Date, interval: Double?, body: @escaping () -> Bool) {
            self.id = id
            self.due = due
            self.interval = interval
            self.body = body
        }
        func cancel() { cancelled = true }
    }

    /// Starts at the wall clock's time, so chunk times and request ranges mean what they say.
    public init(now: Date = Date()) { self.now = now }

    @discardableResult
    public func after(_ seconds: Double, _ body: @escaping () -> Void) -> LoopTimer {
        schedule(seconds, interval: nil) { body(); return false }
    }

    @discardableResult
    public func every(_ seconds: Double, _ body: @escaping () -> Bool) -> LoopTimer {
        schedule(seconds, interval: seconds, body)
    }

    /// Runs `body` soon (at the current time, after what is already due).
    public func post(_ body: @escaping () -> Void) { _ = after(0, body) }

    private func schedule(_ seconds: Double, interval: Double?, _ body: @escaping () -> Bool) -> LoopTimer {
        nextID += 1
        let task = Task(id: nextID, due: now.addingTimeInterval(max(0, seconds)), interval: interval, body: body)
        tasks.append(task)
        return task
    }

    /// Runs everything due now, including what that work posts, until nothing is due.
    public func run() { advance(by: 0) }

    /// Moves time forward by `seconds`, running every timer that falls due on the way, in order.
    public func advance(by seconds: Double) {
        let target = now.addingTimeInterval(seconds)
        while true {
            tasks.removeAll { $0.cancelled }
            guard let task = tasks.filter({ $0.due <= target }).min(by: { ($0.due, $0.id) < ($1.due, $1.id) }) else { break }
            if task.due > now { now = task.due }
            if task.body(), let interval = task.interval, !task.cancelled {
                task.due = now.addingTimeInterval(interval)
            } else {
                task.cancel()
            }
        }
        now = target
    }

    /// Moves time forward in `step`s until `condition` holds or `seconds` have passed; whether it holds.
    @discardableResult
    public func advance(upTo seconds: Double, step: Double = 0.05, until condition: () -> Bool) -> Bool {
        run()
        var left = seconds
        while !condition(), left > 0 {
            advance(by: min(step, left))
            left -= step
        }
        return condition()
    }

    /// When the next timer falls due (nil: none waits).
    public var nextDue: Date? {
        tasks.filter { !$0.cancelled }.map(\.due).min()
    }

    /// Moves time to the next timer and runs what falls due then; false when no timer waits.
    @discardableResult
    public func advanceToNextTimer() -> Bool {
        guard let due = nextDue else { return false }
        advance(by: max(0, due.timeIntervalSince(now)))
        return true
    }

    /// Timers still waiting to fire.
    public var pendingTimers: Int { tasks.filter { !$0.cancelled }.count }
}

