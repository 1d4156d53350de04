import GLibSupport
import XCTest
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// A real full file system: a small tmpfs mounted for the test (needs root).
final class FullDiskTests: XCTestCase {
    func testFullDiskFreesSpaceAndKeepsRecording() throws {
        let mountPoint = TemporaryDirectory("allspark-fulldisk")
        let mounted = try runTool("mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", mountPoint.path])
        guard mounted.status == 0 else { throw XCTSkip("cannot mount a tmpfs here (needs root): \(mounted.output)") }
        defer { _ = try? runTool("umount", ["-l", mountPoint.path]) }

        let pipelines = TemporaryDirectory()
        let noise = pipelines.file("noise.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "pattern=ball", with: "pattern=snow")
            .write(to: noise, atomically: true, encoding: .utf8)
        // The limit is far above the disk: only the disk's free space bounds the buffer.
        let config = try testConfig(storage: mountPoint.path, extra: [
            "recording.pipeline=\(noise.path)", "pipeline.vars.bitrate_kbps=4000", "recording.buffer_max_mb=100"])
        // The retries after the full disk only wait (1 s, 2 s …): in virtual time; the recording is real.
        let clock = TestClock()
        let recorder = try Recorder(config: config, clock: clock, makeProcessor: { _ in PassThroughProcessor() })
        var finished: [String] = []
        recorder.onChunkFinished = { finished.append($0.record.file) }
        var states: [String] = []
        recorder.onStateChange = { states.append("\($0)") }
        try recorder.start()
        // Something else on the box fills the disk mid-recording, once a few chunks are there.
        XCTAssertTrue(waitOnMainLoop(20) { finished.count >= 3 }, "recording before the disk fills")
        let filler = mountPoint.file("other-program.dat")
        // Every free byte, as a runaway log file would.
        _ = FileManager.default.createFile(atPath: filler.path, contents: nil)
        if let handle = FileHandle(forWritingAtPath: filler.path) {
            let block = Data(count: 64 * 1024)
            while (try? handle.write(contentsOf: block)) != nil {}
            try? handle.close()
        }
        let filledAt = finished.count
        // 6 MiB holds about 5 chunks: recording goes on past them, deleting the oldest to make room.
        XCTAssertTrue(waitOnMainLoop(40, skipping: clock) {
            states.contains { $0.contains("to retry") } && finished.count > max(5, filledAt + 2)
        }, "the full disk stopped the pipeline at least once and recording went on: \(states), \(finished.count) chunks")
        let stateAtEnd = recorder.state
        XCTAssertTrue(stopAndWait(recorder))

        XCTAssertTrue(states.contains { $0.contains("to retry") }, "the full disk stopped the pipeline at least once: \(states)")
        if case .stopped = stateAtEnd { XCTFail("a full disk must not stop the service") }
        let kept = recorder.catalog.all
        XCTAssertGreaterThan(finished.count, kept.count, "old chunks were deleted to make room: \(finished) vs \(kept.map(\.file))")
        XCTAssertGreaterThan(finished.count, 5, "recording went on after the disk filled (6 MiB holds about 5 chunks)")
        XCTAssertGreaterThan(finished.firstIndex(of: kept.last?.file ?? "") ?? 0, filledAt, "chunks kept coming after the filler")
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: mountPoint.path).filter { $0.hasPrefix("chunk_") }.sorted()
        XCTAssertEqual(onDisk, kept.map(\.file).sorted())
        for chunk in kept {
            XCTAssertNotNil(try discover(recorder.catalog.url(of: chunk)).duration, "\(chunk.file) is intact")
        }
    }
}
