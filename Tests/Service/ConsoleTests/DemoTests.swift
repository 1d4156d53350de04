import XCTest
import FaceBlur
import Foundation
import RecorderTestSupport

/// What `scripts/demo` runs: the real executable on config/demo-faces.toml,
/// the scene with real faces playing as a live camera. Chunks appear, no
/// face in them can be found, and the console answers while it records.
final class DemoTests: XCTestCase {
    func testTheDemoRecordsTheSceneWithEveryFaceHiddenAndTheConsoleAnswers() throws {
        let scene = repositoryRoot.appendingPathComponent("demo/faces")
        let made = try runTool(repoPath("scripts/make-demo-clip"), [scene.path])
        XCTAssertEqual(made.status, 0, made.output)
        let detector = try FaceDetector(modelPath: faceModelPath)
        func faces(_ image: RawImage) throws -> Int {
            try image.y.withUnsafeBufferPointer {
                try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                    inputWidth: 640, threshold: 0.5)
            }.count
        }
        // The control: the scene itself shows faces the detector finds.
        let sample = try decodeFrames(scene.appendingPathComponent("frame-150.jpg"))[0]
        XCTAssertGreaterThanOrEqual(try faces(sample), 2, "the demo scene shows faces")

        let storage = TemporaryDirectory()
        let log = storage.file("run.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: recorderExecutable)
        process.arguments = ["run", "--config", repoPath("config/demo-faces.toml"), "--duration", "14",
                             "--set", "pipeline.vars.frames=\(scene.path)", "--set", "recording.storage_dir=\(storage.file("chunks").path)",
                             "--set", "recording.chunk_duration_ms=5000", "--set", "console.listen=127.0.0.1:0"]
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The console's address, as the service logs it.
        var port: String?
        let deadline = Date().addingTimeInterval(20)
        while port == nil, Date() < deadline, process.isRunning {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            port = text.range(of: #"console: http://127\.0\.0\.1:([0-9]+)/"#, options: .regularExpression)
                .map { String(text[$0].split(separator: ":").last!.dropLast()) }
            Thread.sleep(forTimeInterval: 0.2)
        }
        let address = try XCTUnwrap(port, "the console listens: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        var health = ""
        for _ in 0..<40 where !health.contains(#""status":"ok""#) {
            health = try runTool("/usr/bin/curl", ["-s", "http://127.0.0.1:\(address)/healthz"]).output
            Thread.sleep(forTimeInterval: 0.25)
        }
        XCTAssertTrue(health.contains(#""status":"ok""#), "the console says it records: \(health)")
        if let shot = ProcessInfo.processInfo.environment["ALLSPARK_DEMO_SHOT"] {
            try screenshot(console: "http://127.0.0.1:\(address)/", log: log, to: shot)
        }
        process.waitUntilExit()
        try handle.close()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(process.terminationStatus, 0, output)

        let chunks = try FileManager.default.contentsOfDirectory(atPath: storage.file("chunks").path)
            .filter { $0.hasPrefix("chunk_") && $0.hasSuffix(".mp4") }.sorted()
        XCTAssertGreaterThanOrEqual(chunks.count, 2, "chunks appear")
        var judged = 0
        for chunk in chunks {
            let frames = try decodeFrames(storage.file("chunks").appendingPathComponent(chunk))
            for (i, frame) in frames.enumerated() where i % 3 == 0 {
                XCTAssertEqual(try faces(frame), 0, "\(chunk) frame \(i) shows a face the detector finds")
                judged += 1
            }
        }
        XCTAssertGreaterThan(judged, 30, "enough of the recording was looked at")
    }

    /// The README's picture of the demo: the console logged in with the password the service made.
    func screenshot(console: String, log: URL, to path: String) throws {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let password = try XCTUnwrap(text.range(of: #"password [a-z0-9]+(-[a-z0-9]+)+"#, options: .regularExpression)
            .map { String(text[$0].dropFirst("password ".count)) })
        let browser = try HeadlessBrowser()
        defer { browser.close() }
        try browser.open(console)
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        _ = try browser.evaluate("document.getElementById('password').value = '\(password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('preview').naturalWidth > 0 && document.querySelectorAll('#chunks a').length > 0"))
        Thread.sleep(forTimeInterval: 1)
        try browser.screenshot().write(to: URL(fileURLWithPath: path))
    }
}
