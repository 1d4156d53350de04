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
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        var finished: [String] = []
        recorder.onChunkFinished = { finished.append($0.record.file) }
        try recorder.start()
        var states: [String] = []
        // Something else on the box fills the disk mid-recording.
        let filler = mountPoint.file("other-program.dat")
        let fill = (at: 7.0, run: {
            // Every free byte, as a runaway log file would.
            _ = FileManager.default.createFile(atPath: filler.path, contents: nil)
            guard let handle = FileHandle(forWritingAtPath: filler.path) else { return }
            let block = Data(count: 64 * 1024)
            while (try? handle.write(contentsOf: block)) != nil {}
            try? handle.close()
        })
        runMainLoop(seconds: 24, actions: [fill] + (1...23).map { t in (at: Double(t), run: { states.append("\(recorder.state)") }) })
        let stateAtEnd = recorder.state
        XCTAssertTrue(stopAndWait(recorder))

        XCTAssertTrue(states.contains { $0.contains("to retry") }, "the full disk stopped the pipeline at least once: \(states)")
        if case .stopped = stateAtEnd { XCTFail("a full disk must not stop the service") }
        let kept = recorder.catalog.all
        XCTAssertGreaterThan(finished.count, kept.count, "old chunks were deleted to make room: \(finished) vs \(kept.map(\.file))")
        XCTAssertGreaterThan(finished.count, 5, "recording went on after the disk filled (6 MiB holds about 5 chunks)")
        XCTAssertGreaterThan(finished.firstIndex(of: kept.last?.file ?? "") ?? 0, 4, "chunks kept coming after the filler")
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: mountPoint.path).filter { $0.hasPrefix("chunk_") }.sorted()
        XCTAssertEqual(onDisk, kept.map(\.file).sorted())
        for chunk in kept {
            XCTAssertNotNil(try discover(recorder.catalog.url(of: chunk)).duration, "\(chunk.file) is intact")
        }
    }
}
