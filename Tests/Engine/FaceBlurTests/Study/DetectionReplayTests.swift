import XCTest
@testable import FaceBlur
import RecorderCore
import GStreamerSupport
import RecorderTestSupport

/// Recorded detections (`DetectionEvidence`) and the score of what a run
/// hid (`HidingScore`): a replay answers as the record says, is exact when
/// nothing changed, and is judged by faces covered and picture hidden.
final class DetectionReplayTests: XCTestCase {
    let folder = TemporaryDirectory()

    func record(_ lines: [String]) throws -> String {
        let path = folder.file("record.jsonl").path
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testAReplayAnswersARecordedSearchExactlyAndAnotherFromTheFramesOtherSearches() throws {
        let replay = try DetectionEvidence.Replay(path: record([
            #"{"frame":3,"kind":"whole","region":[0,0,1280,720],"input":[640,352],"faces":[[100,100,80,100,0.9]],"seconds":0.05}"#,
            #"{"frame":3,"kind":"tile","region":[400,0,480,416],"input":[480,416],"faces":[[500,200,30,36,0.6],[600,50,12,14,0.4]],"seconds":0.04}"#,
            #"{"frame":3,"kind":"follow","region":[60,60,160,160],"input":[96,96],"faces":[[102,101,79,99,0.8]],"seconds":0.004}"#,
        ]))
        // The same search: what it found, and its time.
        let whole = replay.answer(frame: 3, kind: .whole, region: FaceRect(x: 0, y: 0, width: 1280, height: 720), input: (640, 352))
        XCTAssertEqual(whole.faces.map(\.rect), [FaceRect(x: 100, y: 100, width: 80, height: 100)])
        XCTAssertEqual(whole.seconds, 0.05)
        // A tile of another grid, at full resolution: the frame's faces whose centre it holds and that the
        // network finds at its scale (the 14 px face is too small at 1×, the 100 px face is outside).
        let tile = replay.answer(frame: 3, kind: .tile, region: FaceRect(x: 480, y: 0, width: 480, height: 416), input: (480, 416))
        XCTAssertEqual(tile.faces.map(\.rect), [FaceRect(x: 500, y: 200, width: 30, height: 36)])
        XCTAssertEqual(tile.seconds, 0.04, "the median time of the searches of its kind")
        // Enlarged 1.7×, the 14 px face is findable too.
        let enlarged = replay.answer(frame: 3, kind: .tile, region: FaceRect(x: 480, y: 0, width: 240, height: 240), input: (480, 416))
        XCTAssertEqual(Set(enlarged.faces.map(\.rect.height)), [36, 14])
        // The same face found twice on a frame is one face, at its best score.
        let around = replay.answer(frame: 3, kind: .follow, region: FaceRect(x: 50, y: 50, width: 200, height: 200), input: (96, 96))
        XCTAssertEqual(around.faces.map(\.score), [0.9])
        // Nothing recorded on a frame: nothing found.
        XCTAssertTrue(replay.answer(frame: 4, kind: .whole, region: FaceRect(x: 0, y: 0, width: 1280, height: 720), input: (640, 352)).faces.isEmpty)
        XCTAssertEqual(replay.counts, .init(exact: 1, approximate: 4))
    }

    func testABrokenRecordNamesTheFileTheLineAndWhatIsWrong() throws {
        let good = #"{"frame":0,"kind":"whole","region":[0,0,64,64],"input":[64,64],"faces":[],"seconds":0.01}"#
        let cases = [
            (#"{"frame":0,"kind":"whole","region":[0,0,64,64],"input":[64,64],"faces":[]}"#, "no \"seconds\""),
            (#"{"frame":0,"kind":"sideways","region":[0,0,64,64],"input":[64,64],"faces":[],"seconds":0.01}"#, "\"kind\""),
            (#"{"frame":0,"kind":"tile","region":[0,0,64],"input":[64,64],"faces":[],"seconds":0.01}"#, "4 region values"),
            ("{\"frame\":", "not JSON"),
        ]
        for (line, reason) in cases {
            let path = try record([good, "", line])
            XCTAssertThrowsError(try DetectionEvidence.Replay(path: path), line) { error in
                XCTAssertTrue("\(error)".hasPrefix("\(path):3: "), "\(error)")
                XCTAssertTrue("\(error)".contains(reason), "\(error)")
            }
        }
    }

    func testAFaceIsCoveredWhenNearlyAllOfItIsHiddenAndHidingElsewhereIsMeasured() {
        var score = HidingScore()
        let face = FaceRect(x: 100, y: 100, width: 40, height: 50)
        // Covered, with its margin; nothing else hidden.
        score.add(frame: 0, faces: [face], hidden: [face.expanded(by: 0.2)], width: 640, height: 360)
        // Half hidden; a face too small to count; a 100×100 region elsewhere (10,000 of the ~220,000 px outside the face).
        score.add(frame: 1, faces: [face, FaceRect(x: 300, y: 10, width: 16, height: 20)],
                  hidden: [FaceRect(x: 100, y: 100, width: 20, height: 50), FaceRect(x: 400, y: 200, width: 100, height: 100)],
                  width: 640, height: 360)
        // A face mostly outside the picture is not counted.
        score.add(frame: 2, faces: [FaceRect(x: -35, y: 0, width: 40, height: 50)], hidden: [], width: 640, height: 360)
        XCTAssertEqual(score.frames, 3)
        XCTAssertEqual(score.faceFrames, 2)
        XCTAssertEqual(score.covered, 1)
        XCTAssertEqual(score.uncovered.map(\.frame), [1])
        XCTAssertEqual(score.framesHidingBeyond, 1)
        XCTAssertEqual(score.beyondShareSum, 10_000 / (640 * 360 - 80 * 100), accuracy: 0.004)
    }

    /// The real network on a real clip: its record, replayed, hides exactly
    /// what the recorded run hid, with no network and every search found in
    /// the record.
    func testAReplayOfARecordedRunHidesExactlyWhatThatRunHid() throws {
        let input = try corpusFile("fer_test.mp4")
        let settings = try blurSettings()
        let recorder = try DetectionEvidence.Recorder(path: folder.file("fer_test.jsonl").path)
        var recorded: [[FaceRect]] = []
        let first = try OfflineBlur.run(input: input, output: folder.file("recorded.mp4").path, settings: settings,
                                        evidence: .record(recorder), observeHidden: { recorded.append($1) })
        XCTAssertGreaterThan(recorder.searches, 20)
        var replayed: [[FaceRect]] = []
        let replay = try DetectionEvidence.Replay(path: recorder.path)
        var noModel = settings
        noModel.modelPath = folder.file("no-such-model.onnx").path
        let second = try OfflineBlur.run(input: input, output: folder.file("replayed.mp4").path, settings: noModel,
                                         evidence: .replay(replay), observeHidden: { replayed.append($1) })
        XCTAssertEqual(second.replayed, .init(exact: recorder.searches, approximate: 0))
        XCTAssertEqual(first.framesOut, second.framesOut)
        XCTAssertEqual(recorded.count, first.framesOut)
        XCTAssertEqual(recorded, replayed)
        XCTAssertTrue(recorded.allSatisfy { !$0.isEmpty }, "her face is hidden on every frame")
    }
}

/// What `blur` runs with when no config is given (config/default.toml's defaults, offline).
func blurSettings() throws -> FaceBlurSettings {
    let document = try TOMLDocument(parsing: "[recording]\npipeline = \"unused\"", file: "(defaults)")
    let config = try ConfigLoader.make(document: document, file: "(defaults)", overrides: ["privacy.model=\(faceModelPath)"],
                                       hostName: "test")
    return FaceBlurSettings(config.privacy, offline: true)
}
