import XCTest
import GLibSupport
import RecorderCore
import Storage
import RecorderTestSupport

/// `allspark-recorder upload` against the test server: only chunk files
/// inside the storage folder ever leave the box, a damaged index does
/// not hide the chunks on disk, and the service's retention in another
/// process leaves what it is sending alone.
final class UploadCommandStorageTests: XCTestCase {
    static var clip: Data!
    /// Chunk names carry their start in epoch ms.
    let t0: Int64 = 1_700_000_000_000

    override class func setUp() {
        super.setUp()
        let scratch = TemporaryDirectory()
        let frames = (0..<15).map { RawImage(width: 64, height: 64, luma: UInt8(30 + 10 * $0)) }
        do {
            try writeClip(frames, to: scratch.file("clip.mp4"))
            clip = try Data(contentsOf: scratch.file("clip.mp4"))
        } catch {
            XCTFail("cannot build the test clip: \(error)")
        }
    }

    func upload(_ storage: URL, to server: AllSparkTestServer) throws -> (status: Int32, output: String) {
        try runWhileServing(recorderExecutable, ["upload", "--config", repoPath("config/demo.toml"),
                                                 "--set", "recording.storage_dir=\(storage.path)",
                                                 // ws:// at once: without a scheme wss is tried first, and a plain server
                                                 // leaves a TLS hello unanswered until the 5 s handshake deadline.
                                                 "--set", "server.host=ws://\(server.address)",
                                                 "--from", "\(t0 / 1000 - 60)", "--to", "\(t0 / 1000 + 60)",
                                                 "--timeout", "20"], timeout: 40)
    }

    func record(_ file: String, start: Double, seconds: Double = 0.5, size: Int) -> String {
        #"{"file":"\#(file)","start":\#(start),"end":\#(start + seconds),"size":\#(size),"format":"mp4"}"#
    }

    func testNothingOutsideTheStorageFolderIsUploaded() throws {
        let root = TemporaryDirectory()
        let storage = root.url.appendingPathComponent("storage"), outside = root.url.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let passwd = Data("root:x:0:0:root:/root:/bin/bash\n".utf8)
        try passwd.write(to: outside.appendingPathComponent("passwd"))
        let holiday = Self.clip + Data("the user's own video".utf8)
        try holiday.write(to: outside.appendingPathComponent("holiday.mp4"))

        let chunk = ChunkName.final(startMs: t0, format: .mp4)
        try Self.clip.write(to: storage.appendingPathComponent(chunk))
        let linked = ChunkName.final(startMs: t0 + 1000, format: .mp4)
        try FileManager.default.createSymbolicLink(atPath: storage.appendingPathComponent(linked).path,
                                                   withDestinationPath: outside.appendingPathComponent("holiday.mp4").path)
        let start = Double(t0) / 1000
        let index = "[" + [record(chunk, start: start, size: Self.clip.count),
                           record(linked, start: start + 1, size: holiday.count),
                           record("../outside/passwd", start: start + 2, size: passwd.count),
                           record("../outside/holiday.mp4", start: start + 3, size: holiday.count)].joined(separator: ",") + "]"
        try Data(index.utf8).write(to: storage.appendingPathComponent(ChunkCatalog.indexFileName))

        let server = try AllSparkTestServer()
        let (_, output) = try upload(storage, to: server)
        XCTAssertEqual(server.uploads.map(\.filename), [chunk], output)
        XCTAssertEqual(server.uploadedData(chunk), Self.clip)
        XCTAssertFalse(server.texts.contains { $0.contains("passwd") || $0.contains("holiday") || $0.contains(linked) }, "\(server.texts)")
        XCTAssertEqual(try Data(contentsOf: outside.appendingPathComponent("passwd")), passwd)
        XCTAssertEqual(try Data(contentsOf: outside.appendingPathComponent("holiday.mp4")), holiday)
        XCTAssertNotNil(try? FileManager.default.destinationOfSymbolicLink(atPath: storage.appendingPathComponent(linked).path),
                        "the link itself is left alone")
        XCTAssertTrue(output.contains("../outside/passwd"), "the hostile entry is logged: \(output)")
        XCTAssertTrue(output.contains("symbolic link"), "the link is logged: \(output)")
    }

    func testADamagedIndexIsRebuiltFromTheChunkFiles() throws {
        let storage = TemporaryDirectory()
        let names = [ChunkName.final(startMs: t0, format: .mp4), ChunkName.final(startMs: t0 + 500, format: .mp4)]
        for name in names { try Self.clip.write(to: storage.file(name)) }
        try Data("[{\"file\":".utf8).write(to: storage.file(ChunkCatalog.indexFileName))   // cut off mid-write

        let server = try AllSparkTestServer()
        let (status, output) = try upload(storage.url, to: server)
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("rebuilding it from the files"), output)
        XCTAssertFalse(output.contains("no chunk"), output)
        XCTAssertEqual(server.uploads.map(\.filename), names, output)
    }

    func testRetentionInAnotherProcessKeepsWhatTheUploadIsSending() throws {
        let storage = TemporaryDirectory()
        // The service's catalog, in this process: two chunks in the range, a newer one outside it.
        let service = try ChunkCatalog(directory: storage.url)
        let starts = [t0, t0 + 500, t0 + 3_600_000]
        let chunks = try starts.map { ms -> ChunkRecord in
            let name = ChunkName.final(startMs: ms, format: .mp4)
            try Self.clip.write(to: storage.file(name))
            return ChunkRecord(file: name, start: Double(ms) / 1000, end: Double(ms) / 1000 + 0.5, size: Int64(Self.clip.count), format: .mp4)
        }
        chunks.forEach(service.add)
        let retention = StorageGuard(catalog: service, freeSpace: { nil })

        let server = try AllSparkTestServer()
        server.misbehaviour = .neverAnswerFiles    // the upload stays in progress
        var sending: [String] = []
        server.onUploadMetadata = { sending.append($0) }
        let upload = Process()
        upload.executableURL = URL(fileURLWithPath: recorderExecutable)
        upload.arguments = ["upload", "--config", repoPath("config/demo.toml"),
                            "--set", "recording.storage_dir=\(storage.path)", "--set", "server.host=ws://\(server.address)",
                            "--from", "\(t0 / 1000 - 60)", "--to", "\(t0 / 1000 + 60)", "--timeout", "60"]
        let scratch = TemporaryDirectory()
        let log = scratch.file("upload.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        upload.standardOutput = output
        upload.standardError = output
        try upload.run()
        defer { if upload.isRunning { kill(upload.processIdentifier, SIGKILL); upload.waitUntilExit() } }
        XCTAssertTrue(waitOnMainLoop(20) { !sending.isEmpty }, "the upload started: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")

        XCTAssertEqual(retention.enforce(maxBytes: 0), [], "both chunks are pinned by the upload, the third is the newest")
        XCTAssertEqual(service.all.map(\.file), chunks.map(\.file))

        kill(upload.processIdentifier, SIGKILL)   // dies without unpinning
        upload.waitUntilExit()
        XCTAssertEqual(retention.enforce(maxBytes: 0).map(\.chunk.file), chunks.prefix(2).map(\.file), "a dead process's pins hold nothing")
        let pins = (try? FileManager.default.contentsOfDirectory(atPath: storage.file(StorageLayout.pinsFolderName).path)) ?? []
        XCTAssertEqual(pins, [], "its pins were cleared")
    }
}
