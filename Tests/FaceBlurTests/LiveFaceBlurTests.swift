import GLibSupport
import XCTest
import FaceBlur
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// The stage in the live recorder: every captured frame goes through it
/// and into a chunk, in real time.
final class LiveFaceBlurTests: XCTestCase {
    /// Keeps every stage the recorder builds (the first only validates) so the test can read its counters.
    final class Stages { var all: [FaceBlurStage] = []; var last: FaceBlurStage? { all.last } }

    func recorderWithStages(_ config: RecorderConfig) throws -> (Recorder, Stages) {
        let stages = Stages()
        let recorder = try Recorder(config: config, makeProcessor: { config in
            let stage = try FaceBlurStage(settings: FaceBlurSettings(config.privacy), realTime: true)
            stages.all.append(stage)
            return stage
        })
        return (recorder, stages)
    }

    func testLiveRecordingThroughTheStageKeepsEveryFrame() throws {
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: ["privacy.face_blur=true", "privacy.model=\(faceModelPath)"])
        let (recorder, stages) = try recorderWithStages(config)
        try recorder.start()
        runMainLoop(seconds: 6.5)
        XCTAssertTrue(stopAndWait(recorder))
        let stats = recorder.frameStatistics
        XCTAssertGreaterThan(stats.captured, 150)
        XCTAssertEqual(stats.captured, stats.recorded, "the delay line gives back every frame")
        let counters = try XCTUnwrap(stages.last).counters
        XCTAssertEqual(counters.frames, stats.captured)
        XCTAssertGreaterThan(counters.wholeFramePasses, 10, "detection keeps running")
        XCTAssertLessThan(Double(counters.blackedOut), Double(counters.frames) * 0.05, "\(counters)")
        var framesInChunks = 0
        for chunk in recorder.catalog.all { framesInChunks += try countFrames(in: recorder.catalog.url(of: chunk)) }
        XCTAssertEqual(framesInChunks, stats.recorded)
    }

    func testDetectorErrorBlacksOutInsteadOfPassingFrames() throws {
        // A frame format the stage cannot read (RGB) is an error it must not pass through.
        let dir = TemporaryDirectory()
        let pipeline = dir.file("rgb.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "format=I420", with: "format=RGB")
            .write(to: pipeline, atomically: true, encoding: .utf8)
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: ["privacy.face_blur=true", "privacy.model=\(faceModelPath)",
                                                                   "recording.pipeline=\(pipeline.path)"])
        let (recorder, stages) = try recorderWithStages(config)
        try recorder.start()
        runMainLoop(seconds: 3)
        XCTAssertTrue(stopAndWait(recorder))
        let counters = try XCTUnwrap(stages.last).counters
        XCTAssertGreaterThan(counters.frames, 30)
        XCTAssertEqual(counters.wholeFramePasses, 0, "nothing could be detected")
        XCTAssertEqual(counters.dropped, counters.frames, "every frame was refused: \(counters)")
        XCTAssertEqual(recorder.frameStatistics.recorded, 0, "no frame reached the encoder")
        XCTAssertEqual(recorder.catalog.all, [], "nothing was recorded")
    }
}
