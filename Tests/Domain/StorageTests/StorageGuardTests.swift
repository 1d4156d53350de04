import XCTest
import Storage

/// The guard applies the rules to real files, with the free space injected.
final class StorageGuardTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("guard-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    func catalog(sizes: [Int]) throws -> (ChunkCatalog, [ChunkRecord]) {
        let catalog = try ChunkCatalog(directory: folder)
        let chunks = try sizes.enumerated().map { i, size -> ChunkRecord in
            let name = ChunkName.final(startMs: Int64(1000 + 2000 * i), format: .mp4)
            try Data(count: size).write(to: folder.appendingPathComponent(name))
            return ChunkRecord(file: name, start: Double(1 + 2 * i), end: Double(3 + 2 * i), size: Int64(size), format: .mp4)
        }
        chunks.forEach(catalog.add)
        return (catalog, chunks)
    }

    func onDisk() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("chunk_") }.sorted()
    }

    func testFreeSpaceReserveOnADiskThatFreesWhatIsDeleted() throws {
        let (catalog, chunks) = try catalog(sizes: [100, 100, 300, 100, 100])
        // A 1000-byte disk holding only these chunks: 300 free; reserve 2 × 300.
        let folder: URL = self.folder
        let disk: StorageGuard.FreeSpace = {
            let used = (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?
                .filter { $0.hasPrefix("chunk_") }
                .compactMap { try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($0).path)[.size] as? Int64 }
                .reduce(0, +) ?? 0
            return 1000 - used
        }
        let deleted = StorageGuard(catalog: catalog, freeSpace: disk).enforce(maxBytes: .max)
        XCTAssertEqual(deleted.map(\.chunk.file), [chunks[0].file, chunks[1].file, chunks[2].file])
        XCTAssertEqual(deleted.map(\.reason), Array(repeating: .lowFreeSpace(reserve: 600), count: 3))
        XCTAssertEqual(try onDisk(), [chunks[3].file, chunks[4].file])
        XCTAssertEqual(catalog.all.map(\.file), [chunks[3].file, chunks[4].file])
    }

    func testFreeSpaceIsReadAgainWhenDeletingDidNotFreeIt() throws {
        // Something else keeps the disk full: deleting frees nothing, so all but the newest go.
        let (catalog, chunks) = try catalog(sizes: [10, 10, 10, 10])
        let deleted = StorageGuard(catalog: catalog, freeSpace: { 5 }).enforce(maxBytes: .max)
        XCTAssertEqual(deleted.map(\.chunk.file), chunks.dropLast().map(\.file))
        XCTAssertEqual(catalog.all.map(\.file), [chunks[3].file], "never the newest")
    }

    func testPlentyOfRoomDeletesNothing() throws {
        let (catalog, chunks) = try catalog(sizes: [10, 10, 10])
        XCTAssertEqual(StorageGuard(catalog: catalog, freeSpace: { 1 << 40 }).enforce(maxBytes: 30), [])
        XCTAssertEqual(try onDisk(), chunks.map(\.file))
        XCTAssertNotNil(StorageGuard.freeBytes(at: folder), "the real free space can be read")
    }

    func testFullDiskMakesRoomThenAppliesTheRules() throws {
        let (catalog, chunks) = try catalog(sizes: [10, 10, 10, 10])
        catalog.pin(chunks[0].file)
        let deleted = StorageGuard(catalog: catalog, freeSpace: { nil }).diskFull("No space left on device", maxBytes: 20)
        XCTAssertEqual(deleted.map(\.chunk.file), [chunks[1].file, chunks[2].file])
        XCTAssertEqual(deleted.map(\.reason), [.diskFull, .overSizeLimit(maxBytes: 20)])
        XCTAssertEqual(try onDisk(), [chunks[0].file, chunks[3].file])
    }
}
