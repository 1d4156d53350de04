import Foundation
import Logging

/// Slowing password guessers down, by the console's rules, which the RTSP
/// stream shares: from an address, the third failure in a row and every one
/// after it make that address wait 1, 2, 4 … up to 300 s before its next
/// password is checked; past `globalFailureLimit` failures in `globalWindow`
/// from all addresses together (many addresses are easy to come by), every
/// check waits until the window has passed.
///
/// A value type without locking: its owner keeps it on one thread (the
/// console on the main loop) or under a lock (the stream).
struct FailedAttempts {
    /// Failed password checks in `globalWindow`, from all addresses together, before every check waits.
    static let globalFailureLimit = 20
    static let globalWindow: TimeInterval = 60

    /// What is guarded, for the log ("console", "stream").
    let what: String
    private var failures: [String: (count: Int, blockedUntil: Date)] = [:]
    /// When the failures of the last `globalWindow` happened, from any address (oldest first).
    private var recentFailures: [Date] = []
    /// Until when every password check waits, after `globalFailureLimit` failures in `globalWindow`.
    private var globalLockUntil: Date?

    init(what: String) { self.what = what }

    mutating func succeeded(_ address: String) { failures[address] = nil }

    mutating func failed(_ address: String, now: Date, logger: Logger) {
        var entry = failures[address] ?? (0, .distantPast)
        entry.count += 1
        if entry.count >= 3 {
            let seconds = min(300, 1 << min(entry.count - 3, 9))
            entry.blockedUntil = now.addingTimeInterval(TimeInterval(seconds))
            logger.warning("\(what): \(entry.count) failed logins in a row from \(address): it must wait \(seconds) s")
        }
        failures[address] = entry
        recentFailures.append(now)
        prune(now: now)
        if recentFailures.count >= Self.globalFailureLimit, globalLockUntil == nil {
            // A whole window: at most `globalFailureLimit` guesses a minute, and two log lines a minute under a long attack.
            globalLockUntil = now.addingTimeInterval(Self.globalWindow)
            let addresses = Set(failures.keys).count
            logger.warning("\(what): \(recentFailures.count) failed logins in the last \(Int(Self.globalWindow)) s (from \(addresses) addresses): password checks from everyone wait \(Int(Self.globalWindow)) s")
        }
    }

    private mutating func prune(now: Date) {
        let start = now.addingTimeInterval(-Self.globalWindow)
        recentFailures.removeAll { $0 <= start }
        // Forget addresses that are neither blocked nor recent, so the table stays small.
        if failures.count > 1000 { failures = failures.filter { $0.value.blockedUntil > now } }
    }

    /// How long a password from `address` must wait and why, or nil when it may be checked now.
    mutating func refusal(_ address: String, now: Date, logger: Logger) -> (seconds: Int, why: String)? {
        if let entry = failures[address], entry.blockedUntil > now {
            let seconds = max(1, Int(entry.blockedUntil.timeIntervalSince(now).rounded(.up)))
            return (seconds, "too many failed logins from this address; try again in \(seconds) s")
        }
        if let until = globalLockUntil {
            if until > now {
                let seconds = max(1, Int(until.timeIntervalSince(now).rounded(.up)))
                return (seconds, "too many failed logins lately (from all addresses); try again in \(seconds) s")
            }
            globalLockUntil = nil
            prune(now: now)
            logger.notice("\(what): password checks resume")
        }
        return nil
    }
}
