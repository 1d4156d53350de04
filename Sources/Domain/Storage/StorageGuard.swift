import Foundation
import Logging

/// Applies the retention rules (`RetentionPlan`) to a storage folder: reads
/// the free space, deletes through the catalog what the plan picks (with
/// every process's pins honoured), logs each deletion with its reason, and
/// reacts to a full disk.
///
/// Threading: runs on the caller's thread (the recorder calls it on the
/// main loop); it deletes a few files and reads the free space, nothing slow.
/// The catalog's lock makes concurrent guards on one catalog safe.
public struct StorageGuard: Sendable {
    /// Free bytes on the disk holding the folder, nil when unknown.
    public typealias FreeSpace = @Sendable () -> Int64?

    public let catalog: ChunkCatalog
    private let freeSpace: FreeSpace
    private let logger: Logger

    /// - Parameter freeSpace: what the disk has free; by default asked of
    ///   the file system holding the catalog's folder (tests inject theirs).
    public init(catalog: ChunkCatalog, freeSpace: FreeSpace? = nil, logger: Logger = Logger(label: "allspark.storage")) {
        self.catalog = catalog
        let directory = catalog.directory
        self.freeSpace = freeSpace ?? { Self.freeBytes(at: directory) }
        self.logger = logger
    }

    /// Deletes what the rules pick for a buffer of `maxBytes`; returns it.
    @discardableResult
    public func enforce(maxBytes: Int64) -> [RetentionDeletion] {
        var all: [RetentionDeletion] = []
        // The plan counts each deletion as freeing its size; when the disk
        // says otherwise (a file still open elsewhere, another program
        // writing), the next round reads it again. Each round deletes at
        // least one chunk, so this ends.
        while true {
            let free = freeSpace()
            let done = catalog.applyRetention { chunks, pinned in
                RetentionPlan.deletions(chunks: chunks, maxBytes: maxBytes, freeBytes: free, pinned: pinned)
            }
            log(done)
            all += done
            guard done.contains(where: { if case .lowFreeSpace = $0.reason { return true } else { return false } }),
                  let after = freeSpace(), after < RetentionPlan.reserve(for: catalog.all) else { break }
        }
        return all
    }

    /// Writing failed for want of space: deletes the oldest chunk that may
    /// be deleted to make room (critical log when none can), then applies
    /// the rules. `message` is what the writer reported.
    @discardableResult
    public func diskFull(_ message: String, maxBytes: Int64) -> [RetentionDeletion] {
        logger.critical("the disk holding \(catalog.directory.path) is full (\(message)); deleting the oldest chunk to make room and retrying")
        let room = catalog.applyRetention { chunks, pinned in
            RetentionPlan.roomOnFullDisk(chunks: chunks, pinned: pinned).map { [$0] } ?? []
        }
        log(room)
        if room.isEmpty {
            logger.critical("no chunk can be deleted to make room: free space on the disk or lower recording.buffer_max_mb")
        }
        return room + enforce(maxBytes: maxBytes)
    }

    private func log(_ deletions: [RetentionDeletion]) {
        for deletion in deletions {
            logger.notice("retention: deleted \(deletion.chunk.file) (\(deletion.chunk.size) bytes) because \(deletion.reason)")
        }
    }

    /// Free bytes for unprivileged writers on the file system holding `directory`.
    public static func freeBytes(at directory: URL) -> Int64? {
        let attributes = try? FileManager.default.attributesOfFileSystem(forPath: directory.path)
        return (attributes?[.systemFreeSize] as? NSNumber)?.int64Value
    }
}
