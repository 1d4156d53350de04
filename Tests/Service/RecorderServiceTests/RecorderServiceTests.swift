import XCTest
import GLibSupport
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport

/// The service core as the `run` command and a console use it: one object
/// started, reloaded and stopped, with a real pipeline, real chunks and a
/// real libsoup AllSpark server on loopback.
final class RecorderServiceTests: XCTestCase {
    /// A config file of its own (so a test can rewrite it and reload), recording the test source into `storage`.
    func writeConfig(_ folder: TemporaryDirectory, storage: String, server: String, chunkMs: Int) throws -> String {
        let file = folder.file("recorder.toml")
        try """
            [device]
            name = "service-test"
            [server]
            host = "\(server)"
            discovery = false
            reconnect_delay_s = 0.3
            [recording]
            pipeline = "\(repoPath("pipelines/test.pipeline"))"
            storage_dir = "\(storage)"
            chunk_duration_ms = \(chunkMs)
            [privacy]
            face_blur = false
            [pipeline.vars]
            width = 320
            height = 240
            bitrate_kbps = 500
            framerate = 30
            """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    func testStartAnnouncesChunksReloadRetunesAndStopFinishesTheLastChunk() throws {
        // With the server's autoUpload (its default): an upload in flight at stop holds the last
        // chunkSaved back, and the stop waits for it to be sent and confirmed.
        let server = try AllSparkTestServer()
        let folder = TemporaryDirectory()
        let storage = folder.file("recordings").path
        let configFile = try writeConfig(folder, storage: storage, server: "ws://\(server.address)", chunkMs: 2000)
        let service = try RecorderService(settings: ServiceSettings(configFile: configFile))
        var states: [Recorder.State] = []
        service.onRecorderStateChange = { states.append($0) }
        try service.start()
        XCTAssertTrue(waitOnMainLoop(10) { server.texts.contains { $0.contains("chunkSaved") } },
                      "a finished chunk is announced to the server the service connected to")
        XCTAssertEqual(server.clientNames, ["service-test"])
        let chunkSaved = try XCTUnwrap(server.texts.first { $0.contains("chunkSaved") })
        let camera = (try JSONSerialization.jsonObject(with: Data(chunkSaved.utf8)) as? [String: Any])?["camera"] as? String
        XCTAssertEqual(camera, "service-test", "chunkSaved names the camera as configured, not after its pipeline file")
        XCTAssertTrue(states.contains(.recording), "state changes reach the front end: \(states)")

        // SIGHUP's path: the file changes, the next chunks follow it.
        _ = try writeConfig(folder, storage: storage, server: "ws://\(server.address)", chunkMs: 1000)
        service.reload()
        XCTAssertEqual(service.recorder?.currentTuning.chunkDurationMs, 1000)

        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(20) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)
        guard let recorder = service.recorder else { return XCTFail("the parts stay for the report") }
        XCTAssertEqual(recorder.state, .stopped)
        let chunks = recorder.catalog.all
        XCTAssertGreaterThanOrEqual(chunks.count, 2)
        let announced = server.texts.filter { $0.contains("chunkSaved") }.count
        XCTAssertEqual(announced, chunks.count, "every chunk, the last one too, was announced before the link closed")
        for chunk in chunks {
            XCTAssertNotNil(try discover(recorder.catalog.url(of: chunk)).duration, "\(chunk.file) plays")
        }
        XCTAssertTrue(service.summary.contains("\(chunks.count) chunks"), service.summary)
    }

    /// Issue 12's headline: a box an up-to-date server cannot tell from the iOS app. With the
    /// server's autoUpload and clientConfig asking for timestamps and wav audio, every chunk,
    /// timestamps file and audio file of a 3 s-chunk run arrives, byte-identical, in that order,
    /// filed under the box's name.
    func testWithAutoUploadEveryChunkAndItsCompanionsArriveByteIdentical() throws {
        let server = try AllSparkTestServer()
        server.clientConfig = #"{"type":"clientConfig","config":{"videoFormat":"mp4","videoChunkDurationMs":3000,"timestampFormat":"txt","audioFormat":"wav","poseFormat":"json","depthFormat":"png","fps":30.0}}"#
        let folder = TemporaryDirectory()
        let storage = folder.file("recordings").path
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, storage: storage, server: "ws://\(server.address)", chunkMs: 2000)))
        try service.start()
        XCTAssertTrue(waitOnMainLoop(20) { (service.recorder?.catalog.all.count ?? 0) >= 3 }, "three chunks after the server's settings")
        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(30) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)
        let catalog = try XCTUnwrap(service.recorder?.catalog)
        // Chunks started after the server's clientConfig applied (from the next chunk) have both companions.
        let withCompanions = catalog.all.filter { catalog.companions(of: $0).count == 2 }
        XCTAssertGreaterThanOrEqual(withCompanions.count, 2, "\(catalog.all.map(\.file))")
        // The stop waited for the uploads the server asked for, the last chunk's too.
        let expected = withCompanions.flatMap { [$0.file] + catalog.companions(of: $0).map(\.file) }
        XCTAssertEqual(Set(expected).subtracting(server.uploads.map(\.filename)), [], "everything arrived before the stop ended")
        for chunk in withCompanions {
            let sent = [chunk.file] + catalog.companions(of: chunk).map(\.file)
            XCTAssertEqual(sent.map { name in server.uploads.firstIndex { $0.filename == name } ?? -1 },
                           sent.map { name in server.uploads.firstIndex { $0.filename == name } ?? -1 }.sorted(), "chunk, timestamps, audio in that order: \(sent)")
            for name in sent {
                let upload = try XCTUnwrap(server.uploads.first { $0.filename == name }, "\(name) arrived")
                let local = try Data(contentsOf: URL(fileURLWithPath: storage).appendingPathComponent(name))
                let remote = try Data(contentsOf: server.uploadDirectory.url.appendingPathComponent(upload.path))
                XCTAssertEqual(remote, local, "\(name) arrived byte-identical")
                XCTAssertTrue(upload.path.contains("/service-test/"), "filed under the box's name: \(upload.path)")
            }
            XCTAssertEqual(server.uploads.first { $0.filename.hasPrefix("timestamps_") }?.mimetype, "text/plain")
            XCTAssertEqual(server.uploads.first { $0.filename.hasPrefix("audio_") }?.mimetype, "audio/wav")
        }
        XCTAssertEqual(service.recorder?.currentTuning.chunkDurationMs, 3000, "the server's chunk length")
    }

    /// A stop gives a connected server a grace (5 s) to take the uploads it asked for, then says
    /// what is still out. The grace runs on the service's clock: in virtual time here, so the
    /// test waits for the recording and the stop, not for the grace.
    func testAStopGivesAServerThatNeverAnswersItsGraceThenSaysWhatIsOut() throws {
        let server = try AllSparkTestServer()
        server.misbehaviour = [.neverAnswerFiles]   // with autoUpload: every chunk is asked for and never confirmed
        let folder = TemporaryDirectory()
        let clock = TestClock()
        let log = LogCapture()
        let configFile = try writeConfig(folder, storage: folder.file("recordings").path, server: "ws://\(server.address)", chunkMs: 1000)
        let service = try RecorderService(settings: ServiceSettings(configFile: configFile), logger: log.logger, clock: clock)
        try service.start()
        // The link's watchdog is on this clock too: it stands still while the test waits for real things.
        XCTAssertTrue(waitOnMainLoop(15) { (service.link?.outstanding.uploads ?? 0) > 0 }, "an upload the server never confirms")
        var stopped = false
        service.stop(reason: "test") { stopped = true }
        XCTAssertTrue(waitOnMainLoop(20) { service.recorder?.state == .stopped }, "the last chunk finished")
        let graceBegan = clock.now
        XCTAssertTrue(waitOnMainLoop(10, skipping: clock) { stopped }, "stopped after the grace")
        XCTAssertGreaterThanOrEqual(clock.now.timeIntervalSince(graceBegan), 4.9, "the whole grace was given")
        XCTAssertTrue(log.contains("upload(s) not done; the server must ask for them again"), log.text)
        XCTAssertFalse(log.contains("takes the server for gone"), "the server was not dropped, it was waited for")
    }

    func testAnUnusableConfigOrPipelineLeavesNothingRunning() throws {
        let folder = TemporaryDirectory()
        let broken = folder.file("broken.toml")
        try "[recording]\nchunk_duration_ms = \"ten\"\n".write(to: broken, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try RecorderService(settings: ServiceSettings(configFile: broken.path))) { error in
            XCTAssertTrue("\(error)".contains("broken.toml"), "the error names the file: \(error)")
        }

        let configFile = try writeConfig(folder, storage: folder.file("recordings").path, server: "", chunkMs: 2000)
        let service = try RecorderService(settings: ServiceSettings(
            configFile: configFile, overrides: ["recording.pipeline=\(folder.file("missing.pipeline").path)"]))
        XCTAssertThrowsError(try service.start()) { error in
            XCTAssertTrue("\(error)".contains("missing.pipeline"), "\(error)")
        }
        guard case .idle = service.state else { return XCTFail("a refused start leaves the service idle, not half running") }
        XCTAssertNil(service.recorder)
    }

    func testFaceBlurWithoutADetectorRefusesToStartAndSaysWhy() throws {
        let folder = TemporaryDirectory()
        let configFile = try writeConfig(folder, storage: folder.file("recordings").path, server: "", chunkMs: 2000)
        let service = try RecorderService(settings: ServiceSettings(configFile: configFile, overrides: [
            "privacy.face_blur=true", "privacy.model=\(folder.file("no-model.onnx").path)"]))
        XCTAssertThrowsError(try service.start()) { error in
            XCTAssertTrue("\(error)".contains("Refusing to record"), "\(error)")
        }
        XCTAssertNil(service.recorder)
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.file("recordings").path)) ?? []
        XCTAssertEqual(files.filter { $0.hasPrefix("chunk_") }, [], "nothing recorded")
    }

    func testChangeServerMovesTheLinkAnnouncesToTheNewServerAndIsKept() throws {
        let first = try AllSparkTestServer(), second = try AllSparkTestServer()
        let folder = TemporaryDirectory()
        let storage = folder.file("recordings").path
        let configFile = try writeConfig(folder, storage: storage, server: "", chunkMs: 1000)
        let service = try RecorderService(settings: ServiceSettings(configFile: configFile))
        XCTAssertThrowsError(try service.changeServer(host: first.address, verifyTLS: true, by: "test"), "not running yet")
        try service.start()
        XCTAssertNil(service.link, "no host, no discovery: no link")

        try service.changeServer(host: "ws://\(first.address)", verifyTLS: true, by: "test")
        XCTAssertTrue(waitOnMainLoop(10) { first.texts.contains { $0.contains("chunkSaved") } }, "finished chunks are announced to the new link")
        XCTAssertThrowsError(try service.changeServer(host: "nowhere", verifyTLS: true, by: "test"), "not an address")
        XCTAssertEqual(service.link?.address?.port, first.port, "a refused change changes nothing")

        try service.changeServer(host: "ws://\(second.address)", verifyTLS: false, by: "test")
        XCTAssertTrue(waitOnMainLoop(10) { second.texts.contains { $0.contains("chunkSaved") } }, "and then to the next one")
        XCTAssertTrue(waitOnMainLoop(10) { first.connections.isEmpty }, "the old link is closed")
        let announced = first.texts.filter { $0.contains("chunkSaved") }.count
        runMainLoop(seconds: 1.5)
        XCTAssertEqual(first.texts.filter { $0.contains("chunkSaved") }.count, announced, "nothing more reaches the old server")

        let next = try ServiceSettings(configFile: configFile).load(logger: .init(label: "test"))
        XCTAssertEqual(next.server.host, "ws://\(second.address)", "kept for the next start")
        XCTAssertFalse(next.server.verifyTLS)

        try service.changeServer(host: "", verifyTLS: true, by: "test")
        XCTAssertNil(service.link, "an empty host without discovery: no server")
        XCTAssertTrue(waitOnMainLoop(10) { second.connections.isEmpty })
        var stopped = false
        service.stop(reason: "test") { stopped = true }
        XCTAssertTrue(waitOnMainLoop(20) { stopped })
    }
}
