import Foundation
import Logging

/// One finished chunk on disk.
public struct ChunkRecord: Codable, Hashable, Sendable {
    /// File name inside the storage folder, e.g. `chunk_1700000000000.mp4`.
    public var file: String
    /// Wall-clock capture time of the first frame, epoch seconds.
    public var start: Double
    /// Wall-clock end of the last frame, epoch seconds.
    public var end: Double
    public var size: Int64
    public var format: VideoFormat

    public init(file: String, start: Double, end: Double, size: Int64, format: VideoFormat) {
        self.file = file
        self.start = start
        self.end = end
        self.size = size
        self.format = format
    }

    public var duration: Double { end - start }

    public func overlaps(from: Double, to: Double) -> Bool { start < to && end > from }
}

/// Chunk file names: `chunk_<start epoch ms>.<ext>` when finished, and a hidden
/// `.chunk_<ms>.<ext>.partial` while being written, so that a file only ever
/// appears under its final name once it is complete.
public enum ChunkName {
    public static let partialSuffix = ".partial"

    public static func final(startMs: Int64, format: VideoFormat) -> String {
        "chunk_\(startMs).\(format.fileExtension)"
    }

    public static func partial(startMs: Int64, format: VideoFormat) -> String {
        "." + final(startMs: startMs, format: format) + partialSuffix
    }

    /// Parses a final or partial name into its start and format.
    public static func parse(_ name: String) -> (startMs: Int64, format: VideoFormat, isPartial: Bool)? {
        var base = Substring(name)
        let isPartial = base.hasPrefix(".") && base.hasSuffix(partialSuffix)
        if isPartial { base = base.dropFirst().dropLast(partialSuffix.count) }
        guard base.hasPrefix("chunk_"), let dot = base.lastIndex(of: ".") else { return nil }
        guard let format = VideoFormat(rawValue: String(base[base.index(after: dot)...])),
              let ms = Int64(base[base.index(base.startIndex, offsetBy: 6)..<dot]), ms >= 0 else { return nil }
        return (ms, format, isPartial)
    }

    public static func finalName(forPartial name: String) -> String? {
        guard let parsed = parse(name), parsed.isPartial else { return nil }
        return final(startMs: parsed.startMs, format: parsed.format)
    }
}

/// Which chunks to delete to get under the size limit: the oldest first,
/// never a pinned one. Pure, so the order is easy to test.
public enum RetentionPolicy {
    public static func victims(of records: [ChunkRecord], maxBytes: Int64, pinned: Set<String>) -> [ChunkRecord] {
        var total = records.reduce(Int64(0)) { $0 + $1.size }
        var victims: [ChunkRecord] = []
        for record in records.sorted(by: { $0.start < $1.start }) where total > maxBytes {
            if pinned.contains(record.file) { continue }
            victims.append(record)
            total -= record.size
        }
        return victims
    }
}

/// The index of finished chunks in one storage folder, persisted as
/// `catalog.json` beside them and verified against the disk at start.
///
/// Thread-safety: all state is behind one lock, so the recorder (main loop)
/// and an uploader may both use it; file deletions happen under the lock
/// so a pin can never race a deletion.
public final class ChunkCatalog: @unchecked Sendable {
    public static let indexFileName = "catalog.json"

    public let directory: URL
    private let logger: Logger
    private let lock = NSLock()
    private var records: [ChunkRecord] = []     // sorted by start
    private var pins: [String: Int] = [:]        // file -> pin count

    /// Finds the playable duration of a media file, or nil if it is not playable.
    public typealias DurationProbe = (URL) -> Double?

    public struct ReconcileReport: Equatable, Sendable {
        public var indexed: [String] = []
        public var dropped: [String] = []
        public var repaired: [String] = []
        public var removed: [String] = []
    }

    public init(directory: URL, logger: Logger = Logger(label: "allspark.catalog")) throws {
        self.directory = directory
        self.logger = logger
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ConfigError("\(directory.path): cannot create the storage folder (\(error.localizedDescription))")
        }
        loadIndex()
    }

    private var indexURL: URL { directory.appendingPathComponent(Self.indexFileName) }

    /// Reads a storage folder's index without changing anything (for queries
    /// while a recorder may be running).
    public static func readIndex(of directory: URL) throws -> [ChunkRecord] {
        let url = directory.appendingPathComponent(indexFileName)
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw ConfigError("\(directory.path): no chunk index (\(indexFileName)) here; is this a recorder's storage folder?")
        }
        do {
            return try JSONDecoder().decode([ChunkRecord].self, from: Data(contentsOf: url)).sorted { $0.start < $1.start }
        } catch {
            throw ConfigError("\(url.path): unreadable chunk index (\(error))")
        }
    }

    private func loadIndex() {
        guard let data = try? Data(contentsOf: indexURL) else { return }
        do {
            records = try JSONDecoder().decode([ChunkRecord].self, from: data).sorted { $0.start < $1.start }
        } catch {
            logger.warning("chunk index \(indexURL.path) is unreadable (\(error)); rebuilding it from the files")
            records = []
        }
    }

    /// Writes the index atomically (temporary file + rename) so a crash never leaves half an index.
    private func saveLocked() {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(records).write(to: indexURL, options: .atomic)
        } catch {
            logger.error("cannot write the chunk index \(indexURL.path): \(error)")
        }
    }

    /// Brings the index in line with the folder: drops entries whose file is
    /// gone, indexes unknown chunk files, and repairs (renames) or removes
    /// partial files left by a crash. Call before recording starts.
    @discardableResult
    public func reconcile(probe: DurationProbe) -> ReconcileReport {
        lock.lock(); defer { lock.unlock() }
        var report = ReconcileReport()
        let fm = FileManager.default
        let names = (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
        let present = Set(names)

        records.removeAll { record in
            guard !present.contains(record.file) else { return false }
            logger.warning("chunk \(record.file) is in the index but not on disk; dropping it from the index")
            report.dropped.append(record.file)
            return true
        }
        // An indexed file whose size changed was rewritten behind our back: probe it again.
        for record in records where fileSize(record.file) != record.size {
            records.removeAll { $0.file == record.file }
        }
        let known = Set(records.map(\.file))

        for name in names.sorted() {
            guard let parsed = ChunkName.parse(name), !known.contains(name) else { continue }
            let url = directory.appendingPathComponent(name)
            let duration = probe(url)
            if parsed.isPartial {
                guard let duration, duration > 0 else {
                    logger.warning("removing \(name): an unfinished chunk with no playable video")
                    try? fm.removeItem(at: url)
                    report.removed.append(name)
                    continue
                }
                let finalName = ChunkName.final(startMs: parsed.startMs, format: parsed.format)
                do {
                    try fm.moveItem(at: url, to: directory.appendingPathComponent(finalName))
                } catch {
                    logger.error("cannot rename \(name) to \(finalName): \(error)")
                    continue
                }
                logger.notice("repaired \(finalName): recovered \(String(format: "%.1f", duration)) s from an unfinished chunk")
                insertLocked(record(name: finalName, startMs: parsed.startMs, format: parsed.format, duration: duration))
                report.repaired.append(finalName)
            } else {
                guard let duration, duration > 0 else {
                    logger.warning("removing \(name): not a playable video")
                    try? fm.removeItem(at: url)
                    report.removed.append(name)
                    continue
                }
                logger.info("indexed \(name) found in the storage folder (\(String(format: "%.1f", duration)) s)")
                insertLocked(record(name: name, startMs: parsed.startMs, format: parsed.format, duration: duration))
                report.indexed.append(name)
            }
        }
        saveLocked()
        return report
    }

    private func record(name: String, startMs: Int64, format: VideoFormat, duration: Double) -> ChunkRecord {
        let start = Double(startMs) / 1000
        return ChunkRecord(file: name, start: start, end: start + duration, size: fileSize(name) ?? 0, format: format)
    }

    private func fileSize(_ name: String) -> Int64? {
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        return (attributes?[.size] as? NSNumber)?.int64Value
    }

    private func insertLocked(_ record: ChunkRecord) {
        records.removeAll { $0.file == record.file }
        let index = records.firstIndex { $0.start > record.start } ?? records.endIndex
        records.insert(record, at: index)
    }

    /// Adds a finished chunk and persists the index.
    public func add(_ record: ChunkRecord) {
        lock.lock(); defer { lock.unlock() }
        insertLocked(record)
        saveLocked()
    }

    public var all: [ChunkRecord] {
        lock.lock(); defer { lock.unlock() }
        return records
    }

    public var totalBytes: Int64 {
        lock.lock(); defer { lock.unlock() }
        return records.reduce(0) { $0 + $1.size }
    }

    /// Chunks overlapping `[from, to)`, oldest first.
    public func chunks(from: Double = -.infinity, to: Double = .infinity) -> [ChunkRecord] {
        lock.lock(); defer { lock.unlock() }
        return records.filter { $0.overlaps(from: from, to: to) }
    }

    public func url(of record: ChunkRecord) -> URL { directory.appendingPathComponent(record.file) }

    // MARK: Pins (uploads in progress keep their chunks from retention)

    public func pin(_ file: String) {
        lock.lock(); defer { lock.unlock() }
        pins[file, default: 0] += 1
    }

    public func unpin(_ file: String) {
        lock.lock(); defer { lock.unlock() }
        guard let count = pins[file] else { return }
        pins[file] = count > 1 ? count - 1 : nil
    }

    public func isPinned(_ file: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return pins[file] != nil
    }

    // MARK: Retention

    /// Deletes the oldest unpinned chunks while the total exceeds `maxBytes`.
    /// The chunk being written is not in the catalog, so it is never a victim.
    @discardableResult
    public func enforceRetention(maxBytes: Int64) -> [ChunkRecord] {
        lock.lock(); defer { lock.unlock() }
        let victims = RetentionPolicy.victims(of: records, maxBytes: maxBytes, pinned: Set(pins.keys))
        return deleteLocked(victims, reason: "the buffer exceeds \(maxBytes / 1_048_576) MiB")
    }

    /// Deletes the oldest unpinned chunk regardless of the limit (to free space on a full disk).
    @discardableResult
    public func deleteOldest(reason: String) -> ChunkRecord? {
        lock.lock(); defer { lock.unlock() }
        guard let oldest = records.first(where: { pins[$0.file] == nil }) else { return nil }
        return deleteLocked([oldest], reason: reason).first
    }

    private func deleteLocked(_ victims: [ChunkRecord], reason: String) -> [ChunkRecord] {
        guard !victims.isEmpty else { return [] }
        var deleted: [ChunkRecord] = []
        for victim in victims {
            do {
                try FileManager.default.removeItem(at: directory.appendingPathComponent(victim.file))
            } catch let error as CocoaError where error.code == .fileNoSuchFile {
                // Already gone: drop it from the index all the same.
            } catch {
                logger.error("retention: cannot delete \(victim.file): \(error)")
                continue
            }
            records.removeAll { $0.file == victim.file }
            deleted.append(victim)
            logger.notice("retention: deleted \(victim.file) (\(victim.size) bytes) because \(reason)")
        }
        saveLocked()
        return deleted
    }
}
