import XCTest
import FaceBlur
import Foundation
import RecorderTestSupport

/// What `scripts/demo` runs: the real executable on config/demo-faces.toml,
/// the scene with real faces playing as a live camera. Chunks appear, no
/// face in them can be found, and the console answers while it records.
final class DemoTests: XCTestCase {
    /// The README's first command, as a person runs it in a checkout: `scripts/demo` (set-up included),
    /// here for 20 s. It prints the console's address and a password; the console answers there while it
    /// records; the run ends with exit 0, and the chunks it made hide every face.
    func testTheQuickStartCommandRecordsTheSceneWithEveryFaceHiddenAndTheConsoleAnswers() throws {
        let scene = repositoryRoot.appendingPathComponent("demo/faces")
        let detector = try FaceDetector(modelPath: faceModelPath)
        func found(_ image: RawImage) throws -> [FaceRect] { try self.found(image, detector) }

        let scratch = TemporaryDirectory()
        let log = scratch.file("demo.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let port = try freeTCPPort()
        let startedMs = Int64(Date().timeIntervalSince1970 * 1000)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: repoPath("scripts/demo"))
        // At trace level the stage logs every frame's regions with the track and rule behind each
        // (a few hundred kB): a face left unhidden can then be traced to its rule from the failure.
        process.arguments = ["--duration", "20", "--log-level", "trace"]
        var environment = ProcessInfo.processInfo.environment
        environment["DEMO_PORT"] = String(port)          // not 8090: other checkouts may run their demo at once
        environment.removeValue(forKey: "DEMO_PASSWORD")  // the script makes one and prints it, as for a person
        // `swift test` holds the .build lock while tests run; the script's release build may go past it
        // (it writes only the release products, which no test process is building).
        environment["ALLSPARK_BUILD_IGNORE_LOCK"] = "1"
        if !(environment["PATH"] ?? "").contains("/opt/swift/usr/bin") { environment["PATH"] = "/opt/swift/usr/bin:" + (environment["PATH"] ?? "/usr/bin:/bin") }
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        func output() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        // The address and password the script prints (set-up and a first release build can take long).
        var console: String?, password: String?
        let printed = Date().addingTimeInterval(1800)
        while console == nil, Date() < printed, process.isRunning {
            let text = output()
            if let line = text.range(of: #"http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression),
               let secret = text.range(of: #"user admin, password [a-km-z2-9]+"#, options: .regularExpression) {
                console = String(text[line])
                password = String(text[secret].dropFirst("user admin, password ".count))
            }
            Thread.sleep(forTimeInterval: 0.5)
        }
        let address = try XCTUnwrap(console, "the script prints the console's address: \(output())")
        XCTAssertEqual(address, "http://127.0.0.1:\(port)/")
        XCTAssertEqual(password?.count, 16)
        // Recording, whether "ok" or "degraded" (a loaded test machine can leave the privacy stage behind).
        func records(_ health: String) -> Bool { health.contains(#""status":"ok""#) || health.contains(#""status":"degraded""#) }
        var health = ""
        for _ in 0..<120 where !records(health) && process.isRunning {
            health = try runTool("/usr/bin/curl", ["-s", address + "healthz"]).output
            Thread.sleep(forTimeInterval: 0.25)
        }
        XCTAssertTrue(records(health), "the console says it records: \(health)\n\(output())")
        // The printed password opens the console.
        let login = try runTool("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
                                                  "-H", "X-Requested-With: allspark-console",
                                                  "--data", #"{"password":"\#(password ?? "")"}"#, address + "api/v1/login"]).output
        XCTAssertEqual(login, "200", "the printed password logs in")
        if let shot = ProcessInfo.processInfo.environment["ALLSPARK_DEMO_SHOT"] {
            try screenshot(console: address, password: password ?? "", to: shot)
        }
        process.waitUntilExit()
        try handle.close()
        let text = output()
        XCTAssertEqual(process.terminationStatus, 0, text)

        // The chunks of this run (the demo's folder keeps earlier runs' chunks too), in order.
        let folder = repositoryRoot.appendingPathComponent("recordings/demo")
        let chunks = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix("chunk_") && $0.hasSuffix(".mp4") }
            .filter { (Int64($0.dropFirst("chunk_".count).dropLast(".mp4".count)) ?? 0) >= startedMs }.sorted()
        XCTAssertGreaterThanOrEqual(chunks.count, 1, "chunks appear: \(text)")
        XCTAssertTrue(text.contains(" 0 dropped"), "every frame recorded, so recorded frame n is scene frame n mod 300: \(text)")
        let sample = try decodeFrames(scene.appendingPathComponent("frame-150.jpg"))[0]
        XCTAssertGreaterThanOrEqual(try found(sample).count, 2, "the control: the demo scene shows faces the detector finds")
        // The truth: the detector on the scene frame each recorded frame came from. A face counts
        // as left recognisable when the detector finds it again where it is (IoU > 0.3), as the face
        // clip tests count it. (Their second measure, detail kept, misjudges the demo: its people are
        // photos sliding over each other, and a sharp photo edge across a pixelated face reads as detail.)
        var judged = 0, stillFound = 0, index = 0
        var leaks: [String] = [], leakFrames: [Int] = []
        for chunk in chunks {
            let frames = try decodeFrames(folder.appendingPathComponent(chunk))
            for frame in frames {
                defer { index += 1 }
                guard index % 5 == 0 else { continue }   // every 5th: frames next to each other tell little more
                let source = try decodeFrames(scene.appendingPathComponent(String(format: "frame-%03d.jpg", index % 300)))[0]
                let truth = try found(source)
                let seen = try found(frame)
                for face in truth {
                    let seenAgain = seen.contains { $0.intersectionOverUnion(face) > 0.3 }
                    if seenAgain {
                        stillFound += 1
                        leaks.append("frame \(index) (\(chunk)): face at \(face)")
                        leakFrames.append(index)
                    }
                    if seenAgain, let keep = ProcessInfo.processInfo.environment["ALLSPARK_KEEP_FAILURES"] {
                        // Raw 8-bit pictures to look at (e.g. with GStreamer's rawvideoparse), as recorded and as shot.
                        try Data(frame.y).write(to: URL(fileURLWithPath: "\(keep)/\(chunk)-\(index)-\(frame.width)x\(frame.height).gray"))
                        try Data(source.y).write(to: URL(fileURLWithPath: "\(keep)/\(chunk)-\(index)-scene-\(frame.width)x\(frame.height).gray"))
                    }
                    judged += 1
                }
            }
        }
        // None: a frame the stage could not finish in time still leaves with every unconfirmed part coarsely pixelated.
        // On a failure, where, and the stage's own account of the run (late frames, searches).
        let lines = text.split(separator: "\n")
        let account = lines.filter { $0.contains("face blur:") || $0.contains("behind") }.joined(separator: "\n")
        // Recorded frame n is the stage's frame n (nothing dropped): its regions, and the searches around it.
        let traced = leakFrames.prefix(3).map { leak in
            lines.filter { line in
                line.contains("frame \(leak) at ") || (leak - 6...leak + 6).contains { line.contains("detection on frame \($0),") }
            }.joined(separator: "\n")
        }.joined(separator: "\n")
        XCTAssertEqual(stillFound, 0, "\(stillFound) of \(judged) face-frames found again by the detector: \(leaks)\n\(account)\n\(traced)")
        print("demo: \(stillFound) of \(judged) face-frames found again by the detector\n\(account)")  // test report
        XCTAssertGreaterThan(judged, 100, "enough face-frames were looked at")
    }

    func found(_ image: RawImage, _ detector: FaceDetector) throws -> [FaceRect] {
        try image.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                inputWidth: 640, threshold: 0.5)
        }.map(\.rect)
    }

    /// The README's picture of the demo: the console logged in with the password the script printed.
    func screenshot(console: String, password: String, to path: String) throws {
        let browser = try HeadlessBrowser()
        defer { browser.close() }
        try browser.open(console)
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        _ = try browser.evaluate("document.getElementById('password').value = '\(password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('preview').naturalWidth > 0"))
        Thread.sleep(forTimeInterval: 1)
        try browser.screenshot().write(to: URL(fileURLWithPath: path))
    }

    /// Every shell script under scripts/ and bench/ that runs with `set -o pipefail` must not pipe into a
    /// reader that stops before the writer is done (`| head`, `| grep -q`, `| grep -m`, `| sed …q`):
    /// the writer dies of SIGPIPE, pipefail turns that into the pipeline's failure and `set -e` ends the
    /// script with no message (scripts/demo exited 141 that way, right after building).
    func testNoScriptPipesIntoAReaderThatStopsEarly() throws {
        var found: [String] = []
        for folder in ["scripts", "bench"] {
            for name in try FileManager.default.contentsOfDirectory(atPath: repoPath(folder)).sorted() {
                let path = repoPath("\(folder)/\(name)")
                guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.hasPrefix("#!"),
                      text.contains("bash") || text.hasPrefix("#!/bin/sh"), text.contains("pipefail") else { continue }
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    // The code of the line: a comment (a `#` after a blank, as bash reads it) is not run.
                    var code = line.trimmingCharacters(in: .whitespaces)
                    if code.hasPrefix("#") { continue }
                    if let comment = code.range(of: #"\s#.*$"#, options: .regularExpression) { code.removeSubrange(comment) }
                    if code.range(of: #"\|\s*(head\b|tail -n \+1 -q|grep\s+(-[a-zA-Z]*[qm]|--quiet|--max-count)|sed\s+-n\s+'?[0-9]*q|awk\s+'[^']*\bexit\b)"#,
                                  options: .regularExpression) != nil {
                        found.append("\(folder)/\(name):\(number + 1): \(code)")
                    }
                }
            }
        }
        XCTAssertEqual(found, [], "a reader that closes the pipe early under pipefail")
    }
}

/// A TCP port nobody listens on now (the kernel's choice for port 0).
func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw NSError(domain: "freeTCPPort", code: Int(errno)) }
    return Int(UInt16(bigEndian: address.sin_port))
}
