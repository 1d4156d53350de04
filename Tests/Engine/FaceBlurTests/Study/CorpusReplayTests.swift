import XCTest
@testable import FaceBlur
import RecorderCore
import GStreamerSupport
import RecorderTestSupport

/// The stage replayed on every video of the evaluation corpus from its
/// recorded detections (Replays/, `bench/replay-corpus --record` makes
/// them): what it hides, judged against each clip's faces, without the
/// network. A change to scheduling, tracking or hiding shows here as a
/// changed number on the clips it affects; `bench/replay-corpus` prints the
/// same table, and a change is kept only if the validation half holds.
final class CorpusReplayTests: XCTestCase {
    struct Expected {
        var clip: String
        var faceFrames: Int
        var covered: Int
        var framesHidingBeyond: Int
        /// The mean share of the picture outside the faces hidden, in %.
        var meanBeyondPercent: Double
        /// Every frame's hidden regions (`RegionDigest`): a change that moves any region by a
        /// hundredth of a pixel shows here, even where the scores above stay.
        var regions: String
    }

    /// Validation half first (bench/corpus/README.md). Not vtest.avi: its faces are all below
    /// `HidingScore.minimumFaceHeight` (bench/live-faces zooms into it instead).
    static let expected: [Expected] = [
        .init(clip: "fer_test.mp4", faceFrames: 115, covered: 115, framesHidingBeyond: 10, meanBeyondPercent: 0.377, regions: "e800175ea5fb8f81"),
        .init(clip: "fer_woman2.mp4", faceFrames: 464, covered: 464, framesHidingBeyond: 2, meanBeyondPercent: 0.004, regions: "119ee56371837283"),
        .init(clip: "feat_WolfgangLanger_Pexels.mp4", faceFrames: 472, covered: 472, framesHidingBeyond: 4, meanBeyondPercent: 0.033, regions: "6982d663d4f9224c"),
        .init(clip: "feat_face_noface.mov", faceFrames: 72, covered: 72, framesHidingBeyond: 67, meanBeyondPercent: 7.046, regions: "1a5b9a78fa65c644"),
        .init(clip: "carphone_pristine.mp4", faceFrames: 120, covered: 120, framesHidingBeyond: 0, meanBeyondPercent: 0, regions: "59674c468d40263d"),
        .init(clip: "bikes.mp4", faceFrames: 56, covered: 56, framesHidingBeyond: 118, meanBeyondPercent: 1.866, regions: "d4953fd9d5a31544"),
    ]

    func testEveryCorpusVideoReplaysToItsNumbers() throws {
        let settings = try blurSettings()
        for expected in Self.expected {
            let (score, replayed, digest) = try Self.replay(expected.clip, settings: settings)
            let name = (expected.clip as NSString).deletingPathExtension
            XCTAssertEqual(replayed.approximate, 0,
                           "\(name): the stage asked for searches its record lacks; bench/replay-corpus --record records them again")
            XCTAssertEqual(score.faceFrames, expected.faceFrames, "\(name): \(score)")
            XCTAssertEqual(score.covered, expected.covered, "\(name): \(score); not covered: \(score.uncovered.prefix(8).map { "frame \($0.frame) \($0.face)" })")
            XCTAssertEqual(score.framesHidingBeyond, expected.framesHidingBeyond, "\(name): \(score)")
            XCTAssertEqual(score.meanBeyondShare * 100, expected.meanBeyondPercent, accuracy: 0.005, "\(name): \(score)")
            XCTAssertEqual(digest.hex, expected.regions, "\(name): the hidden regions changed on some frame")
        }
    }

    /// A corpus video blurred offline with `settings`, its searches answered from its record: what
    /// was hidden, scored against its faces, and how many searches the record answered exactly.
    static func replay(_ clip: String, settings: FaceBlurSettings) throws -> (HidingScore, DetectionEvidence.Replay.Counts, RegionDigest) {
        let replays = repositoryRoot.appendingPathComponent("Tests/Engine/FaceBlurTests/Replays")
        let name = (clip as NSString).deletingPathExtension
        return try replay(input: try corpusFile(clip), record: replays.appendingPathComponent("\(name).detections.jsonl").path,
                          faces: replays.appendingPathComponent("\(name).faces.json").path, settings: settings)
    }

    static func replay(input: String, record: String, faces: String,
                       settings: FaceBlurSettings) throws -> (HidingScore, DetectionEvidence.Replay.Counts, RegionDigest) {
        let folder = TemporaryDirectory()
        let replay = try DetectionEvidence.Replay(path: record)
        let truth = try HidingScore.Truth(path: faces)
        var score = HidingScore()
        var digest = RegionDigest()
        let report = try OfflineBlur.run(input: input, output: folder.file("replayed.mp4").path, settings: settings,
                                         evidence: .replay(replay)) { frame, hidden in
            score.add(frame: frame, faces: truth.faces(onFrame: frame), hidden: hidden, width: truth.width, height: truth.height)
            digest.add(frame: frame, hidden: hidden)
        }
        guard report.framesOut == report.framesIn else {
            throw GStreamerError("\(input): \(report.framesOut) of \(report.framesIn) frames written")
        }
        return (score, report.replayed ?? .init(), digest)
    }
}

/// A fingerprint of every frame's hidden regions, rounded to a hundredth of a pixel (FNV-1a, 64 bits).
struct RegionDigest {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    var hex: String { String(value, radix: 16) }

    mutating func add(frame: Int, hidden: [FaceRect]) {
        let text = "\(frame):" + hidden.map { r in
            [r.x, r.y, r.width, r.height].map { String(format: "%.2f", $0) }.joined(separator: ",")
        }.joined(separator: ";") + "\n"
        for byte in text.utf8 { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    }
}
