import Foundation
import Logging

/// The service's own recent log records, kept in memory for the console's
/// log view: a bounded ring filled by a swift-log handler that the app
/// installs beside its stderr/journald handler.
///
/// Threading: records arrive from any thread; a lock guards the ring.
public final class RecentLogs: @unchecked Sendable {
    public struct Record: Sendable {
        public var sequence: Int
        public var time: Date
        public var level: Logger.Level
        public var label: String
        public var message: String
    }

    /// The ring the app fills and the console shows.
    public static let shared = RecentLogs(capacity: 2000)

    private let capacity: Int
    private let lock = NSLock()
    private var ring: [Record] = []
    private var next = 0
    private var sequence = 0

    public init(capacity: Int) {
        self.capacity = capacity
        ring.reserveCapacity(capacity)
    }

    func append(level: Logger.Level, label: String, message: String) {
        // A runaway line stays a line: the view shows text, not megabytes.
        let text = message.count > 4000 ? String(message.prefix(4000)) + "…" : message
        lock.lock(); defer { lock.unlock() }
        sequence += 1
        let record = Record(sequence: sequence, time: Date(), level: level, label: label, message: text)
        if ring.count < capacity { ring.append(record) } else { ring[next] = record }
        next = (next + 1) % capacity
    }

    /// Records oldest first, at least `level`, whose message or label holds `containing` (any case), the last `limit`.
    public func records(atLeast level: Logger.Level = .trace, containing: String? = nil, after: Int = 0, limit: Int = 500) -> [Record] {
        lock.lock()
        let ordered = ring.count < capacity ? ring : Array(ring[next...] + ring[..<next])
        lock.unlock()
        let needle = containing?.lowercased()
        let matching = ordered.filter { record in
            guard record.sequence > after, record.level >= level else { return false }
            guard let needle else { return true }
            return record.message.lowercased().contains(needle) || record.label.lowercased().contains(needle)
        }
        return Array(matching.suffix(limit))
    }

    /// A handler writing into this ring, at `level` and above.
    public func handler(label: String, level: Logger.Level) -> LogHandler {
        Handler(ring: self, label: label, logLevel: level)
    }

    struct Handler: LogHandler {
        let ring: RecentLogs
        let label: String
        var logLevel: Logger.Level
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            var text = message.description
            let all = metadata.merging(explicit ?? [:]) { $1 }
            if !all.isEmpty { text += " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
            ring.append(level: level, label: label, message: text)
        }
    }
}
