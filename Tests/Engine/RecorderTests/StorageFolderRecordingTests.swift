import XCTest
import RecorderCore
import RecorderTestSupport

/// The real recorder in a storage folder booby-trapped with links to files
/// outside it: they are never indexed, repaired, written through or deleted.
final class StorageFolderRecordingTests: XCTestCase {
    func testLinksInTheStorageFolderAreNeverFollowed() throws {
        let root = TemporaryDirectory()
        let storage = root.url.appendingPathComponent("storage"), outside = root.url.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let decoy = outside.appendingPathComponent("thesis.mp4")
        let original = Data("a user's file that must survive".utf8)
        try original.write(to: decoy)
        func plant(_ name: String) throws {
            try FileManager.default.createSymbolicLink(atPath: storage.appendingPathComponent(name).path, withDestinationPath: decoy.path)
        }
        // Links under finished and unfinished chunk names from an earlier "run".
        try plant("chunk_1600000000000.mp4")
        try plant(".chunk_1600000002000.mp4.partial")
        // Links under the names the next chunks will most likely take: 3 of every 4 milliseconds of the next 20 s
        // (the recorder tries a few milliseconds later when a name is taken).
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for ms in now..<(now + 20_000) where ms % 4 != 3 { try plant(ChunkName.partial(startMs: ms, format: .mp4)) }

        let (status, log) = try runTool(recorderExecutable, [
            "run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
            "--set", "recording.chunk_duration_ms=1000", "--set", "privacy.face_blur=false",
            "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240", "--duration", "3", "--log-level", "notice",
        ])
        XCTAssertEqual(status, 0, String(log.suffix(3000)))
        XCTAssertEqual(try Data(contentsOf: decoy), original, "nothing was written through a link")
        let names = try FileManager.default.contentsOfDirectory(atPath: storage.path)
        XCTAssertTrue(names.contains("chunk_1600000000000.mp4") && names.contains(".chunk_1600000002000.mp4.partial"), "links left alone")
        let index = try ChunkCatalog.readIndex(of: storage)
        XCTAssertGreaterThanOrEqual(index.count, 2, String(log.suffix(3000)))
        XCTAssertFalse(index.contains { $0.file == "chunk_1600000000000.mp4" || $0.file == "chunk_1600000002000.mp4" }, "links are not chunks")
        for record in index {
            let attributes = try FileManager.default.attributesOfItem(atPath: storage.appendingPathComponent(record.file).path)
            XCTAssertEqual(attributes[.type] as? FileAttributeType, .typeRegular, record.file)
            XCTAssertNotNil(try discover(storage.appendingPathComponent(record.file)).duration, record.file)
        }
    }
}
