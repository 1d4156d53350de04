import XCTest
@testable import Storage

final class ChunkCatalogTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cat-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    /// Writes a file of `size` bytes and returns its record.
    func chunk(_ startMs: Int64, seconds: Double = 2, size: Int = 100, format: VideoFormat = .mp4) throws -> ChunkRecord {
        let name = ChunkName.final(startMs: startMs, format: format)
        try Data(count: size).write(to: folder.appendingPathComponent(name))
        let start = Double(startMs) / 1000
        return ChunkRecord(file: name, start: start, end: start + seconds, size: Int64(size), format: format)
    }

    func testChunkNames() {
        XCTAssertEqual(ChunkName.final(startMs: 1_700_000_000_123, format: .mov), "chunk_1700000000123.mov")
        XCTAssertEqual(ChunkName.partial(startMs: 5, format: .mp4), ".chunk_5.mp4.partial")
        let parsed = ChunkName.parse("chunk_1700000000123.mov")
        XCTAssertEqual(parsed?.startMs, 1_700_000_000_123)
        XCTAssertEqual(parsed?.format, .mov)
        XCTAssertEqual(parsed?.isPartial, false)
        XCTAssertEqual(ChunkName.parse(".chunk_7.mp4.partial")?.isPartial, true)
        XCTAssertEqual(ChunkName.finalName(forPartial: ".chunk_7.mp4.partial"), "chunk_7.mp4")
        for bad in ["chunk_.mp4", "chunk_12.avi", "clip_12.mp4", "chunk_-4.mp4", "chunk_12", "catalog.json", "chunk_1x.mp4"] {
            XCTAssertNil(ChunkName.parse(bad), bad)
        }
    }

    func testTimeRangeQueriesUseHalfOpenOverlap() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let a = try chunk(10_000), b = try chunk(12_000), c = try chunk(14_000)
        [c, a, b].forEach(catalog.add)
        XCTAssertEqual(catalog.all.map(\.file), [a, b, c].map(\.file), "kept oldest first")
        XCTAssertEqual(catalog.chunks(from: 11, to: 13).map(\.file), [a.file, b.file])
        XCTAssertEqual(catalog.chunks(from: 12, to: 14).map(\.file), [b.file], "[start, end): touching ends do not overlap")
        XCTAssertEqual(catalog.chunks(from: 16, to: 20), [])
        XCTAssertEqual(catalog.chunks(from: 0, to: 10), [])
        XCTAssertEqual(catalog.chunks(from: 15.999, to: 100).map(\.file), [c.file])
        XCTAssertEqual(catalog.totalBytes, 300)
    }

    func testIndexPersistsAcrossInstances() throws {
        let first = try ChunkCatalog(directory: folder)
        let a = try chunk(1_000, seconds: 1.5)
        first.add(a)
        let second = try ChunkCatalog(directory: folder)
        var recorded = a
        recorded.sequence = 1   // the first the catalog took
        XCTAssertEqual(second.all, [recorded])
        XCTAssertEqual(try ChunkCatalog.readIndex(of: folder), [recorded])
    }

    func testReconcileDropsMissingIndexesUnknownRepairsAndRemoves() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let kept = try chunk(1_000)
        let gone = try chunk(3_000)
        catalog.add(kept)
        catalog.add(gone)
        try FileManager.default.removeItem(at: folder.appendingPathComponent(gone.file))
        // A chunk file the index does not know, a repairable partial, a broken partial, a broken final file.
        try Data(count: 50).write(to: folder.appendingPathComponent("chunk_5000.mov"))
        try Data(count: 70).write(to: folder.appendingPathComponent(".chunk_7000.mp4.partial"))
        try Data(count: 9).write(to: folder.appendingPathComponent(".chunk_9000.mp4.partial"))
        try Data(count: 9).write(to: folder.appendingPathComponent("chunk_11000.mp4"))
        try Data(count: 9).write(to: folder.appendingPathComponent("notes.txt"))
        let durations: [String: Double] = ["chunk_5000.mov": 1.5, ".chunk_7000.mp4.partial": 1.25]

        let reopened = try ChunkCatalog(directory: folder)
        let report = reopened.reconcile { durations[$0.name] }

        XCTAssertEqual(report.dropped, [gone.file])
        XCTAssertEqual(report.indexed, ["chunk_5000.mov"])
        XCTAssertEqual(report.repaired, ["chunk_7000.mp4"])
        XCTAssertEqual(Set(report.removed), [".chunk_9000.mp4.partial", "chunk_11000.mp4"])
        XCTAssertEqual(reopened.all.map(\.file), [kept.file, "chunk_5000.mov", "chunk_7000.mp4"])
        let repaired = reopened.all.last!
        XCTAssertEqual(repaired.start, 7.0)
        XCTAssertEqual(repaired.end, 8.25)
        XCTAssertEqual(repaired.size, 70)
        XCTAssertEqual(repaired.format, .mp4)
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        XCTAssertEqual(names, [kept.file, "chunk_5000.mov", "chunk_7000.mp4", "notes.txt", ChunkCatalog.indexFileName])
        XCTAssertEqual(try ChunkCatalog.readIndex(of: folder).map(\.file), reopened.all.map(\.file), "the repaired index is saved")
    }

    func testRetentionDeletesOldestFirstAndSkipsPins() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let guarded = StorageGuard(catalog: catalog, freeSpace: { nil })
        let chunks = try (0..<5).map { try chunk(Int64($0) * 2000, size: 100) }
        chunks.forEach(catalog.add)
        catalog.pin(chunks[0].file)
        catalog.pin(chunks[0].file)
        catalog.unpin(chunks[0].file)      // still pinned once
        let deleted = guarded.enforce(maxBytes: 250).map(\.chunk)
        XCTAssertEqual(deleted.map(\.file), [chunks[1].file, chunks[2].file, chunks[3].file])
        XCTAssertEqual(catalog.all.map(\.file), [chunks[0].file, chunks[4].file])
        for gone in deleted { XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent(gone.file).path)) }
        catalog.unpin(chunks[0].file)
        XCTAssertFalse(catalog.isPinned(chunks[0].file))
        XCTAssertEqual(guarded.enforce(maxBytes: 150).map(\.chunk.file), [chunks[0].file])
        XCTAssertEqual(guarded.enforce(maxBytes: 150), [], "under the limit: nothing more")
        XCTAssertEqual(guarded.enforce(maxBytes: 0), [], "never the newest")
    }

    func testFullDiskDeletesTheOldestUnpinned() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let guarded = StorageGuard(catalog: catalog, freeSpace: { nil })
        let a = try chunk(1000), b = try chunk(3000)
        catalog.add(a); catalog.add(b)
        catalog.pin(a.file)
        XCTAssertEqual(guarded.diskFull("test", maxBytes: .max).map(\.chunk.file), [b.file])
        XCTAssertEqual(guarded.diskFull("test", maxBytes: .max), [], "only a pinned chunk is left")
        XCTAssertEqual(catalog.all.map(\.file), [a.file])
    }

    func testCorruptIndexIsRebuiltFromFiles() throws {
        let a = try chunk(1000)
        try Data("{not json".utf8).write(to: folder.appendingPathComponent(ChunkCatalog.indexFileName))
        let catalog = try ChunkCatalog(directory: folder)
        XCTAssertEqual(catalog.all, [])
        catalog.reconcile { _ in 2 }
        XCTAssertEqual(catalog.all.map(\.file), [a.file])
    }
}

/// The wall clock can be set back while recording: the catalog keeps the
/// order chunks were recorded in, keeps real overlaps, and retention goes by
/// recording order, not by the times in the names.
extension ChunkCatalogTests {
    /// Recorded in this order: two chunks, the clock set back an hour, two more (their names sort first).
    func recordedAcrossAStepBack(_ catalog: ChunkCatalog) throws -> [ChunkRecord] {
        let hour: Int64 = 3_600_000
        let chunks = [try chunk(10 * hour), try chunk(10 * hour + 2000),
                      try chunk(9 * hour + 4000), try chunk(9 * hour + 6000)]
        chunks.forEach(catalog.add)
        return chunks
    }

    func testRetentionDeletesInRecordingOrderAndNeverTheNewestWhoseNameSortsFirst() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let chunks = try recordedAcrossAStepBack(catalog)
        XCTAssertEqual(catalog.all.compactMap(\.sequence).sorted(), [1, 2, 3, 4])
        let guarded = StorageGuard(catalog: catalog, freeSpace: { nil })
        XCTAssertEqual(guarded.enforce(maxBytes: 250).map(\.chunk.file), [chunks[0].file, chunks[1].file],
                       "the two recorded first go, though two later ones carry earlier times")
        XCTAssertEqual(guarded.enforce(maxBytes: 0).map(\.chunk.file), [chunks[2].file])
        XCTAssertEqual(catalog.all.map(\.file), [chunks[3].file], "the newest recorded is kept")
        XCTAssertEqual(guarded.diskFull("test", maxBytes: .max).map(\.chunk.file), [chunks[3].file])
    }

    func testTheOrderOfRecordingSurvivesARestart() throws {
        let chunks = try recordedAcrossAStepBack(try ChunkCatalog(directory: folder))
        let reopened = try ChunkCatalog(directory: folder)
        reopened.reconcile { _ in 2 }
        XCTAssertEqual(reopened.all.sorted(by: ChunkRecord.recordedBefore).map(\.file), chunks.map(\.file))
        let next = try chunk(9 * 3_600_000 + 8000)
        reopened.add(next)
        XCTAssertEqual(reopened.all.first { $0.file == next.file }?.sequence, 5, "a chunk added after a restart is the newest")
    }

    func testOverlappingSpansAfterAStepBackAreKeptAndListed() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let first = try chunk(100_000, seconds: 10)
        let afterStep = try chunk(104_000, seconds: 10)   // the clock went back 6 s: the spans overlap by 6 s
        catalog.add(first); catalog.add(afterStep)
        catalog.reconcile { _ in 10 }
        XCTAssertEqual(catalog.all.map(\.start), [100, 104], "neither span is cut")
        XCTAssertEqual(catalog.all.map(\.end), [110, 114])
        XCTAssertEqual(catalog.chunks(from: 105, to: 106).map(\.file), [first.file, afterStep.file], "both are listed for the overlap")
    }

    func testARoundingOverlapOfAChunkFoundOnDiskIsStillSeparated() throws {
        let catalog = try ChunkCatalog(directory: folder)
        let known = try chunk(100_000, seconds: 2.0004)
        catalog.add(known)
        _ = try chunk(102_000)   // found on disk, its start truncated to the millisecond
        catalog.reconcile { _ in 2 }
        XCTAssertEqual(catalog.all.map(\.start), [100, known.end], "the chunk found on disk gives way")
    }

    func testWhetherTheClockWasSynchronisedIsKeptAndOlderIndexesStillRead() throws {
        let catalog = try ChunkCatalog(directory: folder)
        var early = try chunk(1000)
        early.clockSynchronized = false
        var later = try chunk(3000)
        later.clockSynchronized = true
        catalog.add(early); catalog.add(later)
        XCTAssertEqual(try ChunkCatalog.readIndex(of: folder).map(\.clockSynchronized), [false, true])
        // An index written before these fields existed.
        let old = #"[{"end":7,"file":"chunk_5000.mp4","format":"mp4","size":100,"start":5}]"#
        let other = folder.appendingPathComponent("old")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data(old.utf8).write(to: other.appendingPathComponent(ChunkCatalog.indexFileName))
        let read = try ChunkCatalog.readIndex(of: other)
        XCTAssertEqual(read.map(\.file), ["chunk_5000.mp4"])
        XCTAssertNil(read[0].clockSynchronized)
        XCTAssertNil(read[0].sequence)
    }
}
