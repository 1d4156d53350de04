import CoreMetrics
import FaceDetectorSupport
import Foundation
import GStreamerSupport
import Logging
import Recorder

/// What the face-blur stage does and how hard it tries.
public struct FaceBlurSettings: Equatable, Sendable {
    public enum Mode: String, Sendable, CaseIterable { case pixelate, fill }
    /// Live, what gives when detection cannot keep up with the camera.
    public enum WhenBehind: String, Sendable, CaseIterable {
        /// Record every frame; a frame that must leave before it was searched
        /// completely has, besides the faces known, every part that no search
        /// confirmed pixelated in coarse cells.
        case pixelate
        /// Record only frames searched completely, each by itself: the whole
        /// frame and every tile on each frame that changed, no guessing
        /// between searches. The stage takes in a frame only while the
        /// detection threads have a free hand (fewer frames held than
        /// threads); the others, and a frame still unsearched at its
        /// deadline, are not recorded. A still scene keeps its full frame
        /// rate; a moving one gets what the detector can search. Frames not
        /// recorded are counted (`allspark_privacy_frames_skipped_total`)
        /// and logged; the recording keeps true timestamps, with fewer frames.
        case lowerFPS = "lower_fps"
    }

    public var modelPath: String
    /// What runs CenterFace: ONNX Runtime where installed (`auto`), else OpenCV DNN.
    public var runtime = InferenceRuntime.auto
    /// Which searches run CenterFace quantised to 8-bit integers.
    public var precision = SearchPrecision.auto
    public var mode: Mode = .pixelate
    /// The network the searches around known faces run on first (whole
    /// frames and tiles always run on CenterFace). On YuNet, a follow that
    /// does not find its face is searched again by CenterFace, so a follow
    /// misses only when both miss; its library must be installed (x86_64).
    /// CenterFace by default: YuNet saves some detection time at the same
    /// faces found, but its boxes hide beyond the faces more often.
    public var followNetwork = FaceNetwork.centerFace
    /// libfacedetection (default: beside the CenterFace model).
    public var yuNetLibraryPath: String?
    /// Every number the stage is tuned by (`PrivacyTuning.live` or `.offline`).
    public var tuning: PrivacyTuning
    /// Live: the longest a frame waits for the searches it needs. Longer
    /// than the search cycle (`tileEvery` frames and the searches themselves),
    /// so that the detector is late only when the machine cannot keep up;
    /// then the frame leaves with what no search confirmed hidden.
    public var maxLatencyNs: UInt64 = 2_500_000_000
    public var whenBehind = WhenBehind.pixelate
    /// Detection threads, each with its own detector (searches on different
    /// frames or faces run side by side).
    public var workers = 2
    /// OpenCV threads per detector (process-wide in OpenCV; ONNX Runtime runs
    /// each detection on the thread that asks for it). One thread per
    /// detector and two detectors beat one detector on two threads: OpenCV
    /// parallelises small network inputs poorly.
    public var threads = 1

    /// Defaults for live recording, or for the offline `blur` command (`PrivacyTuning.offline`).
    public init(modelPath: String, offline: Bool = false) {
        self.modelPath = modelPath
        tuning = offline ? .offline : .live
    }

    /// The schedule the planner runs, live (`realTime`) or offline.
    func plannedSearches(realTime: Bool) -> PrivacyTuning.Searches {
        tuning.searches.effective(realTime: realTime, strict: isStrict(realTime: realTime))
    }

    /// Live `when_behind = lower_fps`: every frame recorded is searched completely itself.
    func isStrict(realTime: Bool) -> Bool { realTime && whenBehind == .lowerFPS }
}
