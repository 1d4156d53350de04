import Foundation

/// Why retention deletes a chunk.
public enum RetentionReason: Equatable, Sendable, CustomStringConvertible {
    /// The chunks together exceed `recording.buffer_max_mb`.
    case overSizeLimit(maxBytes: Int64)
    /// Less than `reserve` bytes are free on the disk.
    case lowFreeSpace(reserve: Int64)
    /// Writing failed because the disk is full.
    case diskFull

    public var description: String {
        switch self {
        case .overSizeLimit(let maxBytes): return "the buffer exceeds \(maxBytes / 1_048_576) MiB"
        case .lowFreeSpace(let reserve):
            return "less than \(String(format: "%.1f", Double(reserve) / 1_048_576)) MiB is free on the disk"
        case .diskFull: return "the disk is full"
        }
    }
}

/// One chunk retention deletes, and why.
public struct RetentionDeletion: Equatable, Sendable {
    public var chunk: ChunkRecord
    public var reason: RetentionReason

    public init(chunk: ChunkRecord, reason: RetentionReason) {
        self.chunk = chunk
        self.reason = reason
    }
}

/// The retention rules, all of them, as pure functions of the chunks, the
/// pins and the free space (no files, no clock), so they are tested alone.
/// `StorageGuard` applies them.
///
/// "Oldest" is the order of recording (`ChunkRecord.recordedBefore`), not
/// of the times in the names: after the wall clock was set back, the newest
/// chunk can carry the earliest time.
///
/// - Oldest first while the chunks together exceed the size limit.
/// - Then oldest first while the disk has less free space than the
///   reserve, two of the largest chunks kept: a full disk is avoided rather
///   than hit, even when the limit is set above what the disk holds or
///   something else fills it. Each deletion counts as freeing its size.
/// - Never the newest chunk (the one most likely to be asked for), never a
///   pinned one (an upload in progress, in any process).
public enum RetentionPlan {
    /// What to delete, in order. `chunks` in any order; `freeBytes` nil when
    /// the free space is unknown (the reserve is then not applied).
    public static func deletions(chunks: [ChunkRecord], maxBytes: Int64, freeBytes: Int64?,
                                 pinned: Set<String>) -> [RetentionDeletion] {
        let oldestFirst = chunks.sorted(by: ChunkRecord.recordedBefore)
        guard !oldestFirst.isEmpty else { return [] }
        var candidates = oldestFirst.dropLast().filter { !pinned.contains($0.file) }[...]
        var deletions: [RetentionDeletion] = []
        var deleted: Set<String> = []
        var total = oldestFirst.reduce(Int64(0)) { $0 + $1.size }
        var free = freeBytes

        while total > maxBytes, let victim = candidates.popFirst() {
            deletions.append(RetentionDeletion(chunk: victim, reason: .overSizeLimit(maxBytes: maxBytes)))
            deleted.insert(victim.file)
            total -= victim.size
            free = free.map { $0 + victim.size }
        }

        let reserve = self.reserve(for: oldestFirst.filter { !deleted.contains($0.file) })
        while let available = free, available < reserve, let victim = candidates.popFirst() {
            deletions.append(RetentionDeletion(chunk: victim, reason: .lowFreeSpace(reserve: reserve)))
            free = available + victim.size
        }
        return deletions
    }

    /// The free space kept on the disk: two of the largest chunks.
    public static func reserve(for chunks: [ChunkRecord]) -> Int64 {
        2 * (chunks.map(\.size).max() ?? 0)
    }

    /// On a full disk: the oldest chunk not pinned, to make room for the
    /// next one. Unlike the rules above this may be the newest chunk, when
    /// it is the only one left to delete: recording goes on either way, and
    /// without room it cannot.
    public static func roomOnFullDisk(chunks: [ChunkRecord], pinned: Set<String>) -> RetentionDeletion? {
        chunks.sorted(by: ChunkRecord.recordedBefore).first { !pinned.contains($0.file) }
            .map { RetentionDeletion(chunk: $0, reason: .diskFull) }
    }
}
