import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A condition variable whose timed waits run on the monotonic clock.
///
/// `NSCondition.wait(until:)` waits for a wall-clock instant: a wall clock set
/// back an hour during the wait makes it last an hour more (the kernel moves
/// absolute wall-clock deadlines with the clock). Every timed wait on a
/// recording's path uses this instead, with deadlines from `deadline(after:)`.
public final class MonotonicCondition: NSLocking, @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits until signalled (the lock held).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits until signalled or the monotonic clock reaches `deadline`
    /// (the lock held); false when the deadline passed.
    @discardableResult
    public func wait(until deadline: UInt64) -> Bool {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    /// The monotonic clock now, in nanoseconds.
    public static var now: UInt64 { WallClock.monotonicNow() }

    /// `seconds` from now on the monotonic clock.
    public static func deadline(after seconds: Double) -> UInt64 {
        now + UInt64(max(0, seconds) * 1e9)
    }
}
