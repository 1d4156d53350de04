import XCTest
import RecorderCore
import RecorderTestSupport

/// Runs the real `allspark-recorder` executable: signals, crash recovery,
/// privacy refusal, reload.
final class ServiceProcessTests: XCTestCase {
    let smallAndFast = ["--set", "privacy.face_blur=false", "--set", "pipeline.vars.width=320",
                        "--set", "pipeline.vars.height=240", "--set", "pipeline.vars.bitrate_kbps=500"]

    final class Service {
        let process = Process()
        let output = Pipe()
        /// `environment` is added to this process's own.
        init(_ arguments: [String], environment: [String: String] = [:]) throws {
            process.executableURL = URL(fileURLWithPath: recorderExecutable)
            process.arguments = arguments
            if !environment.isEmpty {
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            }
            process.standardOutput = output
            process.standardError = output
            try process.run()
        }
        func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }
        /// Waits for exit and returns status and everything printed.
        func finish(timeout: Double = 30) -> (status: Int32, log: String) {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
            let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, log)
        }
    }

    func files(in dir: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted()
    }

    func waitFor(_ seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(100_000)
        }
        return condition()
    }

    func testSIGINTFinishesTheCurrentChunkAndExitsZero() throws {
        let storage = TemporaryDirectory()
        let service = try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                                   "--set", "recording.chunk_duration_ms=2000"] + smallAndFast)
        XCTAssertTrue(waitFor(15) { files(in: storage).contains { $0.hasPrefix(".chunk_") } }, "recording started")
        sleep(3)
        service.signal(SIGINT)
        let (status, log) = service.finish()
        XCTAssertEqual(status, 0, log)
        XCTAssertTrue(log.contains("Recording to \(storage.path)"), "says where the chunks go")
        let names = files(in: storage)
        XCTAssertFalse(names.contains { $0.hasSuffix(".partial") }, "the current chunk was finished: \(names)")
        let chunks = names.filter { $0.hasPrefix("chunk_") }
        XCTAssertGreaterThanOrEqual(chunks.count, 2)
        for chunk in chunks { XCTAssertNotNil(try discover(storage.file(chunk)).duration, chunk) }
    }

    func testSIGKILLLosesNothingFinishedAndTheCutChunkIsRepaired() throws {
        let storage = TemporaryDirectory()
        let args = ["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                    "--set", "recording.chunk_duration_ms=4000"] + smallAndFast
        let first = try Service(args)
        XCTAssertTrue(waitFor(20) { files(in: storage).contains { $0.hasPrefix("chunk_") } }, "a chunk finished")
        sleep(3)   // well into the next chunk: robust muxing has written its index a few times
        first.signal(SIGKILL)
        _ = first.finish()
        let finishedBefore = files(in: storage).filter { $0.hasPrefix("chunk_") }
        let partial = try XCTUnwrap(files(in: storage).first { $0.hasSuffix(".partial") }, "the cut chunk is left as a partial file")
        for chunk in finishedBefore {
            XCTAssertNotNil(try discover(storage.file(chunk)).duration, "\(chunk) intact after SIGKILL")
        }

        let second = try Service(args + ["--duration", "2"])
        let (status, log) = second.finish()
        XCTAssertEqual(status, 0, log)
        let after = files(in: storage)
        XCTAssertFalse(after.contains { $0.hasSuffix(".partial") }, "\(after)")
        let repairedName = try XCTUnwrap(ChunkName.finalName(forPartial: partial))
        XCTAssertTrue(after.contains(repairedName), "the cut chunk was repaired: \(log)")
        XCTAssertTrue(log.contains("repaired \(repairedName)"), log)
        let repaired = try XCTUnwrap(discover(storage.file(repairedName)).duration)
        XCTAssertGreaterThan(repaired, 1.5, "robust muxing kept all but the last second or so")
        let index = try ChunkCatalog.readIndex(of: storage.url)
        XCTAssertEqual(Set(index.map(\.file)), Set(after.filter { $0.hasPrefix("chunk_") }))
        for name in finishedBefore { XCTAssertTrue(index.contains { $0.file == name }, name) }
        for record in index { XCTAssertNotNil(try discover(storage.file(record.file)).duration, record.file) }
    }

    func testRefusesToRecordWithBlurOnAndTheModelMissing() throws {
        let storage = TemporaryDirectory()
        let service = try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                                   "--set", "privacy.face_blur=true", "--set", "privacy.model=/nonexistent/centerface.onnx",
                                   "--duration", "3"])
        let (status, log) = service.finish()
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(log.contains("privacy.face_blur = true"), log)
        XCTAssertTrue(log.contains("/nonexistent/centerface.onnx is missing"), log)
        XCTAssertTrue(log.contains("Refusing to record"), log)
        XCTAssertEqual(files(in: storage).filter { $0.contains("chunk_") }, [], "nothing was recorded")
    }

    func testBadConfigIsAClearErrorNamingTheFile() throws {
        let service = try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.video_format=avi"])
        let (status, log) = service.finish()
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(log.contains("recording.video_format = \"avi\" is not allowed; use \"mp4\" or \"mov\""), log)
    }

    func testSIGHUPReloadsTheConfigWithoutStoppingCapture() throws {
        let storage = TemporaryDirectory()
        let configs = TemporaryDirectory()
        let config = configs.file("recorder.toml")
        let original = try String(contentsOfFile: repoPath("config/demo.toml"), encoding: .utf8)
            .replacingOccurrences(of: "\"../pipelines/test.pipeline\"", with: "\"\(repoPath("pipelines/test.pipeline"))\"")
            .replacingOccurrences(of: "\"../recordings/demo\"", with: "\"\(storage.path)\"")
            .replacingOccurrences(of: "chunk_duration_ms = 10000", with: "chunk_duration_ms = 2000")
        try original.write(to: config, atomically: true, encoding: .utf8)
        let service = try Service(["run", "--config", config.path, "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240"])
        XCTAssertTrue(waitFor(15) { files(in: storage).contains { $0.hasPrefix("chunk_") } })
        try original.replacingOccurrences(of: "chunk_duration_ms = 2000", with: "chunk_duration_ms = 3000")
            .replacingOccurrences(of: "video_format = \"mp4\"", with: "video_format = \"mov\"")
            .write(to: config, atomically: true, encoding: .utf8)
        service.signal(SIGHUP)
        // Two mov chunks finished after the reload (the one SIGTERM cuts is a third).
        XCTAssertTrue(waitFor(20) { files(in: storage).filter { $0.hasPrefix("chunk_") && $0.hasSuffix(".mov") }.count >= 2 },
                      "mov chunks after the reload: \(files(in: storage))")
        usleep(500_000)   // into the third
        service.signal(SIGTERM)
        let (status, log) = service.finish()
        XCTAssertEqual(status, 0, log)
        XCTAssertTrue(log.contains("re-tuned: chunk duration 2000 → 3000 ms"), log)
        XCTAssertTrue(log.contains("re-tuned: container mp4 → mov"), log)
        let index = try ChunkCatalog.readIndex(of: storage.url)
        let movs = index.filter { $0.format == .mov }
        XCTAssertGreaterThanOrEqual(movs.count, 2, log)
        XCTAssertEqual(movs[movs.count - 2].duration, 3.0, accuracy: 0.02, "chunks after the reload have the new length")
        for (a, b) in zip(index, index.dropFirst()) {
            XCTAssertLessThan(b.start - a.end, 0.07, "capture never stopped: \(a.file) → \(b.file)")
        }
    }
}
