import XCTest
import StorageTestSupport
@testable import Storage

/// Nothing outside the storage folder is ever read, written or deleted;
/// only plain files with chunk names are indexed, repaired or deleted.
final class StorageFolderTests: FolderWithOutsideTestCase {
    func writeIndex(_ json: String) throws {
        try Data(json.utf8).write(to: folder.appendingPathComponent(ChunkCatalog.indexFileName))
    }

    func entry(_ file: String, start: Double, end: Double, size: Int = 10) -> String {
        #"{"file":"\#(file)","start":\#(start),"end":\#(end),"size":\#(size),"format":"mp4"}"#
    }

    func testIndexEntriesOutsideTheFolderAreIgnored() throws {
        let passwd = try decoy("passwd")
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_1000.mp4"))
        try writeIndex("[" + [entry("chunk_1000.mp4", start: 1, end: 2),
                              entry("../outside/passwd", start: 2, end: 3),
                              entry(passwd.url.path, start: 3, end: 4),
                              entry("chunk_5000.mp4/../../outside/passwd", start: 5, end: 6),
                              entry("chunk_1000.mp4", start: 7, end: 6)].joined(separator: ",") + "]")
        let catalog = try ChunkCatalog(directory: folder)
        XCTAssertEqual(catalog.all.map(\.file), ["chunk_1000.mp4"])
        XCTAssertEqual(try ChunkCatalog.readIndex(of: folder).map(\.file), ["chunk_1000.mp4"])
        let hostile = ChunkRecord(file: "../outside/passwd", start: 2, end: 3, size: 10, format: .mp4)
        XCTAssertThrowsError(try catalog.open(hostile))
        // A newer chunk, since retention never deletes the newest.
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_9000.mp4"))
        catalog.add(ChunkRecord(file: "chunk_9000.mp4", start: 9, end: 10, size: 10, format: .mp4))
        XCTAssertEqual(StorageGuard(catalog: catalog, freeSpace: { nil }).enforce(maxBytes: 0).map(\.chunk.file), ["chunk_1000.mp4"])
        assertIntact(passwd)
    }

    func testLinksWithChunkNamesAreNeitherIndexedRepairedOpenedNorDeleted() throws {
        let clip = try decoy("holiday.mp4", "the user's holiday video")
        let other = try decoy("other.mp4", "another user file")
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_1000.mp4"))
        try link("chunk_2000.mp4", to: clip.url)
        try link(".chunk_3000.mp4.partial", to: other.url)
        try link("chunk_4000.mp4", to: URL(fileURLWithPath: "/nonexistent/file.mp4"))
        try fm.createDirectory(at: folder.appendingPathComponent("chunk_5000.mp4"), withIntermediateDirectories: false)
        XCTAssertEqual(mkfifo(folder.appendingPathComponent("chunk_6000.mp4").path, 0o644), 0)
        // The index already lists the linked name, as if the file had been swapped for a link.
        try writeIndex("[" + entry("chunk_2000.mp4", start: 2, end: 3, size: 24) + "]")

        let catalog = try ChunkCatalog(directory: folder)
        XCTAssertThrowsError(try catalog.open(catalog.all[0]), "a link is never opened") { error in
            XCTAssertTrue("\(error)".contains("symbolic link"), "\(error)")
        }
        var probed: [String] = []
        let report = catalog.reconcile { probed.append($0.name); return 2 }   // "playable", whatever it is
        XCTAssertEqual(probed, ["chunk_1000.mp4"], "only plain files are probed")
        XCTAssertEqual(report.indexed, ["chunk_1000.mp4"])
        XCTAssertEqual(report.repaired, [])
        XCTAssertEqual(report.removed, [])
        XCTAssertEqual(report.dropped, ["chunk_2000.mp4"])
        XCTAssertEqual(Set(report.ignored), ["chunk_2000.mp4", ".chunk_3000.mp4.partial", "chunk_4000.mp4", "chunk_5000.mp4", "chunk_6000.mp4"])
        XCTAssertEqual(catalog.all.map(\.file), ["chunk_1000.mp4"])

        // Unplayable as well: still left alone rather than "removed".
        let again = try ChunkCatalog(directory: folder).reconcile { _ in nil }
        XCTAssertFalse(again.removed.contains { $0 != "chunk_1000.mp4" }, "\(again.removed)")
        for name in ["chunk_2000.mp4", ".chunk_3000.mp4.partial", "chunk_4000.mp4"] { XCTAssertTrue(isLink(name), name) }
        XCTAssertFalse(fm.fileExists(atPath: folder.appendingPathComponent("chunk_3000.mp4").path), "a linked partial is not 'repaired'")
        assertIntact(clip)
        assertIntact(other)
    }

    func testRetentionNeverDeletesThroughALink() throws {
        let clip = try decoy("holiday.mp4")
        let catalog = try ChunkCatalog(directory: folder)
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_1000.mp4"))
        catalog.add(ChunkRecord(file: "chunk_1000.mp4", start: 1, end: 2, size: 10, format: .mp4))
        // Swapped for a link after it was catalogued.
        try fm.removeItem(at: folder.appendingPathComponent("chunk_1000.mp4"))
        try link("chunk_1000.mp4", to: clip.url)
        let newest = ChunkRecord(file: "chunk_9000.mp4", start: 9, end: 10, size: 10, format: .mp4)
        try Data(count: 10).write(to: folder.appendingPathComponent(newest.file))
        catalog.add(newest)
        XCTAssertEqual(StorageGuard(catalog: catalog, freeSpace: { nil }).enforce(maxBytes: 0), [], "nothing was deleted")
        XCTAssertEqual(catalog.all.map(\.file), [newest.file], "no longer a chunk")
        XCTAssertTrue(isLink("chunk_1000.mp4"))
        assertIntact(clip)
    }

    func testTemporaryFilesAreCreatedExclusivelyAndStaleOnesRemoved() throws {
        let target = try decoy("victim")
        try link(".catalog.json.tmp-AAAAAAAA", to: target.url)
        XCTAssertThrowsError(try StorageFolder.createExclusive(in: folder.path) { _ in ".catalog.json.tmp-AAAAAAAA" },
                             "an existing name (here a link) is never opened")
        assertIntact(target)

        // Left by writes interrupted by a crash.
        try Data("half".utf8).write(to: folder.appendingPathComponent(".catalog.json.tmp-x1Y2z3W4"))
        try Data("half".utf8).write(to: folder.appendingPathComponent(".server-settings.json.tmp-00000000"))
        try Data("mine".utf8).write(to: folder.appendingPathComponent(".catalog.json.tmp-notours"))
        let report = try ChunkCatalog(directory: folder).reconcile { _ in nil }
        XCTAssertEqual(report, .init())
        let names = Set(try fm.contentsOfDirectory(atPath: folder.path))
        XCTAssertEqual(names, [".catalog.json.tmp-AAAAAAAA", ".catalog.json.tmp-notours", ChunkCatalog.indexFileName],
                       "stale temporary files of ours removed; a link and a file we would not have made left alone")
        assertIntact(target)
    }

    /// A clean-up of stale temporaries running while this process writes a
    /// file atomically (a server's settings arriving as the recorder starts
    /// and reconciles its folder) must leave the writer's temporary alone:
    /// it once pulled it away and the rename failed (seen in a full test run).
    func testACleanUpNeverTakesATemporaryBeingWritten() throws {
        let storage = StorageFolder(folder)
        let data = Data(repeating: 7, count: 256 * 1024)
        let done = DispatchSemaphore(value: 0)
        var failures: [String] = []
        DispatchQueue.global().async {
            for _ in 0..<300 {
                do { try storage.writeAtomically(data, as: StorageLayout.serverSettingsFileName) } catch { failures.append("\(error)") }
            }
            done.signal()
        }
        var cleanUps = 0
        while done.wait(timeout: .now()) == .timedOut {
            _ = storage.removeStaleTemporaries(of: StorageLayout.atomicallyWritten)
            cleanUps += 1
        }
        XCTAssertEqual(failures, [], "every write completed while \(cleanUps) clean-ups ran")
        XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent(StorageLayout.serverSettingsFileName)), data)
    }

    func testNeighboursNeverOverlapAfterRepairOrIndexing() throws {
        let catalog = try ChunkCatalog(directory: folder)
        // Live chunks keep full precision; a chunk indexed from its file has its start truncated to the ms.
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_10000.mp4"))
        catalog.add(ChunkRecord(file: "chunk_10000.mp4", start: 10.0002, end: 12.0007, size: 10, format: .mp4))
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_16000.mp4"))
        catalog.add(ChunkRecord(file: "chunk_16000.mp4", start: 16.0004, end: 18, size: 10, format: .mp4))
        try Data(count: 10).write(to: folder.appendingPathComponent(".chunk_12000.mp4.partial"))   // cut by a kill
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_14000.mp4"))            // not in the index
        let durations: [String: Double] = [".chunk_12000.mp4.partial": 1.9999, "chunk_14000.mp4": 2.0009]
        let report = try ChunkCatalog(directory: folder).reconcile { durations[$0.name] }
        XCTAssertEqual(report.repaired, ["chunk_12000.mp4"])
        let index = try ChunkCatalog.readIndex(of: folder)
        XCTAssertEqual(index.map(\.file), ["chunk_10000.mp4", "chunk_12000.mp4", "chunk_14000.mp4", "chunk_16000.mp4"])
        for (a, b) in zip(index, index.dropFirst()) {
            XCTAssertLessThanOrEqual(a.end, b.start, "\(a.file) ends after \(b.file) starts")
            XCTAssertLessThan(a.start, a.end)
        }
        XCTAssertEqual(index[1].start, 12.0007, accuracy: 1e-9, "the repaired chunk starts where its neighbour ends")
        XCTAssertEqual(index[2].end, 16.0004, accuracy: 1e-9, "the indexed chunk ends where the catalogued one starts")
        XCTAssertEqual(index[0].end, 12.0007, "catalogued times are kept")
    }

    func testAReaderRebuildsADamagedIndexFromTheFilesWithoutChangingThem() throws {
        try writeIndex("{damaged")
        try Data(count: 10).write(to: folder.appendingPathComponent("chunk_1000.mp4"))
        try Data(count: 20).write(to: folder.appendingPathComponent("chunk_3000.mov"))
        try Data(count: 30).write(to: folder.appendingPathComponent(".chunk_5000.mp4.partial"))   // a running recorder's
        let catalog = try ChunkCatalog(directory: folder)
        XCTAssertFalse(catalog.indexWasReadable)
        XCTAssertEqual(catalog.indexFilesIfIndexWasUnreadable { $0.name == "chunk_1000.mp4" ? 2.0 : 1.5 }, 2)
        XCTAssertEqual(catalog.all.map(\.file), ["chunk_1000.mp4", "chunk_3000.mov"])
        XCTAssertEqual(catalog.all.map(\.end), [3.0, 4.5], "ends from the media")
        XCTAssertEqual(catalog.all.map(\.size), [10, 20])
        XCTAssertEqual(catalog.chunks(from: 0, to: 10).count, 2)
        XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent(ChunkCatalog.indexFileName)), Data("{damaged".utf8))
        XCTAssertTrue(fm.fileExists(atPath: folder.appendingPathComponent(".chunk_5000.mp4.partial").path))
    }

    func testOnlyTheOneSpellingOfAChunkNameCounts() {
        for bad in ["chunk_+5.mp4", "chunk_05.mp4", "chunk_\u{663}.mp4", "chunk_5.mp4/x", ".chunk_+5.mp4.partial",
                    "chunk_99999999999999999999.mp4", "chunk_ 5.mp4"] {
            XCTAssertNil(ChunkName.parse(bad), bad)
        }
        XCTAssertNotNil(ChunkName.parse("chunk_0.mp4"))
    }

    func testLogTextIsEscaped() {
        XCTAssertEqual(StorageFolder.printable("a\nb\u{202E}c\\"), #""a\u{A}b\u{202E}c\\""#)
        XCTAssertEqual(StorageFolder.printable(String(repeating: "x", count: 500)).count, 203)
    }
}
