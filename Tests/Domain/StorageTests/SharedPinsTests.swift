import XCTest
@testable import Storage

/// Pins every process on the box sees: another process's pins keep chunks
/// from this process's retention, until it unpins or dies.
final class SharedPinsTests: XCTestCase {
    var root: URL!
    var folder: URL!
    let fm = FileManager.default

    override func setUpWithError() throws {
        root = fm.temporaryDirectory.appendingPathComponent("pins-\(UUID().uuidString.prefix(8))")
        folder = root.appendingPathComponent("storage")
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? fm.removeItem(at: root) }

    /// Four chunks on disk and in a catalog, oldest first.
    func catalogWithChunks(_ count: Int = 4) throws -> (ChunkCatalog, [ChunkRecord]) {
        let catalog = try ChunkCatalog(directory: folder)
        let chunks = try (0..<count).map { i -> ChunkRecord in
            let name = ChunkName.final(startMs: Int64(1000 + 2000 * i), format: .mp4)
            try Data(count: 100).write(to: folder.appendingPathComponent(name))
            return ChunkRecord(file: name, start: Double(1 + 2 * i), end: Double(3 + 2 * i), size: 100, format: .mp4)
        }
        chunks.forEach(catalog.add)
        return (catalog, chunks)
    }

    /// Retention over a limit of nothing, the free space not in play.
    func retention(_ catalog: ChunkCatalog) -> [String] {
        StorageGuard(catalog: catalog, freeSpace: { nil }).enforce(maxBytes: 0).map(\.chunk.file)
    }

    var pinsFolder: URL { folder.appendingPathComponent(StorageLayout.pinsFolderName) }
    func pinFiles() -> [String] { ((try? fm.contentsOfDirectory(atPath: pinsFolder.path)) ?? []).sorted() }

    // MARK: Another process

    /// The built `storage-pin-holder` (next to the test bundle).
    var pinHolder: String {
        var repository = URL(fileURLWithPath: #filePath)
        while repository.path != "/", !fm.fileExists(atPath: repository.appendingPathComponent("Package.swift").path) {
            repository.deleteLastPathComponent()
        }
        let bundle = Bundle.main.bundleURL
        for candidate in [bundle.appendingPathComponent("storage-pin-holder"),
                          bundle.deletingLastPathComponent().appendingPathComponent("storage-pin-holder"),
                          repository.appendingPathComponent(".build/debug/storage-pin-holder")]
        where fm.isExecutableFile(atPath: candidate.path) {
            return candidate.path
        }
        return repository.appendingPathComponent(".build/debug/storage-pin-holder").path
    }

    final class Holder {
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        var said = ""

        init(executable: String, storage: URL, files: [String]) throws {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [storage.path] + files
            process.standardInput = input
            process.standardOutput = output
            try process.run()
        }

        /// Reads the holder's output until it says `word` (or ends).
        func waitToSay(_ word: String) -> Bool {
            while !said.contains(word + "\n") {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { return false }
                said += String(decoding: data, as: UTF8.self)
            }
            return true
        }

        /// Ends it cleanly: it unpins and exits.
        func finish() throws {
            try input.fileHandleForWriting.close()
            _ = waitToSay("unpinned")
            process.waitUntilExit()
        }

        /// Ends it as a crash would: no chance to unpin.
        func kill() {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    func testAnotherProcessesPinsKeepChunksUntilItUnpins() throws {
        let (catalog, chunks) = try catalogWithChunks()
        let holder = try Holder(executable: pinHolder, storage: folder, files: [chunks[1].file])
        XCTAssertTrue(holder.waitToSay("pinned"), holder.said)
        XCTAssertTrue(catalog.isPinned(chunks[1].file), "this process sees the other's pin")
        XCTAssertFalse(catalog.isPinned(chunks[0].file))

        XCTAssertEqual(retention(catalog), [chunks[0].file, chunks[2].file], "the pinned chunk and the newest are kept")
        XCTAssertEqual(catalog.all.map(\.file), [chunks[1].file, chunks[3].file])
        XCTAssertTrue(fm.fileExists(atPath: folder.appendingPathComponent(chunks[1].file).path))

        try holder.finish()
        XCTAssertEqual(holder.process.terminationStatus, 0, holder.said)
        XCTAssertEqual(pinFiles(), [], "a clean exit leaves no pin behind")
        XCTAssertFalse(catalog.isPinned(chunks[1].file))
        XCTAssertEqual(retention(catalog), [chunks[1].file], "unpinned: deletable")
    }

    func testPinsOfAKilledProcessAreIgnoredAndCleared() throws {
        let (catalog, chunks) = try catalogWithChunks()
        let holder = try Holder(executable: pinHolder, storage: folder, files: [chunks[0].file, chunks[1].file])
        XCTAssertTrue(holder.waitToSay("pinned"), holder.said)
        XCTAssertEqual(retention(catalog), [chunks[2].file])
        holder.kill()
        XCTAssertEqual(pinFiles().count, 3, "a lock and two pins left behind: \(pinFiles())")
        XCTAssertFalse(catalog.isPinned(chunks[0].file), "a dead process's pins count for nothing")
        XCTAssertEqual(retention(catalog), [chunks[0].file, chunks[1].file])
        XCTAssertEqual(pinFiles(), [], "retention removed the stale pins")
        XCTAssertEqual(catalog.all.map(\.file), [chunks[3].file])
    }

    // MARK: One process

    func testPinsOfAnotherCatalogInThisProcessCount() throws {
        let (catalog, chunks) = try catalogWithChunks()
        let uploader = try ChunkCatalog(directory: folder)
        uploader.pin(chunks[0].file)
        uploader.pin(chunks[0].file)
        uploader.unpin(chunks[0].file)   // still pinned once
        XCTAssertEqual(pinFiles().count, 2, "\(pinFiles())")
        XCTAssertEqual(retention(catalog), [chunks[1].file, chunks[2].file])
        uploader.unpin(chunks[0].file)
        XCTAssertEqual(pinFiles(), [], "the last unpin removes the entry and the lock")
        XCTAssertEqual(retention(catalog), [chunks[0].file])
    }

    func testRepairLeavesThePinsAlone() throws {
        let (catalog, chunks) = try catalogWithChunks()
        catalog.pin(chunks[0].file)
        let before = pinFiles()
        XCTAssertEqual(before.count, 2)
        let report = try ChunkCatalog(directory: folder).reconcile { _ in 2 }
        XCTAssertEqual(report, .init(), "nothing indexed, dropped, repaired or removed")
        XCTAssertEqual(pinFiles(), before)
        XCTAssertTrue(catalog.isPinned(chunks[0].file))
    }

    func testAPinsFolderThatIsALinkIsNeverUsed() throws {
        let outside = root.appendingPathComponent("outside")
        try fm.createDirectory(at: outside, withIntermediateDirectories: true)
        try fm.createSymbolicLink(at: pinsFolder, withDestinationURL: outside)
        let (catalog, chunks) = try catalogWithChunks()
        catalog.pin(chunks[0].file)
        XCTAssertEqual(try fm.contentsOfDirectory(atPath: outside.path), [], "nothing written through the link")
        XCTAssertEqual(retention(catalog), [chunks[1].file, chunks[2].file], "the pin holds in this process all the same")
        XCTAssertNotNil(try? fm.destinationOfSymbolicLink(atPath: pinsFolder.path), "the link is left alone")
    }

    func testStrangeEntriesInThePinsFolderAreLeftAlone() throws {
        let (catalog, chunks) = try catalogWithChunks()
        try fm.createDirectory(at: pinsFolder, withIntermediateDirectories: true)
        let strange = ["notes.txt", "1-abc.notes", "x-y.\(chunks[0].file)", ".hidden"]
        for name in strange { try Data("x".utf8).write(to: pinsFolder.appendingPathComponent(name)) }
        // A pin whose owner's "lock" is a folder: not judged, honoured.
        try fm.createDirectory(at: pinsFolder.appendingPathComponent("7-odd.lock"), withIntermediateDirectories: false)
        try Data().write(to: pinsFolder.appendingPathComponent("7-odd.\(chunks[1].file)"))
        XCTAssertEqual(retention(catalog), [chunks[0].file, chunks[2].file])
        XCTAssertEqual(pinFiles(), (strange + ["7-odd.lock", "7-odd.\(chunks[1].file)"]).sorted())
    }
}
