import XCTest
import Logging
import RecorderService
import RecorderTestSupport
import SystemdSupport

/// The recorder as a systemd notify service: the real executable with
/// NOTIFY_SOCKET on a real unix datagram socket (what systemd listens on),
/// WATCHDOG_USEC, and stderr as journald's stream (JOURNAL_STREAM).
final class SystemdTests: XCTestCase {
    /// A unix datagram socket bound in a temporary folder, read as it arrives (as systemd does:
    /// its queue holds only a few datagrams): the sd_notify messages sent to it.
    final class NotifySocket: @unchecked Sendable {
        let path: String
        private let fd: Int32
        private let lock = NSLock()
        private var received: [String] = []
        private var done = false
        private let finished = DispatchSemaphore(value: 0)

        init(in folder: TemporaryDirectory) throws {
            path = folder.file("notify").path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            XCTAssertLessThan(bytes.count, MemoryLayout.size(ofValue: address.sun_path))
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw POSIXError(.EADDRNOTAVAIL) }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            Thread.detachNewThread { [self] in
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !lock.withLock({ done }) {
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n > 0 { lock.withLock { received.append(String(decoding: buffer[0..<n], as: UTF8.self)) } }
                }
                finished.signal()
            }
        }
        deinit { close(fd) }

        /// Every message received, in order; stops reading.
        func messages() -> [String] {
            lock.withLock { done = true }
            finished.wait()
            return lock.withLock { received }
        }
    }

    /// Runs `allspark-recorder run` to its end with `environment` added; stdout and stderr in one pipe.
    func runRecorder(_ arguments: [String], environment: [String: String], journalStream: Bool) throws -> (status: Int32, log: String) {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: recorderExecutable)
        process.arguments = ["run", "--config", repoPath("config/demo.toml"), "--set", "console.enabled=false",
                             "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240",
                             "--set", "pipeline.vars.bitrate_kbps=500"] + arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { $1 }
        if journalStream {
            // What systemd sets: the device and inode of the stream stderr is connected to.
            var status = stat()
            XCTAssertEqual(fstat(output.fileHandleForWriting.fileDescriptor, &status), 0)
            env["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        } else {
            env["JOURNAL_STREAM"] = nil
        }
        process.environment = env
        process.standardOutput = output
        process.standardError = output
        try process.run()
        try output.fileHandleForWriting.close()
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, log)
    }

    func lines(_ log: String) -> [String] { log.split(separator: "\n").map(String.init) }

    func testRecordingSaysReadyPingsTheWatchdogReportsStatusAndLogsEachLineWithItsPriority() throws {
        let folder = TemporaryDirectory()
        let notify = try NotifySocket(in: folder)
        let (status, log) = try runRecorder(["--set", "recording.storage_dir=\(folder.file("chunks").path)", "--duration", "4"],
                                            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "1000000"],
                                            journalStream: true)
        XCTAssertEqual(status, 0, log)
        let messages = notify.messages()
        let fields = messages.flatMap { $0.split(separator: "\n").map(String.init) }
        XCTAssertEqual(fields.filter { $0 == "READY=1" }.count, 1, "\(messages)")
        let ready = try XCTUnwrap(fields.firstIndex(of: "READY=1"))
        let pings = fields.indices.filter { fields[$0] == "WATCHDOG=1" }
        XCTAssertGreaterThanOrEqual(pings.count, 2, "pings at half of WATCHDOG_USEC while recording: \(messages)")
        XCTAssertTrue(pings.allSatisfy { $0 >= ready }, "no ping before frames flow: \(messages)")
        XCTAssertTrue(fields.contains { $0.hasPrefix("STATUS=recording 320x240") && $0.hasSuffix(", no server") }, "\(messages)")
        let stopping = try XCTUnwrap(fields.firstIndex(of: "STOPPING=1"), "\(messages)")
        XCTAssertFalse(pings.contains { $0 > stopping }, "no ping after STOPPING=1: \(messages)")

        // Every line carries its syslog priority for journald.
        for line in lines(log) {
            XCTAssertNotNil(line.range(of: #"^<[2-7]>"#, options: .regularExpression), "line without a priority: \(line)")
        }
        XCTAssertTrue(lines(log).contains("<4>allspark.run: privacy.face_blur = false: faces are recorded unblurred"), log)
        XCTAssertTrue(lines(log).contains { $0.hasPrefix("<5>Recording to ") }, log)
        XCTAssertTrue(lines(log).contains { $0.hasPrefix("<6>allspark.recorder: recorder: waiting for the source → recording") }, log)
    }

    func testAFrozenSourceNeverSaysReadyNorPingsTheWatchdog() throws {
        let folder = TemporaryDirectory()
        let notify = try NotifySocket(in: folder)
        // A live source whose frames never reach blur_in: a camera that delivers nothing.
        let pipeline = folder.file("frozen.pipeline")
        try """
            videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=240,framerate=30/1
              ! valve drop=true ! appsink name=blur_in
            appsrc name=blur_out ! videoconvert ! x264enc tune=zerolatency speed-preset=ultrafast
              ! h264parse ! splitmuxsink name=chunks
            """.write(to: pipeline, atomically: true, encoding: .utf8)
        // No JOURNAL_STREAM: the flag asks for the journald format.
        let (status, log) = try runRecorder(["--set", "recording.storage_dir=\(folder.file("chunks").path)",
                                             "--set", "recording.pipeline=\(pipeline.path)", "--set", "recording.frame_timeout_s=1",
                                             "--duration", "3", "--log-format", "journald"],
                                            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "500000"],
                                            journalStream: false)
        XCTAssertEqual(status, 1, "recorded nothing: \(log)")
        let messages = notify.messages()
        let fields = messages.flatMap { $0.split(separator: "\n").map(String.init) }
        XCTAssertFalse(fields.contains("READY=1"), "\(messages)")
        XCTAssertFalse(fields.contains("WATCHDOG=1"), "no frames, no pings: \(messages)")
        XCTAssertTrue(fields.contains("STATUS=waiting for the source, 0 chunks, no server"), "\(messages)")
        XCTAssertTrue(fields.contains("STOPPING=1"), "\(messages)")
        XCTAssertTrue(lines(log).contains { $0.hasPrefix("<4>allspark.recorder: waiting for the source: no frame reached the chunks") }, log)
        XCTAssertTrue(lines(log).contains { $0.hasPrefix("<3>allspark.run: recorded nothing in 3 s") }, log)
    }

    func testPlainLogsWhenStderrIsNotTheJournal() throws {
        let folder = TemporaryDirectory()
        let (status, log) = try runRecorder(["--set", "recording.storage_dir=\(folder.file("chunks").path)", "--duration", "1"],
                                            environment: ["JOURNAL_STREAM": "1:2"], journalStream: false)
        XCTAssertEqual(status, 0, log)
        XCTAssertTrue(lines(log).contains { $0.contains(" warning allspark.run: ") && $0.hasSuffix("faces are recorded unblurred") }, log)
        XCTAssertFalse(log.contains("<4>"), "an inherited JOURNAL_STREAM naming another stream is not the journal: \(log)")
    }

    func testTheWatchdogPingsOnlyWhileRecordedFramesGrow() {
        var watchdog = FrameWatchdog()
        XCTAssertFalse(watchdog.tick(recordedFrames: 0, recording: false))
        XCTAssertFalse(watchdog.tick(recordedFrames: 10, recording: false), "frames but not recording (stopping)")
        XCTAssertTrue(watchdog.tick(recordedFrames: 25, recording: true))
        XCTAssertTrue(watchdog.tick(recordedFrames: 40, recording: true))
        XCTAssertFalse(watchdog.tick(recordedFrames: 40, recording: true), "the source froze")
        XCTAssertFalse(watchdog.tick(recordedFrames: 40, recording: true))
        XCTAssertTrue(watchdog.tick(recordedFrames: 41, recording: true), "frames again")
    }

    func testPrioritiesFollowSyslog() {
        let expected: [(Logger.Level, Int)] = [(.critical, 2), (.error, 3), (.warning, 4), (.notice, 5), (.info, 6), (.debug, 7), (.trace, 7)]
        for (level, priority) in expected { XCTAssertEqual(JournaldLogHandler.priority(of: level), priority, "\(level)") }
        XCTAssertEqual(JournaldLogHandler.prefixed("disk full\nsecond line", level: .critical), "<2>disk full\n<2>second line\n")
    }
}
