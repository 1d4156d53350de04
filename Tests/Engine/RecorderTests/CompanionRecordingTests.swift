import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
import Storage
@testable import Recorder

/// The files beside a chunk (issue 12, items 1–3): timestamps, audio cut on
/// the chunk's clock, "none" for video; deleted with their chunk.
final class CompanionRecordingTests: XCTestCase {
    /// One AAC frame (1024 samples) or less: "within one audio buffer".
    let oneAudioBuffer = 1024.0 / 44_100 + 0.001

    func tuning(_ audio: AudioFormat, video: Bool = true) -> RecordingTuning {
        RecordingTuning(videoFormat: .mp4, chunkDurationMs: 3000, bufferMaxMB: 200, recordsVideo: video,
                        audioFormat: audio, timestampFormat: .txt, framerate: 15)
    }

    func testTimestampsAndAudioBesideEveryChunkAndVideoNone() throws {
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: ["recording.chunk_duration_ms=3000"])
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        try recorder.start()
        // Before the first chunk opens: it gets them.
        recorder.retune(tuning(.wav))
        var videoOffAt = 0.0, videoOnAt = 0.0
        runMainLoop(seconds: 12, actions: [
            // Applies to the chunk opened after ~6 s.
            (at: 4.5, run: { recorder.retune(self.tuning(.m4a)) }),
            (at: 7.5, run: {
                videoOffAt = Date().timeIntervalSince1970
                recorder.retune(self.tuning(.m4a, video: false))
            }),
            (at: 9.5, run: {
                videoOnAt = Date().timeIntervalSince1970
                recorder.retune(self.tuning(.none, video: true))
            }),
        ])
        XCTAssertTrue(stopAndWait(recorder))
        let chunks = recorder.catalog.all
        XCTAssertEqual(chunks.count, 4, "\(chunks.map(\.file))")
        guard chunks.count == 4 else { return }

        // No video between "none" (within one chunk: at the next keyframe) and its end.
        XCTAssertLessThan(chunks[2].end, videoOffAt + 1.1, "video stops at the next keyframe after videoFormat none")
        XCTAssertGreaterThan(chunks[3].start - chunks[2].end, 1.5, "no chunk while no video is recorded")
        // Its first frame may have been in the encoder when video resumed.
        XCTAssertGreaterThan(chunks[3].start, videoOnAt - 0.2, "video resumes at the next keyframe")

        let expectedAudio: [AudioFormat] = [.wav, .wav, .m4a, .none]
        for (chunk, audio) in zip(chunks, expectedAudio) {
            let ms = try XCTUnwrap(ChunkName.parse(chunk.file)).startMs
            // Timestamps: one line per frame, line 0 at the chunk's name.
            let text = try String(contentsOf: storage.file("timestamps_\(ms).txt"), encoding: .utf8)
            XCTAssertFalse(text.hasSuffix("\n"), "no trailing newline")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let frames = try countFrames(in: recorder.catalog.url(of: chunk))
            XCTAssertEqual(lines.count, frames, "\(chunk.file): one line per frame")
            XCTAssertEqual(Double(frames) / chunk.duration, 15, accuracy: 1, "the fps asked before the pipeline started fills ${framerate}")
            var previous: Int64 = 0
            for (index, line) in lines.enumerated() {
                let parts = line.components(separatedBy: " : ")
                XCTAssertEqual(parts.count, 2, "'\(line)'")
                XCTAssertEqual(parts.first, String(index))
                let time = try XCTUnwrap(Int64(parts.last ?? ""), "'\(line)'")
                if index == 0 { XCTAssertEqual(time, ms, "line 0 is the chunk's start") }
                XCTAssertGreaterThanOrEqual(time, previous)
                XCTAssertLessThan(Double(time) / 1000, chunk.end)
                previous = time
            }
            // Audio: named after the chunk, as long as the chunk.
            for format in AudioFormat.recorded {
                let url = storage.file("audio_\(ms).\(format.fileExtension)")
                XCTAssertEqual(FileManager.default.fileExists(atPath: url.path), format == audio, url.lastPathComponent)
            }
            if audio != .none {
                let report = try discover(storage.file("audio_\(ms).\(audio.fileExtension)"))
                let duration = try XCTUnwrap(report.duration, report.output)
                XCTAssertEqual(duration, chunk.duration, accuracy: oneAudioBuffer, "\(chunk.file): audio as long as the chunk")
                XCTAssertTrue(report.output.contains(audio == .wav ? "Uncompressed 16-bit PCM audio" : "MPEG-4 AAC"), report.output)
            }
        }
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: storage.path)
        XCTAssertFalse(onDisk.contains { $0.hasPrefix(".") && $0 != ".pins" }, "no temporary left: \(onDisk.sorted())")
        XCTAssertEqual(recorder.frameStatistics.captured, recorder.frameStatistics.recorded, "capture went on while no video was recorded")

        // Retention deletes a chunk with its companions.
        let firstMs = try XCTUnwrap(ChunkName.parse(chunks[0].file)).startMs
        let deleted = recorder.catalog.applyRetention { all, _ in [RetentionDeletion(chunk: all[0], reason: .overSizeLimit(maxBytes: 1))] }
        XCTAssertEqual(deleted.map(\.chunk.file), [chunks[0].file])
        for name in ["timestamps_\(firstMs).txt", "audio_\(firstMs).wav"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: storage.file(name).path), "\(name) went with its chunk")
        }

        // The repair keeps companions of chunks present, removes orphans and
        // interrupted companion writes, and leaves everything else alone.
        let secondMs = try XCTUnwrap(ChunkName.parse(chunks[1].file)).startMs
        for name in ["timestamps_42.txt", "audio_42.m4a", ".audio_\(secondMs).wav.tmp-abcdEFGH", "notes.txt", "audio_x.wav"] {
            try Data("x".utf8).write(to: storage.file(name))
        }
        let report = recorder.catalog.reconcile(probe: { MediaProbe.duration(of: $0) })
        XCTAssertEqual(report.orphans, ["audio_42.m4a", "timestamps_42.txt"])
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: storage.path))
        XCTAssertTrue(left.isSuperset(of: ["timestamps_\(secondMs).txt", "audio_\(secondMs).wav", "notes.txt", "audio_x.wav"]), "\(left.sorted())")
        XCTAssertFalse(left.contains(".audio_\(secondMs).wav.tmp-abcdEFGH"))
        XCTAssertEqual(recorder.catalog.all.count, 3)
    }

    /// A video source that ends beside a live audio source that never does:
    /// the source's end is still noticed at once (the audio path ends with it).
    func testAnEndingVideoSourceEndsTheAudioPathToo() throws {
        let storage = TemporaryDirectory(), inputs = TemporaryDirectory()
        let clip = inputs.file("clip.mp4"), pipeline = inputs.file("file-with-audio.pipeline")
        let made = try runTool("gst-launch-1.0", ["-q", "videotestsrc", "num-buffers=30", "!", "video/x-raw,width=320,height=240,framerate=30/1",
                                                  "!", "x264enc", "!", "mp4mux", "!", "filesink", "location=\(clip.path)"])
        XCTAssertEqual(made.status, 0, made.output)
        let text = try String(contentsOfFile: repoPath("pipelines/file.pipeline"), encoding: .utf8)
            + "\naudiotestsrc is-live=true ! audioconvert ! appsink name=audio_in\n"
        try text.write(to: pipeline, atomically: true, encoding: .utf8)
        let config = try testConfig(storage: storage.path, extra: ["recording.pipeline=\(pipeline.path)", "pipeline.vars.input=\(clip.path)",
                                                                   "recording.frame_timeout_s=30"])
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        try recorder.start()
        let noticed = waitOnMainLoop(10) { recorder.lastProblem == "the source ended" }
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertTrue(noticed, "the end of the video source is noticed, not left to the frame watchdog: \(recorder.lastProblem ?? "-")")
    }

    func testTimestampsText() {
        XCTAssertEqual(CompanionJob.timestampsText([1_700_000_000_000, 1_700_000_000_033]), "0 : 1700000000000\n1 : 1700000000033")
        XCTAssertEqual(CompanionJob.timestampsText([]), "")
    }
}
