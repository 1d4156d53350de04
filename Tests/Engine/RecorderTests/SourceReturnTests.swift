import ClockTesting
import GLibSupport
import Logging
import XCTest
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Issue 21: after a long camera outage the retry delay had doubled to
/// 30 s, so up to ~35 s more were lost once the camera was back. However
/// long the source was away, recording must resume within 5 s of its return,
/// and the failure repeated at every try is logged once.
final class SourceReturnTests: XCTestCase {
    func testASilentSourceIsReportedOnceNotAtEveryRetry() throws {
        let pipelines = TemporaryDirectory(), storage = TemporaryDirectory()
        let silent = pipelines.file("silent.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "  ! appsink name=blur_in", with: "  ! valve drop=true\n  ! appsink name=blur_in")
            .write(to: silent, atomically: true, encoding: .utf8)
        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                                                   "--set", "recording.pipeline=\(silent.path)", "--set", "recording.frame_timeout_s=1",
                                                   "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240", "--duration", "12"])
        let lines = run.output.split(separator: "\n")
        let tries = lines.filter { $0.contains("started \(silent.path)") }.count
        XCTAssertGreaterThanOrEqual(tries, 4, run.output)
        XCTAssertEqual(lines.filter { $0.contains("no frame reached the chunks within 1 s of starting") && $0.contains("warning") }.count, 1, run.output)
        XCTAssertLessThanOrEqual(lines.filter { $0.contains("no playable video") }.count, 1, run.output)
        XCTAssertEqual(lines.filter { $0.contains("discarding") }.count, 0, run.output)
    }

    func testRetriesNeverWaitLongerThanTwoSeconds() {
        var backoff = RetryBackoff()
        let delays = (0..<60).map { _ in backoff.next() }
        XCTAssertEqual(delays.first, 1)
        XCTAssertEqual(delays.max(), 2, "\(delays)")
    }

    func testASourceBackAfterALongOutageRecordsWithinFiveSeconds() throws {
        let storage = TemporaryDirectory()
        let inputs = TemporaryDirectory()
        let input = inputs.file("camera.mp4")
        let log = LogCapture()
        // The retries wait on a virtual clock: a 40 s outage costs no real time, and the
        // delay after the source's return is read off that clock.
        let clock = TestClock()
        let config = try testConfig(storage: storage.path, extra: ["recording.pipeline=\(repoPath("pipelines/file.pipeline"))",
                                                                   "pipeline.vars.input=\(input.path)"])
        let recorder = try Recorder(config: config, logger: log.logger, clock: clock, makeProcessor: { _ in PassThroughProcessor() })
        var started: [Date] = [], recording = false
        recorder.onStateChange = { state in
            if state == .waitingForSource { started.append(clock.now) }
            if state == .recording { recording = true }
        }
        try recorder.start()   // the "camera" (a file) is missing: the recorder keeps trying
        // Long enough for a doubling back-off to reach its 30 s (1 + 2 + 4 + 8 + 16 s).
        let outageStart = clock.now
        XCTAssertTrue(waitOnMainLoop(60, skipping: clock) { clock.now.timeIntervalSince(outageStart) >= 40 })
        XCTAssertFalse(recording)
        // The camera comes back: a 4 s clip, appearing whole (renamed into place).
        let scratch = inputs.file("camera.tmp.mp4")
        let made = try runTool("gst-launch-1.0", ["-q", "videotestsrc", "num-buffers=120", "!", "video/x-raw,width=320,height=240,framerate=30/1",
                                                  "!", "x264enc", "!", "mp4mux", "!", "filesink", "location=\(scratch.path)"])
        XCTAssertEqual(made.status, 0, made.output)
        try FileManager.default.moveItem(at: scratch, to: input)
        let backAt = clock.now
        XCTAssertTrue(waitOnMainLoop(15, skipping: clock) { started.contains { $0 >= backAt } }, "tried again")
        let tried = try XCTUnwrap(started.first { $0 >= backAt })
        XCTAssertLessThan(tried.timeIntervalSince(backAt), 2.5, "the next try comes within the retry interval of the source's return, not after a grown back-off")
        XCTAssertTrue(waitOnMainLoop(15) { recording }, "recording resumed")
        XCTAssertTrue(stopAndWait(recorder))

        // The failure, the same at every try, is said once at its level (then at debug).
        let failures = log.lines.filter { line in ["warning", "error", "critical"].contains { line.hasPrefix("\($0) cannot start recording") } }
        XCTAssertEqual(failures.count, 1, "\(failures)")
        let repeats = log.lines.filter { $0.hasPrefix("debug ") && $0.contains("cannot start recording") }
        XCTAssertGreaterThan(repeats.count, 10, "every try is still logged at debug")
    }
}
