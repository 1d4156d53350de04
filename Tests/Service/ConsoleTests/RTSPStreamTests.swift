import XCTest
import Console
import FaceBlur
import Foundation
import GLibSupport
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport

/// The RTSP stream out (`stream.rtsp_listen`) with real clients on 127.0.0.1:
/// ffmpeg/ffprobe (Debian's) and GStreamer's rtspsrc pull it, a raw client
/// stalls after PLAY, the detector judges what the players received.
class RTSPStreamTestCase: XCTestCase {
    static let password = "stream test password"

    struct Running {
        let service: RecorderService
        let stream: RTSPStream
        let url: String
        let port: Int
        let dir: TemporaryDirectory
        var authorized: String { url.replacingOccurrences(of: "://", with: "://viewer:\(RTSPStreamTestCase.password.replacingOccurrences(of: " ", with: "%20"))@") }
    }

    /// Starts a service recording `pipeline` with the stream on a free port; `extra` goes into the config.
    func start(pipeline: String, variables: String, faceBlur: Bool, extra: String = "", console: Bool = false,
               consoleExtra: String = "") throws -> Running {
        let dir = TemporaryDirectory()
        let port = freeLocalPort()
        let config = dir.file("recorder.toml")
        try """
            [server]
            host = ""
            discovery = false
            [recording]
            pipeline = "\(repoPath(pipeline))"
            storage_dir = "\(dir.file("chunks").path)"
            chunk_duration_ms = 60000
            [privacy]
            face_blur = \(faceBlur)
            model = "\(faceModelPath)"
            [console]
            enabled = \(console)
            listen = "127.0.0.1:0"
            \(consoleExtra)
            [stream]
            rtsp_listen = "127.0.0.1:\(port)"
            \(extra)
            [pipeline.vars]
            \(variables)
            """.write(to: config, atomically: true, encoding: .utf8)
        let service = try RecorderService(settings: ServiceSettings(configFile: config.path))
        try ConsolePassword.stream(storageDirectory: dir.file("chunks").path).set(Self.password)
        try StreamAuth.install(on: service)
        try service.start()
        let stream = try XCTUnwrap(service.stream, "the stream listens")
        XCTAssertTrue(waitOnMainLoop(20) { service.recorder?.state == .recording })
        return Running(service: service, stream: stream, url: stream.url(forHost: nil), port: port, dir: dir)
    }

    func stop(_ running: Running) {
        var stopped = false
        running.service.stop(reason: "test") { stopped = true }
        waitOnMainLoop(30) { stopped }
    }

    func faces(in image: RawImage) throws -> [FaceRect] {
        let detector = try FaceDetector(modelPath: faceModelPath)
        return try image.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                inputWidth: 640, threshold: 0.5)
        }.map(\.rect)
    }

    /// A fixed camera on the coffee photo with the astronaut standing in it, face about 110 px high.
    func faceClip(in dir: TemporaryDirectory) throws -> URL {
        try standingAstronautClip(in: dir) { try faces(in: $0) }
    }

    /// The JPEG pictures a client wrote (`prefix-NNN.jpg`), decoded.
    func pictures(in dir: TemporaryDirectory, prefix: String) throws -> [RawImage] {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(prefix) }.sorted()
        return try names.flatMap { try decodeFrames(dir.file($0)) }
    }

    /// Runs every command at once while the main loop serves; returns their statuses and outputs.
    func runAll(_ commands: [[String]], timeout: Double) throws -> [(status: Int32, output: String)] {
        let scratch = TemporaryDirectory()
        var running: [(Process, URL, FileHandle)] = []
        for (i, command) in commands.enumerated() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            let output = scratch.file("out-\(i).txt")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            let handle = try FileHandle(forWritingTo: output)
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            running.append((process, output, handle))
        }
        waitOnMainLoop(timeout) { running.allSatisfy { !$0.0.isRunning } }
        return running.map { process, output, handle in
            if process.isRunning { process.terminate() }
            // A player blocked on the network may not stop for SIGTERM.
            if !waitOnMainLoop(3, until: { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? handle.close()
            return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
        }
    }

}

final class RTSPStreamTests: RTSPStreamTestCase {
    // MARK: What the players see

    func testPlayersGetTheRecordedStreamWithEveryFaceHidden() throws {
        let clipDir = TemporaryDirectory()
        let clip = try faceClip(in: clipDir)
        let running = try start(pipeline: "pipelines/file.pipeline", variables: "input = \"\(clip.path)\"\nbitrate_kbps = 2000", faceBlur: true)
        defer { stop(running) }
        let out = running.dir
        // ffmpeg and GStreamer's rtspsrc (over UDP), both at once, 4 pictures a second for about 4 s.
        let results = try runAll([
            ["/usr/bin/ffmpeg", "-v", "error", "-rtsp_transport", "tcp", "-i", running.authorized, "-t", "4",
             "-vf", "fps=4", "-q:v", "3", out.file("ffmpeg-%03d.jpg").path],
            ["/usr/bin/gst-launch-1.0", "-q", "rtspsrc", "location=\(running.url)", "user-id=viewer", "user-pw=\(Self.password)",
             "protocols=udp", "latency=200", "!", "rtph264depay", "!", "h264parse", "!", "avdec_h264", "!", "videoconvert", "!",
             "videorate", "!", "video/x-raw,framerate=4/1", "!", "jpegenc", "!", "multifilesink", "location=\(out.file("gst-%03d.jpg").path)"],
        ], timeout: 12)
        // Under the privacy stage's load (two cores) the players may be stopped before their 4 s: what they wrote counts.
        let ffmpegPictures = try pictures(in: out, prefix: "ffmpeg-")
        let gstPictures = try pictures(in: out, prefix: "gst-")
        XCTAssertGreaterThan(ffmpegPictures.count, 8, "ffmpeg played the stream: \(results[0].output)")
        XCTAssertGreaterThan(gstPictures.count, 8, "rtspsrc played the stream: \(results[1].output)")
        for (i, picture) in (ffmpegPictures + gstPictures).enumerated() {
            XCTAssertEqual(picture.width, 640)
            XCTAssertEqual(try faces(in: picture), [], "picture \(i) a player got shows a face")
        }
        let statistics = running.stream.statistics
        XCTAssertGreaterThan(statistics.frames, 60)
        XCTAssertGreaterThan(statistics.bytes, 10_000)
    }

    /// The control: without the privacy stage the same players see the face, so the check above can fail.
    func testWithoutThePrivacyStageThePlayersSeeTheFace() throws {
        let clipDir = TemporaryDirectory()
        let clip = try faceClip(in: clipDir)
        let running = try start(pipeline: "pipelines/file.pipeline", variables: "input = \"\(clip.path)\"\nbitrate_kbps = 2000", faceBlur: false)
        defer { stop(running) }
        let result = try runWhileServing("/usr/bin/ffmpeg", ["-v", "error", "-rtsp_transport", "tcp", "-i", running.authorized, "-t", "2",
                                                             "-vf", "fps=4", "-q:v", "3", running.dir.file("plain-%03d.jpg").path], timeout: 10)
        XCTAssertEqual(result.status, 0, result.output)
        let plain = try pictures(in: running.dir, prefix: "plain-")
        if ProcessInfo.processInfo.environment["KEEP_RTSP_PICTURES"] != nil { try? FileManager.default.copyItem(at: running.dir.url, to: URL(fileURLWithPath: "/tmp/rtsp-pictures")) }
        XCTAssertGreaterThan(plain.count, 4)
        XCTAssertGreaterThan(try plain.filter { try !faces(in: $0).isEmpty }.count, plain.count / 2, "the detector sees the face unblurred")
    }

    // MARK: Who may watch

    func testWithoutOrWithAWrongPasswordAClientGets401AndGuessersAreSlowedDown() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false)
        defer { stop(running) }
        let none = try runWhileServing("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", running.url], timeout: 10)
        XCTAssertNotEqual(none.status, 0)
        XCTAssertTrue(none.output.contains("401"), none.output)
        let wrong = try runWhileServing("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp",
                                                             running.url.replacingOccurrences(of: "rtsp://", with: "rtsp://viewer:wrong-password@")], timeout: 10)
        XCTAssertNotEqual(wrong.status, 0)
        XCTAssertTrue(wrong.output.contains("401"), wrong.output)
        // The console's password is not the stream's, and the console's user is not the stream's.
        let admin = try runWhileServing("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp",
                                                             running.url.replacingOccurrences(of: "rtsp://", with: "rtsp://admin:stream%20test%20password@")], timeout: 10)
        XCTAssertTrue(admin.output.contains("401"), admin.output)
        let right = try runWhileServing("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name,width,height",
                                                             "-of", "csv=p=0", running.authorized], timeout: 15)
        XCTAssertEqual(right.status, 0, right.output)
        XCTAssertEqual(right.output.trimmingCharacters(in: .whitespacesAndNewlines), "h264,320,240")

        // A raw client sees the challenge, then the throttle after failures (the console's rules).
        let client = try RawRTSPClient(port: running.port)
        let challenge = try client.request("OPTIONS", running.url)
        XCTAssertEqual(challenge.status, 401)
        XCTAssertEqual(challenge.headers["www-authenticate"], "Basic realm=\"allspark-recorder\"")
        // Three failures so far from 127.0.0.1 (two from ffprobe's wrong user or password... ffprobe may retry): add until throttled.
        var throttled: RawRTSPClient.Response?
        for _ in 0..<4 {
            let answer = try client.request("OPTIONS", running.url, headers: ["Authorization": RawRTSPClient.basic("viewer", "guess")])
            if answer.status == 503 { throttled = answer; break }
            XCTAssertEqual(answer.status, 401)
        }
        let refusal = try XCTUnwrap(throttled, "a guesser is slowed down")
        XCTAssertNotNil(refusal.headers["retry-after"].flatMap(Int.init))
        // Credentials proven before keep working while the address waits.
        XCTAssertEqual(try client.request("OPTIONS", running.url, headers: ["Authorization": RawRTSPClient.basic("viewer", Self.password)]).status, 200)
    }

    func testClientsBeyondTheCapsAreRefusedWith503() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false, extra: "max_clients = 3\nmax_clients_per_address = 2")
        defer { stop(running) }
        let auth = ["Authorization": RawRTSPClient.basic("viewer", Self.password)]
        let first = try RawRTSPClient(port: running.port), second = try RawRTSPClient(port: running.port)
        XCTAssertEqual(try first.request("OPTIONS", running.url, headers: auth).status, 200)
        XCTAssertEqual(try second.request("OPTIONS", running.url, headers: auth).status, 200)
        let third = try RawRTSPClient(port: running.port)
        let refused = try third.request("OPTIONS", running.url, headers: auth)
        XCTAssertEqual(refused.status, 503, "a third client from one address is refused")
        XCTAssertEqual(refused.headers["x-allspark-reason"], "too many clients")
        XCTAssertTrue(waitOnMainLoop(5) { running.stream.statistics.refused == 1 })
        XCTAssertEqual(running.stream.statistics.clients, 2)
        XCTAssertEqual(running.stream.clients.map(\.address), ["127.0.0.1", "127.0.0.1"])
    }

    /// A TLS client in Python's ssl (no certificate check): answers the status of OPTIONS without
    /// credentials, then plays with them and checks the framing of `packets` interleaved RTP packets.
    static let tlsClient = #"""
        import ssl, socket, base64, re, sys
        port, password, packets = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
        context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
        s = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))
        url = "rtsps://127.0.0.1:%d/live" % port
        buf = b""; cseq = [0]
        def request(method, target, headers=""):
            global buf
            cseq[0] += 1
            s.sendall(("%s %s RTSP/1.0\r\nCSeq: %d\r\n%s\r\n" % (method, target, cseq[0], headers)).encode())
            while b"\r\n\r\n" not in buf: buf += s.recv(65536)
            head, _, rest = buf.partition(b"\r\n\r\n")
            m = re.search(rb"Content-Length: (\d+)", head); length = int(m.group(1)) if m else 0
            while len(rest) < length: rest += s.recv(65536)
            buf = rest[length:]
            return head.decode()
        print("anonymous", request("OPTIONS", url).split()[1])
        auth = "Authorization: Basic %s\r\n" % base64.b64encode(("viewer:" + password).encode()).decode()
        request("DESCRIBE", url, auth + "Accept: application/sdp\r\n")
        head = request("SETUP", url + "/stream=0", auth + "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n")
        session = re.search(r"Session: ([^;\r]+)", head).group(1)
        print("play", request("PLAY", url, auth + "Session: %s\r\nRange: npt=0-\r\n" % session).split()[1])
        good = 0
        for i in range(packets):
            while len(buf) < 4: buf += s.recv(65536)
            if buf[0] != 0x24: break
            length = (buf[2] << 8) | buf[3]
            while len(buf) < 4 + length: buf += s.recv(65536)
            if buf[1] in (0, 1) and buf[4] >> 6 == 2: good += 1
            buf = buf[4 + length:]
        print("rtp", good)
        """#

    /// With the console's certificate the stream is RTSP over TLS only (rtsps://): the password travels encrypted.
    func testOverTLSWithTheConsolesCertificate() throws {
        let certificates = TemporaryDirectory()
        let (certificate, key) = try makeSelfSignedCertificate(in: certificates)
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false, consoleExtra: "tls_certificate = \"\(certificate)\"\ntls_key = \"\(key)\"")
        defer { stop(running) }
        XCTAssertEqual(running.url, "rtsps://127.0.0.1:\(running.port)/live")
        let script = certificates.file("tls-client.py")
        try Self.tlsClient.write(to: script, atomically: true, encoding: .utf8)
        let result = try runWhileServing("/usr/bin/python3", [script.path, "\(running.port)", Self.password, "150"], timeout: 20)
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output.split(separator: "\n"), ["anonymous 401", "play 200", "rtp 150"], result.output)
        // Plain RTSP on the TLS port gets no answer.
        let plain = try RawRTSPClient(port: running.port)
        XCTAssertThrowsError(try plain.request("OPTIONS", running.url.replacingOccurrences(of: "rtsps", with: "rtsp")))
    }

    /// A player that stops reading after PLAY is closed once its socket has held what it did not read for
    /// stream.session_timeout_s (gst-rtsp-server drops what does not fit and counts each send as a
    /// keep-alive, so its session alone would never time out); the others play on.
    func testAPlayerThatStopsReadingIsClosedAfterTheTimeout() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false, extra: "session_timeout_s = 5")
        defer { stop(running) }
        let stalled = try RawRTSPClient(port: running.port, receiveBuffer: 4096)
        XCTAssertEqual(try stalled.play(running.url, authorization: RawRTSPClient.basic("viewer", Self.password)), 200)
        let playing = Date()
        XCTAssertTrue(waitOnMainLoop(25) { running.stream.statistics.stalled == 1 }, "the player that stopped reading was closed")
        XCTAssertGreaterThan(Date().timeIntervalSince(playing), 5, "not before its timeout")
        XCTAssertTrue(waitOnMainLoop(3) { running.stream.statistics.clients == 0 })
        // The stream goes on for the next player.
        let probe = try runWhileServing("/usr/bin/ffprobe", ["-v", "error", "-rtsp_transport", "tcp", "-show_entries", "stream=codec_name",
                                                             "-of", "csv=p=0", running.authorized], timeout: 15)
        XCTAssertEqual(probe.output.trimmingCharacters(in: .whitespacesAndNewlines), "h264", probe.output)
    }

    // MARK: Where it shows

    func testTheStatusAndTheMetricsGiveTheStreamAndItsClients() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false, console: true)
        defer { stop(running) }
        try ConsolePassword(storageDirectory: running.dir.file("chunks").path).set("console test password")
        let console = try Console(service: running.service)
        defer { console.stop() }
        let player = try RawRTSPClient(port: running.port)
        XCTAssertEqual(try player.play(running.url, authorization: RawRTSPClient.basic("viewer", Self.password)), 200)
        XCTAssertTrue(waitOnMainLoop(5) { running.stream.statistics.frames > 10 })
        let status = try runWhileServing("/usr/bin/curl", ["-s", "-u", "admin:console test password", "-H", "Host: box.local:\(console.port)",
                                                           "http://127.0.0.1:\(console.port)/api/v1/status"], timeout: 10).output
        let answer = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any], status)
        let stream = try XCTUnwrap(answer["stream"] as? [String: Any], status)
        XCTAssertEqual(stream["state"] as? String, "listening")
        XCTAssertEqual(stream["url"] as? String, "rtsp://127.0.0.1:\(running.port)/live", "listening on one address: that address")
        XCTAssertEqual(stream["user"] as? String, "viewer")
        XCTAssertEqual((stream["clients"] as? [[String: Any]])?.compactMap { $0["address"] as? String }, ["127.0.0.1"])
        XCTAssertGreaterThan(stream["frames"] as? Int ?? 0, 10)
        // The answer with its stream follows the API document.
        let document = try runWhileServing("/usr/bin/curl", ["-s", "-u", "admin:console test password",
                                                             "http://127.0.0.1:\(console.port)/api/v1/openapi.json"], timeout: 10).output
        let contract = try OpenAPIContract(Data(document.utf8))
        XCTAssertEqual(contract.problems(method: "GET", path: "/api/v1/status", status: 200, contentType: "application/json",
                                         body: Data(status.utf8)), [])
        let metrics = try runWhileServing("/usr/bin/curl", ["-s", "-u", "admin:console test password",
                                                            "http://127.0.0.1:\(console.port)/metrics"], timeout: 10).output
        XCTAssertTrue(metrics.contains("allspark_rtsp_clients 1"), metrics)
        XCTAssertTrue(metrics.contains("allspark_rtsp_frames_dropped_total 0"), metrics)
        XCTAssertTrue(metrics.split(separator: "\n").contains { $0.hasPrefix("allspark_rtsp_bytes_total ") && !$0.hasSuffix(" 0") }, metrics)
    }

    // MARK: Clients never cost the recording anything

    func testAStalledClientAndTenPlayersLeaveEveryCapturedFrameRecorded() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 640\nheight = 360\nframerate = 30\nbitrate_kbps = 1500",
                                faceBlur: false, extra: "max_clients = 12\nmax_clients_per_address = 12")
        let recorder = try XCTUnwrap(running.service.recorder)
        // A client that plays over TCP and never reads: its socket's buffers fill within a second.
        let stalled = try RawRTSPClient(port: running.port, receiveBuffer: 4096)
        XCTAssertEqual(try stalled.play(running.url, authorization: RawRTSPClient.basic("viewer", Self.password)), 200)
        // Ten players at once, each counting what it received in 5 s.
        let started = Date()
        let results = try runAll(Array(repeating: ["/usr/bin/ffprobe", "-v", "error", "-rtsp_transport", "tcp", "-read_intervals", "%+5",
                                                   "-select_streams", "v", "-count_packets", "-show_entries", "stream=nb_read_packets",
                                                   "-of", "csv=p=0", running.authorized], count: 10), timeout: 25)
        let elapsed = Date().timeIntervalSince(started)
        for (i, result) in results.enumerated() {
            XCTAssertEqual(result.status, 0, "player \(i): \(result.output)")
            let packets = Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").last ?? "") ?? 0
            // 5 s at 30 fps, less the wait for a keyframe (one a second) and the players' own start.
            XCTAssertGreaterThan(packets, 90, "player \(i) got \(packets) frames")
        }
        XCTAssertLessThan(elapsed, 20)
        let statistics = running.stream.statistics
        XCTAssertGreaterThan(statistics.frames, 100)
        stop(running)
        // Every frame captured reached the chunks, each once, while the clients pulled.
        let frames = recorder.frameStatistics
        XCTAssertGreaterThan(frames.captured, 200)
        XCTAssertEqual(frames.captured, frames.recorded, "no frame lost to the clients")
        var inChunks = 0
        for chunk in recorder.catalog.all { inChunks += try countFrames(in: recorder.catalog.url(of: chunk)) }
        XCTAssertEqual(inChunks, frames.recorded)
        XCTAssertEqual(recorder.streamTap.framesOffered, frames.recorded, "the stream's tap saw every recorded frame, once")
        _ = stalled
    }

    func testANewPlayerStartsWithinAKeyframeInterval() throws {
        let running = try start(pipeline: "pipelines/test.pipeline", variables: "width = 320\nheight = 240\nframerate = 15\nbitrate_kbps = 500",
                                faceBlur: false)
        defer { stop(running) }
        // A first player keeps the shared media running; the second joins it mid-stream.
        let first = try RawRTSPClient(port: running.port)
        XCTAssertEqual(try first.play(running.url, authorization: RawRTSPClient.basic("viewer", Self.password)), 200)
        for attempt in 0..<3 {
            // rtspsrc without a jitter buffer delay; the depayloader passes nothing before a keyframe; one frame ends it.
            let started = Date()
            let result = try runWhileServing("/usr/bin/gst-launch-1.0", [
                "-q", "rtspsrc", "location=\(running.url)", "user-id=viewer", "user-pw=\(Self.password)", "protocols=tcp", "latency=0", "!",
                "rtph264depay", "wait-for-keyframe=true", "!", "fakesink", "num-buffers=1"], timeout: 10)
            XCTAssertEqual(result.status, 0, result.output)
            // One keyframe a second (key-int-max = framerate), plus the RTSP exchange and gst-launch's own start.
            XCTAssertLessThan(Date().timeIntervalSince(started), 2.0, "attempt \(attempt)")
        }
    }
}
