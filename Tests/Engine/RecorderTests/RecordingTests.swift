import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Records the live test source for real and checks the files with
/// gst-discoverer-1.0 and a demuxing frame counter.
final class RecordingTests: XCTestCase {
    /// One frame at 30 fps.
    let frame = 1.0 / 30

    func makeRecorder(_ storage: TemporaryDirectory, extra: [String] = []) throws -> Recorder {
        let config = try testConfig(storage: storage.path, extra: extra)
        return try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
    }

    /// Checks what every recording must satisfy and returns the chunks.
    @discardableResult
    func checkChunks(_ recorder: Recorder, storage: TemporaryDirectory, file: StaticString = #filePath, line: UInt = #line) throws -> [ChunkRecord] {
        let chunks = recorder.catalog.all
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: storage.path).filter { $0 != ChunkCatalog.indexFileName }.sorted()
        XCTAssertEqual(onDisk, chunks.map(\.file).sorted(), "catalog and disk agree; no partial file is left", file: file, line: line)
        var frames = 0
        for (index, chunk) in chunks.enumerated() {
            let parsed = try XCTUnwrap(ChunkName.parse(chunk.file), file: file, line: line)
            XCTAssertEqual(parsed.startMs, Int64((chunk.start * 1000).rounded(.down)), "named after its start", file: file, line: line)
            XCTAssertEqual(parsed.format, chunk.format, file: file, line: line)
            let report = try discover(recorder.catalog.url(of: chunk))
            let duration = try XCTUnwrap(report.duration, "\(chunk.file) is playable: \(report.output)", file: file, line: line)
            XCTAssertEqual(duration, chunk.duration, accuracy: frame + 0.001, "\(chunk.file): catalog duration matches the file", file: file, line: line)
            let size = try FileManager.default.attributesOfItem(atPath: recorder.catalog.url(of: chunk).path)[.size] as? NSNumber
            XCTAssertEqual(size?.int64Value, chunk.size, file: file, line: line)
            frames += try countFrames(in: recorder.catalog.url(of: chunk))
            if index > 0 {
                let gap = chunk.start - chunks[index - 1].end
                XCTAssertGreaterThanOrEqual(gap, -0.0005, "no overlap between \(chunks[index - 1].file) and \(chunk.file)", file: file, line: line)
                XCTAssertLessThan(gap, 0.070, "contiguous: \(chunks[index - 1].file) → \(chunk.file)", file: file, line: line)
            }
        }
        let stats = recorder.frameStatistics
        XCTAssertEqual(frames, stats.recorded, "every recorded frame is in exactly one chunk", file: file, line: line)
        XCTAssertEqual(stats.captured, stats.recorded, "no frame lost between blur_in and blur_out", file: file, line: line)
        return chunks
    }

    func testRecordsContiguousTimedChunks() throws {
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        let startedAt = Date().timeIntervalSince1970
        try recorder.start()
        // Four full chunks (waiting for them, not for a fixed time), then the stop finishes a fifth.
        XCTAssertTrue(waitOnMainLoop(20) { recorder.catalog.all.count >= 4 }, "\(recorder.state)")
        XCTAssertTrue(stopAndWait(recorder))
        let chunks = try checkChunks(recorder, storage: storage)
        XCTAssertGreaterThanOrEqual(chunks.count, 4)
        XCTAssertTrue(chunks.allSatisfy { $0.format == .mp4 && $0.file.hasSuffix(".mp4") })
        for chunk in chunks.dropLast() {
            XCTAssertEqual(chunk.duration, 2.0, accuracy: frame / 2, "\(chunk.file) is a full 2 s chunk")
        }
        let first = try XCTUnwrap(chunks.first)
        XCTAssertEqual(first.start, startedAt, accuracy: 1.5, "chunk start is wall-clock capture time")
        XCTAssertEqual(recorder.catalog.chunks(from: chunks[1].start + 0.1, to: chunks[2].start + 0.1).map(\.file),
                       [chunks[1].file, chunks[2].file])
        XCTAssertEqual(try ChunkCatalog.readIndex(of: storage.url), chunks, "the index on disk is current")

        // The CLI lists the same chunks as JSON.
        let listed = try runTool(recorderExecutable, ["chunks", "--storage", storage.path, "--json"])
        XCTAssertEqual(listed.status, 0, listed.output)
        let decoded = try JSONDecoder().decode([ChunkRecord].self, from: Data(listed.output.utf8))
        XCTAssertEqual(decoded, chunks)
        let ranged = try runTool(recorderExecutable, ["chunks", "--storage", storage.path, "--json",
                                                      "--from", String(chunks[1].start + 0.1), "--to", String(chunks[1].end - 0.1)])
        XCTAssertEqual(try JSONDecoder().decode([ChunkRecord].self, from: Data(ranged.output.utf8)).map(\.file), [chunks[1].file])
        // As the help shows it: a negative time with a space, not only --from=-300.
        let recent = try runTool(recorderExecutable, ["chunks", "--storage", storage.path, "--json", "--from", "-300"])
        XCTAssertEqual(recent.status, 0, recent.output)
        XCTAssertEqual(try JSONDecoder().decode([ChunkRecord].self, from: Data(recent.output.utf8)), chunks)
        let version = try runTool(recorderExecutable, ["--version"])
        XCTAssertEqual(version.output.trimmingCharacters(in: .whitespacesAndNewlines), ProductVersion.current)
    }

    func testRecordsMov() throws {
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage, extra: ["recording.video_format=mov"])
        try recorder.start()
        XCTAssertTrue(waitOnMainLoop(15) { recorder.catalog.all.count >= 1 }, "\(recorder.state)")
        XCTAssertTrue(stopAndWait(recorder))
        let chunks = try checkChunks(recorder, storage: storage)
        XCTAssertGreaterThanOrEqual(chunks.count, 2)
        for chunk in chunks {
            XCTAssertTrue(chunk.file.hasSuffix(".mov"))
            XCTAssertEqual(chunk.format, .mov)
            XCTAssertTrue(try discover(recorder.catalog.url(of: chunk)).output.lowercased().contains("quicktime"))
        }
    }

    func testLiveRetuneChangesDurationAndContainerWithoutLosingFrames() throws {
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        // Once the first chunk is finished (the second being written), then until two new ones are.
        XCTAssertTrue(waitOnMainLoop(15) { recorder.catalog.all.count >= 1 }, "\(recorder.state)")
        let switchedAt = Date().timeIntervalSince1970
        let changes = recorder.retune(RecordingTuning(videoFormat: .mov, chunkDurationMs: 3000, bufferMaxMB: 200))
        XCTAssertTrue(waitOnMainLoop(20) { recorder.catalog.all.filter { $0.format == .mov }.count >= 2 }, "\(recorder.state)")
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertEqual(changes.count, 2, "\(changes)")
        let chunks = try checkChunks(recorder, storage: storage)
        let before = chunks.filter { $0.format == .mp4 }
        let after = chunks.filter { $0.format == .mov }
        XCTAssertGreaterThanOrEqual(before.count, 1)
        XCTAssertGreaterThanOrEqual(after.count, 3)
        XCTAssertTrue(before.allSatisfy { $0.start < switchedAt }, "mp4 only before the change")
        XCTAssertLessThan(after.first!.start - switchedAt, 1.5, "the container changes at the next keyframe")
        for chunk in after.dropFirst().dropLast() {
            XCTAssertEqual(chunk.duration, 3.0, accuracy: frame / 2, "\(chunk.file) has the new length")
        }
    }

    /// The container a chunk file really has, as gst-discoverer-1.0 reads it.
    func writtenContainer(_ file: URL) throws -> VideoFormat? {
        let output = try discover(file).output
        if output.contains("container format: ISO MP4/M4A") { return .mp4 }
        if output.contains("container format: Quicktime") { return .mov }
        return nil
    }

    /// Two container switches and a length change in one breath (a server
    /// that changes its mind, a SIGHUP after a clientConfig): each applies
    /// in order, the next switch only once the previous swap is done, and
    /// the new sink gets the length asked last. Before the chunk timeline
    /// the second switch linked nothing (files kept coming as mov while the
    /// setting said mp4) and the new sink kept the old length.
    func testTwoSwitchesAndALengthChangeWithinASecondApplyInOrder() throws {
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        var changes: [[String]] = []
        // Once the first chunk is finished (the second being written).
        XCTAssertTrue(waitOnMainLoop(15) { recorder.catalog.all.count >= 1 }, "\(recorder.state)")
        let requestedAt = Date().timeIntervalSince1970
        // In the same loop turn, so the first swap still waits for its keyframe.
        changes.append(recorder.retune(RecordingTuning(videoFormat: .mov, chunkDurationMs: 2000, bufferMaxMB: 200)))
        changes.append(recorder.retune(RecordingTuning(videoFormat: .mp4, chunkDurationMs: 2000, bufferMaxMB: 200)))
        changes.append(recorder.retune(RecordingTuning(videoFormat: .mp4, chunkDurationMs: 3000, bufferMaxMB: 200)))
        // Until two chunks are finished after the last mov one (the stop then finishes a third).
        XCTAssertTrue(waitOnMainLoop(25) {
            let chunks = recorder.catalog.all
            guard let lastMov = chunks.lastIndex(where: { $0.format == .mov }) else { return false }
            return chunks.count - lastMov - 1 >= 2
        }, "\(recorder.catalog.all.map(\.file))")
        let asked = RecordingTuning(videoFormat: .mp4, chunkDurationMs: 3000, bufferMaxMB: 200)
        XCTAssertEqual(recorder.currentTuning, asked)
        XCTAssertEqual(recorder.config.tuning, asked, "the config says what the recorder does")
        XCTAssertEqual(recorder.session?.chunkTimeline.written, ChunkSettings(asked), "the sink writes what was asked last")
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertEqual(changes.map(\.count), [1, 1, 1], "\(changes)")

        let chunks = try checkChunks(recorder, storage: storage)
        for chunk in chunks {
            XCTAssertEqual(try writtenContainer(recorder.catalog.url(of: chunk)), chunk.format, "\(chunk.file) is the container it is named")
            XCTAssertGreaterThan(chunk.duration, frame / 2, "\(chunk.file) holds at least a frame")
        }
        // mp4, then the mov asked first, then mp4 again: one run per switch, in order.
        var runs: [VideoFormat] = []
        for chunk in chunks where runs.last != chunk.format { runs.append(chunk.format) }
        XCTAssertEqual(runs, [.mp4, .mov, .mp4], "\(chunks.map(\.file))")
        let firstMov = try XCTUnwrap(chunks.firstIndex { $0.format == .mov })
        XCTAssertTrue(chunks[..<firstMov].allSatisfy { $0.start < requestedAt }, "mp4 only before the change")
        let last = try XCTUnwrap(chunks.last)
        XCTAssertEqual(last.format, recorder.currentTuning.videoFormat, "the final setting is what is written")
        let lastMov = try XCTUnwrap(chunks.lastIndex { $0.format == .mov })
        let afterSwitches = Array(chunks[(lastMov + 1)...])
        XCTAssertGreaterThanOrEqual(afterSwitches.count, 3, "\(chunks.map(\.file))")
        XCTAssertLessThan((afterSwitches.first?.start ?? .infinity) - requestedAt, 1.5, "both switches happen at the next keyframes")
        for chunk in afterSwitches.dropLast() {
            XCTAssertEqual(chunk.duration, 3.0, accuracy: frame / 2, "\(chunk.file) has the length asked last")
        }
    }

    func testTinyBufferKeepsOnlyTheNewestChunks() throws {
        let storage = TemporaryDirectory()
        // Noise does not compress: each 2 s chunk is about 1 MiB.
        let pipelines = TemporaryDirectory()
        let pipeline = pipelines.file("noise.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "pattern=ball", with: "pattern=snow")
            .write(to: pipeline, atomically: true, encoding: .utf8)
        let recorder = try makeRecorder(storage, extra: ["recording.buffer_max_mb=2", "recording.pipeline=\(pipeline.path)",
                                                         "pipeline.vars.bitrate_kbps=4000"])
        var finished: [ChunkRecord] = []
        var totals: [Int64] = []
        recorder.onChunkFinished = { chunk in
            finished.append(chunk.record)
            totals.append(recorder.catalog.totalBytes)
        }
        try recorder.start()
        // About 1 MiB a chunk against a 2 MiB buffer: by the fourth, retention has deleted some.
        XCTAssertTrue(waitOnMainLoop(25) { finished.count >= 4 }, "\(recorder.state)")
        XCTAssertTrue(stopAndWait(recorder))
        let kept = recorder.catalog.all
        XCTAssertGreaterThan(finished.count, kept.count, "retention deleted chunks")
        XCTAssertTrue(totals.allSatisfy { $0 <= 2 * 1_048_576 }, "after each chunk the buffer is within the limit: \(totals)")
        XCTAssertEqual(kept.map(\.file), finished.suffix(kept.count).map(\.file), "the newest chunks are the ones kept")
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: storage.path).filter { $0.hasPrefix("chunk_") }.sorted()
        XCTAssertEqual(onDisk, kept.map(\.file).sorted())
    }

    func testSourceThatFailsAndComesBack() throws {
        let storage = TemporaryDirectory()
        let inputs = TemporaryDirectory()
        let input = inputs.file("camera.mp4")
        // The backoff between retries only waits: in virtual time, so the test waits for the source alone.
        let clock = TestClock()
        let config = try testConfig(storage: storage.path, extra: ["recording.pipeline=\(repoPath("pipelines/file.pipeline"))",
                                                                   "pipeline.vars.input=\(input.path)"])
        let recorder = try Recorder(config: config, clock: clock, makeProcessor: { _ in PassThroughProcessor() })
        try recorder.start()   // the file is missing: the recorder keeps retrying
        var retries = 0
        recorder.onStateChange = { if case .waitingToRetry = $0 { retries += 1 } }
        XCTAssertTrue(waitOnMainLoop(10, skipping: clock) { retries >= 2 }, "waits for the source and tries again: \(recorder.state)")
        if case .waitingToRetry = recorder.state {} else { XCTFail("expected to wait for the source, was \(recorder.state)") }
        // The "camera" comes back: a 2 s clip.
        _ = try runTool("gst-launch-1.0", ["-q", "videotestsrc", "num-buffers=60", "!", "video/x-raw,width=320,height=240,framerate=30/1",
                                           "!", "x264enc", "!", "mp4mux", "!", "filesink", "location=\(input.path)"])
        XCTAssertTrue(waitOnMainLoop(20, skipping: clock) { !recorder.catalog.all.isEmpty }, "recording resumed once the source was back")
        XCTAssertTrue(stopAndWait(recorder))
        let chunks = recorder.catalog.all
        XCTAssertGreaterThanOrEqual(chunks.count, 1, "recording resumed once the source was back")
        for chunk in chunks {
            XCTAssertNotNil(try discover(recorder.catalog.url(of: chunk)).duration, "\(chunk.file) playable")
        }
        // The 2 s file ended at least once and was restarted: still no frame lost inside a run.
        XCTAssertEqual(recorder.frameStatistics.captured, recorder.frameStatistics.recorded)
    }
}
