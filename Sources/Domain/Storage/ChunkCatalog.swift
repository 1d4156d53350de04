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
    /// Whether the wall clock was synchronised when the chunk was recorded:
    /// false means its times may be wrong (a box without a real-time clock
    /// before time sync); nil where that was not visible, or not recorded.
    public var clockSynchronized: Bool?
    /// Recording order in its folder, counted by the catalog: the wall clock
    /// can be set back, so a later chunk may carry an earlier time. Nil for
    /// chunks catalogued before this was kept (they come first, by time).
    public var sequence: Int?

    public init(file: String, start: Double, end: Double, size: Int64, format: VideoFormat,
                clockSynchronized: Bool? = nil, sequence: Int? = nil) {
        self.file = file
        self.start = start
        self.end = end
        self.size = size
        self.format = format
        self.clockSynchronized = clockSynchronized
        self.sequence = sequence
    }

    public var duration: Double { end - start }

    /// Oldest recorded first: by `sequence`, chunks without one before those with, then by time.
    public static func recordedBefore(_ a: ChunkRecord, _ b: ChunkRecord) -> Bool {
        switch (a.sequence, b.sequence) {
        case let (x?, y?) where x != y: return x < y
        case (nil, _?): return true
        case (_?, nil): return false
        default: return a.start < b.start
        }
    }

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
        let digits = base[base.index(base.startIndex, offsetBy: 6)..<dot]
        guard let format = VideoFormat(rawValue: String(base[base.index(after: dot)...])),
              !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let ms = Int64(digits) else { return nil }
        // Only the one spelling we write ("chunk_0012.mp4" would name the same chunk twice).
        guard final(startMs: ms, format: format) == base else { return nil }
        return (ms, format, isPartial)
    }

    public static func finalName(forPartial name: String) -> String? {
        guard let parsed = parse(name), parsed.isPartial else { return nil }
        return final(startMs: parsed.startMs, format: parsed.format)
    }
}

/// The index of finished chunks in one storage folder, persisted as
/// `catalog.json` beside them and verified against the disk at start.
///
/// Only plain files directly inside the folder with chunk names are
/// indexed, repaired, deleted or handed out for upload; every file access
/// goes through `StorageFolder`, so an index entry like `../x` or a chunk
/// name that is a symbolic link never reaches anything outside the folder.
///
/// Pins are shared with every other process using the folder (`SharedPins`,
/// in its `.pins` folder, which the repair never looks into); the rules of
/// what retention deletes are `RetentionPlan`'s, applied by `StorageGuard`.
///
/// Thread-safety: all state is behind one lock, so the recorder (main loop)
/// and an uploader may both use it; file deletions happen under the lock
/// (and, across processes, under the pins folder's exclusive lock) so a pin
/// can never race a deletion.
public final class ChunkCatalog: @unchecked Sendable {
    public static let indexFileName = StorageLayout.indexFileName

    public let directory: URL
    public let folder: StorageFolder
    private let logger: Logger
    private let lock = NSLock()
    private var records: [ChunkRecord] = []     // sorted by start
    private var pins: [String: Int] = [:]        // file -> pin count in this process
    /// Set once an unfinished chunk without video was removed: a silent
    /// source leaves one at every retry, said once (then at debug) until a chunk is recorded.
    private var saidEmptyPartialRemoved = false
    private let sharedPins: SharedPins           // what other processes see of them, and theirs
    /// False when the index was missing or unreadable: the files are the only truth.
    public private(set) var indexWasReadable = false

    /// Finds the playable duration of a media file (opened and checked to be
    /// a plain file), or nil if it is not playable.
    public typealias DurationProbe = (OpenedFile) -> Double?

    public struct ReconcileReport: Equatable, Sendable {
        public var indexed: [String] = []
        public var dropped: [String] = []
        public var repaired: [String] = []
        public var removed: [String] = []
        /// Names that look like chunks but are not plain files (links, folders): left alone.
        public var ignored: [String] = []
        /// Companion files (`Companion`) whose chunk is gone, removed.
        public var orphans: [String] = []
    }

    public init(directory: URL, logger: Logger = Logger(label: "allspark.catalog")) throws {
        self.directory = directory
        self.folder = StorageFolder(directory)
        self.logger = logger
        self.sharedPins = SharedPins(storage: folder, logger: logger)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StorageError("\(directory.path): cannot create the storage folder (\(error.localizedDescription))")
        }
        loadIndex()
    }

    /// Reads a storage folder's index without changing anything (for queries
    /// while a recorder may be running). Entries that do not name a chunk
    /// file inside the folder are left out.
    public static func readIndex(of directory: URL) throws -> [ChunkRecord] {
        let folder = StorageFolder(directory)
        let path = directory.appendingPathComponent(indexFileName).path
        let data: Data
        switch folder.entry(indexFileName) {
        case .missing:
            throw StorageError("\(directory.path): no chunk index (\(indexFileName)) here; is this a recorder's storage folder?")
        case .notAPlainFile(let kind):
            throw StorageError("\(path) is \(kind), not a chunk index")
        case .file:
            do { data = try folder.read(indexFileName) } catch { throw StorageError("\(path): \(error)") }
        }
        do {
            return try JSONDecoder().decode([ChunkRecord].self, from: data).filter { validityProblem(of: $0) == nil }.sorted { $0.start < $1.start }
        } catch {
            throw StorageError("\(path): unreadable chunk index (\(error))")
        }
    }

    /// Why an index entry cannot be a chunk of this folder, or nil if it can.
    static func validityProblem(of record: ChunkRecord) -> String? {
        guard let parsed = ChunkName.parse(record.file), !parsed.isPartial else {
            return "not a chunk file name inside the storage folder"
        }
        guard parsed.format == record.format else { return "its format does not match its name" }
        guard record.start.isFinite, record.end.isFinite, record.end >= record.start, record.size >= 0 else {
            return "impossible times or size"
        }
        return nil
    }

    private func loadIndex() {
        let data: Data
        do {
            switch folder.entry(Self.indexFileName) {
            case .missing: return
            case .notAPlainFile(let kind): throw StorageError("it is \(kind), not a plain file")
            case .file: data = try folder.read(Self.indexFileName)
            }
            records = try JSONDecoder().decode([ChunkRecord].self, from: data).sorted { $0.start < $1.start }
        } catch {
            logger.warning("chunk index \(directory.path)/\(Self.indexFileName) is unreadable (\(error)); rebuilding it from the files")
            records = []
            return
        }
        indexWasReadable = true
        records.removeAll { record in
            guard let problem = Self.validityProblem(of: record) else { return false }
            logger.warning("chunk index entry \(StorageFolder.printable(record.file)) ignored: \(problem)")
            return true
        }
    }

    /// Writes the index atomically (exclusive temporary file + rename) so a crash never leaves half an index.
    private func saveLocked() {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try folder.writeAtomically(try encoder.encode(records), as: Self.indexFileName)
        } catch {
            logger.error("cannot write the chunk index in \(directory.path): \(error)")
        }
    }

    /// The plain chunk files in the folder (final and partial names); any
    /// other entry with a chunk name is logged and left alone.
    private func chunkFiles(ignored: inout [String], quiet: Bool = false) -> [String] {
        let shown = quiet ? 0 : 10   // a folder full of links must not flood the log
        let files = folder.names().sorted().filter { name in
            guard ChunkName.parse(name) != nil else { return false }
            if case .notAPlainFile(let kind) = folder.entry(name) {
                if ignored.count < shown {
                    logger.warning("ignoring \(StorageFolder.printable(name)) in \(directory.path): it is \(kind), not a plain file")
                }
                ignored.append(name)
                return false
            }
            return true
        }
        if !quiet, ignored.count > shown {
            logger.warning("ignoring \(ignored.count - shown) more entries with chunk names in \(directory.path) that are not plain files")
        }
        return files
    }

    /// Probes a chunk file through a descriptor opened without following links.
    private func duration(of name: String, probe: DurationProbe) -> Double? {
        guard let file = try? folder.open(name) else { return nil }
        return probe(file)
    }

    /// Brings the index in line with the folder: drops entries whose file is
    /// gone, indexes unknown chunk files, and repairs (renames) or removes
    /// partial files left by a crash, and temporary files of interrupted
    /// writes. Call before recording starts (the recorder then owns the folder).
    @discardableResult
    public func reconcile(probe: DurationProbe) -> ReconcileReport {
        // A probe can take seconds (a discoverer with a 10 s timeout, a file that never
        // finishes probing): the files to probe are picked under the lock and probed
        // outside it, so the main loop's readers of the catalog never wait for a probe.
        let unknown = lock.withLock { () -> [String] in
            var ignored: [String] = []
            let indexed = Dictionary(records.map { ($0.file, $0.size) }, uniquingKeysWith: { a, _ in a })
            return chunkFiles(ignored: &ignored, quiet: true).filter { name in
                guard let size = indexed[name] else { return true }
                return fileSize(name) != size
            }
        }
        var probed: [String: Double?] = [:]
        for name in unknown { probed[name] = duration(of: name, probe: probe) }

        lock.lock(); defer { lock.unlock() }
        var report = ReconcileReport()
        for stale in folder.removeStaleTemporaries(of: StorageLayout.atomicallyWritten) {
            logger.info("removed \(StorageFolder.printable(stale)), left by an interrupted write")
        }
        let names = chunkFiles(ignored: &report.ignored)
        let present = Set(names)

        records.removeAll { record in
            guard !present.contains(record.file) else { return false }
            let why = report.ignored.contains(record.file) ? "is not a plain file" : "is not on disk"
            logger.warning("chunk \(record.file) is in the index but \(why); dropping it from the index")
            report.dropped.append(record.file)
            return true
        }
        // An indexed file whose size changed was rewritten behind our back: probe it again.
        for record in records where fileSize(record.file) != record.size {
            records.removeAll { $0.file == record.file }
        }
        let known = Set(records.map(\.file))

        for name in names {
            guard let parsed = ChunkName.parse(name), !known.contains(name) else { continue }
            // A file that appeared since the probes is left for the next pass.
            guard let duration = probed[name] else { continue }
            if parsed.isPartial {
                guard let duration, duration > 0 else {
                    let text = "removing \(name): an unfinished chunk with no playable video"
                    if saidEmptyPartialRemoved {
                        logger.debug("\(text) (again: the source still sends nothing)")
                    } else {
                        logger.warning("\(text)")
                        saidEmptyPartialRemoved = true
                    }
                    removeLocked(name, into: &report)
                    continue
                }
                let finalName = ChunkName.final(startMs: parsed.startMs, format: parsed.format)
                do {
                    try folder.rename(name, to: finalName)
                } catch {
                    logger.error("cannot repair \(name): \(error)")
                    continue
                }
                logger.notice("repaired \(finalName): recovered \(String(format: "%.1f", duration)) s from an unfinished chunk")
                insertLocked(record(name: finalName, startMs: parsed.startMs, format: parsed.format, duration: duration))
                report.repaired.append(finalName)
            } else {
                guard let duration, duration > 0 else {
                    logger.warning("removing \(name): not a playable video")
                    removeLocked(name, into: &report)
                    continue
                }
                logger.info("indexed \(name) found in the storage folder (\(String(format: "%.1f", duration)) s)")
                insertLocked(record(name: name, startMs: parsed.startMs, format: parsed.format, duration: duration))
                report.indexed.append(name)
            }
        }
        separateNeighboursLocked(trusting: Set(known))
        removeOrphanCompanionsLocked(into: &report)
        saveLocked()
        return report
    }

    /// Companions are written after their chunk is finished, so one whose
    /// chunk (finished or partial, any container) is not in the folder lost
    /// it: retention or a repair removed it. Interrupted companion writes go too.
    private func removeOrphanCompanionsLocked(into report: inout ReconcileReport) {
        for stale in folder.removeStaleTemporaries(where: { Companion.chunkStart(ofCompanion: $0) != nil }) {
            logger.info("removed \(StorageFolder.printable(stale)), left by an interrupted write")
        }
        let names = folder.names()
        let chunkStarts = Set(names.compactMap { ChunkName.parse($0)?.startMs })
        for name in names.sorted() {
            guard let start = Companion.chunkStart(ofCompanion: name), !chunkStarts.contains(start),
                  case .file = folder.entry(name) else { continue }
            do {
                try folder.remove(name)
                report.orphans.append(name)
                logger.info("removed \(name): its chunk is gone")
            } catch {
                logger.error("cannot remove \(StorageFolder.printable(name)): \(error)")
            }
        }
    }

    /// Deletes the companions of a chunk being deleted (plain files only).
    private func removeCompanionsLocked(of file: String) {
        for companion in Companion.candidates(forChunk: file) where folder.entry(companion.file) != .missing {
            do {
                try folder.remove(companion.file)
            } catch {
                logger.error("cannot delete \(companion.file) with its chunk: \(error)")
            }
        }
    }

    private func removeLocked(_ name: String, into report: inout ReconcileReport) {
        do {
            try folder.remove(name)
            report.removed.append(name)
        } catch {
            logger.error("cannot remove \(StorageFolder.printable(name)): \(error)")
        }
    }

    /// For a reader while a recorder may be running (the `upload` command):
    /// when the index was missing or unreadable, indexes the finished chunk
    /// files in memory, their times taken from the name and the media. Changes
    /// nothing on disk (partial files belong to the recorder). Returns how many.
    @discardableResult
    public func indexFilesIfIndexWasUnreadable(probe: DurationProbe) -> Int {
        lock.lock(); defer { lock.unlock() }
        guard !indexWasReadable else { return 0 }
        var ignored: [String] = [], indexed: Set<String> = []
        for name in chunkFiles(ignored: &ignored) {
            guard let parsed = ChunkName.parse(name), !parsed.isPartial, !records.contains(where: { $0.file == name }) else { continue }
            guard let duration = duration(of: name, probe: probe), duration > 0 else {
                logger.warning("\(name) is not a playable video; skipped")
                continue
            }
            insertLocked(record(name: name, startMs: parsed.startMs, format: parsed.format, duration: duration))
            indexed.insert(name)
        }
        separateNeighboursLocked(trusting: Set(records.map(\.file)).subtracting(indexed))
        logger.notice("indexed \(indexed.count) chunk file(s) found in \(directory.path)")
        return indexed.count
    }

    /// A chunk indexed from its file has its start from its name, truncated
    /// to the millisecond, and its end from the media, so it can reach a
    /// fraction of a millisecond into its neighbour: the times of the chunk
    /// not in `trusted` give way (its start moves to the previous end, or the
    /// previous end to its start). A larger overlap is real (the wall clock
    /// was set back between them) and both chunks keep the times they were
    /// recorded with, as do two chunks the catalog recorded itself.
    static let roundingOverlap = 0.5

    private func separateNeighboursLocked(trusting trusted: Set<String>) {
        guard records.count > 1 else { return }
        for i in 1..<records.count where records[i - 1].end > records[i].start {
            let (previous, next) = (records[i - 1], records[i])
            guard previous.end - next.start < Self.roundingOverlap, !(trusted.contains(previous.file) && trusted.contains(next.file)) else {
                continue
            }
            if !trusted.contains(next.file) || trusted.contains(previous.file), previous.end < next.end {
                records[i].start = previous.end
            } else if next.start > previous.start {
                records[i - 1].end = next.start
            } else {
                continue
            }
            logger.info("\(previous.file) and \(next.file) overlapped by \(String(format: "%.2f", (previous.end - next.start) * 1000)) ms; the catalogue now has them meet")
        }
    }

    private func record(name: String, startMs: Int64, format: VideoFormat, duration: Double) -> ChunkRecord {
        let start = Double(startMs) / 1000
        return ChunkRecord(file: name, start: start, end: start + duration, size: fileSize(name) ?? 0, format: format)
    }

    private func fileSize(_ name: String) -> Int64? {
        guard case .file(let size) = folder.entry(name) else { return nil }
        return size
    }

    private func insertLocked(_ record: ChunkRecord) {
        var record = record
        records.removeAll { $0.file == record.file }
        if record.sequence == nil { record.sequence = (records.compactMap(\.sequence).max() ?? 0) + 1 }
        let index = records.firstIndex { $0.start > record.start } ?? records.endIndex
        records.insert(record, at: index)
    }

    /// Adds a finished chunk and persists the index.
    public func add(_ record: ChunkRecord) {
        lock.lock(); defer { lock.unlock() }
        saidEmptyPartialRemoved = false
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

    /// Opens a catalogued chunk for sending: only a plain file inside the
    /// folder with a chunk name, never through a link.
    public func open(_ record: ChunkRecord) throws -> OpenedFile {
        if let problem = Self.validityProblem(of: record) {
            throw StorageError("\(StorageFolder.printable(record.file)): \(problem)")
        }
        return try folder.open(record.file)
    }

    // MARK: Pins (uploads in progress keep their chunks from retention)

    /// Keeps `file` from retention, in this process and in every other
    /// process using the folder, until as many `unpin`s (or this process ends).
    public func pin(_ file: String) {
        lock.lock(); defer { lock.unlock() }
        pins[file, default: 0] += 1
        if pins[file] == 1 { sharedPins.added(file) }
    }

    public func unpin(_ file: String) {
        lock.lock(); defer { lock.unlock() }
        guard let count = pins[file] else { return }
        pins[file] = count > 1 ? count - 1 : nil
        if count == 1 { sharedPins.removed(file) }
    }

    /// Pinned by this process or by another live one.
    public func isPinned(_ file: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return pins[file] != nil || sharedPins.othersPinned(removingStale: false).contains(file)
    }

    // MARK: Retention (the rules are `RetentionPlan`'s, applied by `StorageGuard`)

    /// Deletes the chunks `plan` picks, given the catalogued chunks (oldest
    /// first) and every pinned one: this process's and other live
    /// processes'. No process can pin between the reading of the pins and
    /// the deletions, and pins of processes that died are cleared. The chunk
    /// being written is not in the catalog, so it is never offered.
    /// Returns what was deleted (a file already gone counts; one that became
    /// a link or folder is only dropped from the index).
    @discardableResult
    public func applyRetention(_ plan: (_ chunks: [ChunkRecord], _ pinned: Set<String>) -> [RetentionDeletion]) -> [RetentionDeletion] {
        lock.lock(); defer { lock.unlock() }
        return sharedPins.withExclusiveLock {
            let pinned = Set(pins.keys).union(sharedPins.othersPinned(removingStale: true))
            return deleteLocked(plan(records, pinned))
        }
    }

    private func deleteLocked(_ victims: [RetentionDeletion]) -> [RetentionDeletion] {
        guard !victims.isEmpty else { return [] }
        var deleted: [RetentionDeletion] = []
        for victim in victims {
            let file = victim.chunk.file
            switch folder.entry(file) {
            case .missing:
                break   // Already gone: drop it from the index all the same.
            case .notAPlainFile(let kind):
                // Something replaced the chunk (a link): not ours to delete, and no longer a chunk.
                logger.warning("retention: \(file) is now \(kind); left alone and dropped from the index")
                records.removeAll { $0.file == file }
                continue
            case .file:
                do {
                    try folder.remove(file)
                } catch {
                    logger.error("retention: cannot delete \(file): \(error)")
                    continue
                }
            }
            removeCompanionsLocked(of: file)
            records.removeAll { $0.file == file }
            deleted.append(victim)
        }
        saveLocked()
        return deleted
    }
}
