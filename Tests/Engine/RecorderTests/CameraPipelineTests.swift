import XCTest
import RecorderCore
import RecorderTestSupport

/// The shipped camera pipelines against real sources: an RTSP camera served
/// by gst-rtsp-server (Tests/Support/RTSPTestServer) and an MJPEG stream
/// served by another recorder's console, recorded by the real executable.
extension ServiceProcessTests {
    struct CameraNotStarted: Error { let why: String }

    /// The RTSP test camera as a process; "ready" once it listens.
    final class RTSPCamera {
        let process = Process()
        init(port: Int, user: String, password: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")   // Debian's, with python3-gi
            process.arguments = [repoPath("Tests/Support/RTSPTestServer/rtsp_test_server.py"), "\(port)", user, password]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = out
            try process.run()
            let ready = out.fileHandleForReading.availableData
            guard String(decoding: ready, as: UTF8.self).contains("ready") else {
                throw CameraNotStarted(why: "the RTSP test camera did not start (scripts/setup --tests installs gir1.2-gst-rtsp-server-1.0): \(String(decoding: ready, as: UTF8.self))")
            }
        }
        func kill() {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    func chunkNames(_ storage: TemporaryDirectory) -> [String] { files(in: storage).filter { $0.hasPrefix("chunk_") } }

    func rtspRun(_ storage: TemporaryDirectory, port: Int, password: String) throws -> Service {
        try Service(["run", "--config", repoPath("config/default.toml"),
                     "--set", "recording.pipeline=\(repoPath("pipelines/rtsp.pipeline"))",
                     "--set", "recording.storage_dir=\(storage.path)", "--set", "recording.chunk_duration_ms=2000",
                     "--set", "recording.frame_timeout_s=3", "--set", "server.discovery=false", "--set", "console.enabled=false",
                     "--set", "pipeline.vars.rtsp_url=rtsp://127.0.0.1:\(port)/cam", "--set", "pipeline.vars.rtsp_transport=tcp",
                     "--set", "pipeline.vars.rtsp_user=camera", "--set", "pipeline.vars.rtsp_password=\(password)",
                     "--set", "pipeline.vars.framerate=15", "--set", "pipeline.vars.bitrate_kbps=500",
                     "--set", "recording.audio_format=wav"] + smallAndFast)
    }

    func testAnRTSPCameraIsRecordedAgainAfterItComesBackAndItsPasswordIsNeverLogged() throws {
        let port = Int.random(in: 20_000..<30_000)
        let password = "pw-\(UUID().uuidString.prefix(8))"
        var camera = try RTSPCamera(port: port, user: "camera", password: password)
        defer { camera.kill() }

        // A wrong password: refused, said so, and neither password appears in the log.
        let refusedStorage = TemporaryDirectory()
        let wrong = "wrong-\(UUID().uuidString.prefix(8))"
        let refused = try rtspRun(refusedStorage, port: port, password: wrong)
        sleep(3)
        refused.signal(SIGINT)
        let refusedLog = refused.finish().log
        XCTAssertTrue(refusedLog.contains("Unauthorized"), "the camera's refusal is said: \(refusedLog.suffix(2000))")
        XCTAssertFalse(refusedLog.contains(wrong), "the password is never logged")
        XCTAssertEqual(chunkNames(refusedStorage), [])

        // The right one: recorded; the camera dies and comes back; recorded again.
        let storage = TemporaryDirectory()
        let service = try rtspRun(storage, port: port, password: password)
        XCTAssertTrue(waitFor(20) { chunkNames(storage).count >= 2 }, "recording from the camera")
        camera.kill()
        let lost = Date().timeIntervalSince1970
        sleep(3)
        let beforeReturn = chunkNames(storage)
        camera = try RTSPCamera(port: port, user: "camera", password: password)
        XCTAssertTrue(waitFor(30) { chunkNames(storage).count >= beforeReturn.count + 2 }, "recording again once the camera is back")
        service.signal(SIGINT)
        let (status, log) = service.finish()
        XCTAssertEqual(status, 0, log)
        XCTAssertFalse(log.contains(password), "the password is never logged")
        let chunks = chunkNames(storage)
        let after = chunks.filter { (ChunkName.parse($0).map { Double($0.startMs) / 1000 } ?? 0) > lost + 2 }
        XCTAssertGreaterThanOrEqual(after.count, 2, "chunks started after the camera came back: \(chunks)")
        for chunk in chunks { XCTAssertNotNil(try discover(storage.file(chunk)).duration, "\(chunk) plays") }
        // The camera's sound, beside each chunk.
        for chunk in after {
            let ms = try XCTUnwrap(ChunkName.parse(chunk)).startMs
            XCTAssertTrue(files(in: storage).contains("audio_\(ms).wav"), "the camera's audio beside \(chunk)")
        }
    }

    func testCheckPipelineShowsTheCameraPipelineWithItsPasswordHidden() throws {
        let password = "pw-\(UUID().uuidString.prefix(8))"
        let checked = try runTool(recorderExecutable, [
            "check-pipeline", repoPath("pipelines/rtsp.pipeline"), "--config", repoPath("config/default.toml"),
            "--set", "pipeline.vars.rtsp_url=rtsp://127.0.0.1:9/cam", "--set", "pipeline.vars.rtsp_transport=tcp",
            "--set", "pipeline.vars.rtsp_user=camera", "--set", "pipeline.vars.rtsp_password=\(password)"])
        XCTAssertEqual(checked.status, 0, checked.output)
        XCTAssertTrue(checked.output.contains(#"user-pw="********""#), checked.output)
        XCTAssertFalse(checked.output.contains(password), "the password is never shown")
        // An error that quotes the value hides it too.
        let template = try PipelineTemplate(text: "videotestsrc pattern=${camera_password} ! fakesink", file: "x.pipeline",
                                            variables: ["camera_password": password])
        XCTAssertEqual(template.redacted(template.description), "videotestsrc pattern=******** ! fakesink")
    }
}
