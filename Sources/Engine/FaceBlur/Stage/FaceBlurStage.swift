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

/// Hides every face before the frame reaches the encoder.
///
/// Design (speed with recall, and fail closed):
/// - Detection never runs on the frame path. Frames wait in a delay line;
///   detection threads run the passes `DetectionPlanner` chooses on the
///   held frames: whole-frame passes at `detectWidth` (640: faces from
///   ~45 px at 720p), full-resolution tiles for small faces (from
///   ~22 px), and cheap searches around each
///   face already found (96×96 network input, ~4 ms) every 2 to
///   `followEvery` frames (more often the faster it moves for its size),
///   which keep its position exact between the expensive passes. A face
///   found for the first time is also searched for backwards through the
///   held frames, so the frames before its discovery get its real position.
/// - Change gating: a part of the picture that has not changed since it
///   was searched is not searched again (until `recheckEvery` frames);
///   while it changes it is searched every `wholeEvery` (whole frame) or
///   `tileEvery` (tile) frames. A still scene costs almost nothing; a
///   moving camera gets the full schedule.
/// - A frame leaves the delay line once it is settled: every area was
///   searched on it or after it (or has not changed since), every face
///   followed was looked for on it or after it, no backward search is
///   still heading towards it. Regions come from `FaceTracker`: the
///   nearest observations before and after the frame, grown by the margin
///   and by motion over the gap, held for `hold` after a miss.
/// - Live and offline follow the same rules; live is the offline schedule
///   with a deadline. Offline (`realTime: false`) the frame path waits for
///   the detector (at most `maxQueuedFrames` held): nothing is guessed;
///   and the searches are planned and their outcomes applied in an order
///   fixed by the file alone (`planAhead`), so a file is blurred the same
///   way every time.
///   Live, a frame waits at most `maxLatency` (longer than a search cycle,
///   so only an overloaded machine reaches it). A frame that must leave
///   unsettled is degraded by region, not blacked out: besides the known
///   faces, every part of it that changed since the part around it was
///   last searched (`DetectionPlanner.unconfirmedCells`) is pixelated in
///   coarse cells; the parts a search confirmed stay sharp. Such frames
///   and the share of their area hidden are counted and logged. A fixed
///   camera loses only the moving parts; a moving camera the whole frame.
/// - Live, a forward follow may be answered by the face's template
///   (`FaceTemplate`, about a hundredth of a network run; at most
///   `templateFollows` in a row), which keeps a crowd within the detector's
///   budget. `whenBehind = .lowerFPS` instead records only frames searched
///   completely by themselves, taking in frames while a detection thread is free.
/// - A detector error makes the stage black out every frame from then on,
///   with a critical log line. A missing model fails `init` (the recorder
///   refuses to record).
/// - Anonymisation works in place on the I420/NV12 planes: Y is pixelated
///   in cells of 1/`cellsAcross` of the region; chroma the same at half size.
///
/// Threads and locks. One lock, `condition`, guards the delay line (`queue`),
/// the planner (scheduler, tracker, hiding policy), the counters, and, offline,
/// the planned passes and their outcomes. Who runs what:
/// - **The streaming thread** (GStreamer's, one call at a time: `process`,
///   `drain`). Outside the lock: the frame's 8×8 block means and the camera
///   motion estimate (about a millisecond at 720p), and the pixelation of the
///   frames that leave (`finish`). Under the lock: adding the frame to the
///   planner (linear in blocks and areas), and for each frame that leaves
///   its hidden regions (`DetectionPlanner.hiddenRegions`: linear in tracks
///   and their sightings) and, for a late frame, its unconfirmed cells
///   (linear in blocks). Offline it also plans the next searches and applies
///   their outcomes, in an order fixed by the file (`planAhead`,
///   `applyNextOutcome`), waiting on `condition` for the detection threads.
/// - **`workers` detection threads** (`detectionLoop`), each with its own
///   detectors. Under the lock: live, choosing the next search
///   (`DetectionPlanner.nextPass`) and copying the luma it needs; recording
///   what it found (`DetectionPlanner.record`: matching to tracks, linear in
///   the found boxes times the tracks). Outside it: the network run, tens of
///   milliseconds, the only slow step.
/// - **Live, one spare-time thread** (`spareTimeLoop`) in the kernel's idle
///   class, with its own detector and `SpareCPUMeter`: as a detection thread,
///   for the spare-time tiles only.
/// No network runs and no frame is pixelated under the lock, so the streaming
/// thread waits for the lock at most the length of one planner step.
public final class FaceBlurStage: FrameProcessor {
    public var name: String { "face blur (\(settings.mode.rawValue))" }

    public let settings: FaceBlurSettings
    private var searches: PrivacyTuning.Searches { settings.tuning.searches }
    private var hiding: PrivacyTuning.Hiding { settings.tuning.hiding }
    private let realTime: Bool
    private let logger: Logger
    /// Each detection thread's detectors: CenterFace in floating point for
    /// whole frames and tiles; for follows in 8-bit integers screened by the
    /// float network where that network is installed (else in floating point
    /// too); and YuNet when follows run on it first. 8 bits lose faces in tiles
    /// that the float network is sure of, on faces the calibration never saw,
    /// but not in follow squares (docs/privacy.md, Networks).
    private struct Detectors {
        var centerFace: any FaceDetecting
        var follows: any FaceDetecting
        var yuNet: (any FaceDetecting)?

        func centerFace(for kind: DetectionPlanner.Kind) -> any FaceDetecting {
            if case .follow = kind { return follows }
            return centerFace
        }
    }
    private let detectors: [Detectors]
    private let evidence: DetectionEvidence.Role?
    private let observeHidden: ((Int, [FaceRect]) -> Void)?
    /// The spare-time thread's detector (`spareTileScale`, live only).
    private let spareDetectors: Detectors?
    private let spareCPU: SpareCPU

    private let condition = MonotonicCondition()   // its timed waits run on the monotonic clock
    private var queue: [Pending] = []
    private var planner: DetectionPlanner?
    private var plannerGeneration = 0
    private var nextIndex = 0
    private var failure: String?
    private var stopping = false
    private var threads: [Thread] = []
    /// Detection threads still in their loop.
    private var runningWorkers = 0
    /// Offline (see `planAhead`): passes planned and not yet taken by a
    /// detection thread, numbered in the order planned; their outcomes, by
    /// number, until applied; the passes not yet applied, oldest first, with
    /// the frame taken in when each was planned; the next number to plan.
    private var plannedJobs: [(number: Int, job: DetectionJob)] = []
    private var outcomes: [Int: Outcome] = [:]
    private var unapplied: [(number: Int, frame: Int)] = []
    private var nextPlanned = 0

    /// Frame counts for logs, tests and benchmarks.
    public struct Counters: Equatable, Sendable {
        public var frames = 0
        public var framesWithFaces = 0
        /// Frames blacked out whole: the detector failed.
        public var blackedOut = 0
        /// Live frames that left after `maxLatency` before every search owed
        /// on them was done: besides the faces known, what no search
        /// confirmed was hidden (coarse cells).
        public var late = 0
        /// Of the late frames' area, the part hidden as unconfirmed (sum of fractions).
        public var unconfirmedArea = 0.0
        /// Frames that could not be anonymised and were not recorded at all.
        public var dropped = 0
        /// Live, `lower_fps`: frames not recorded because the stage was behind
        /// (not taken in, or not searched completely by their deadline).
        public var skipped = 0
        /// Offline: times no search was left to settle the oldest frame held,
        /// so the frames held left as late ones (a planner bug: 0 expected).
        public var stalls = 0
        public var wholeFramePasses = 0
        public var tilePasses = 0
        /// Of the tile searches, those on spare-time tiles (`spareTileScale`).
        public var spareTilePasses = 0
        /// Searches around faces already found (forwards and backwards).
        public var followPasses = 0
        /// Of the follows, those the face's template answered (no network run).
        public var templateFollows = 0
        /// Of the follows on YuNet, those that did not find the face and were searched again by CenterFace.
        public var followsRetried = 0
        public var detectionSeconds = 0.0
        /// Detection time by kind: whole frame, tiles, follow.
        public var wholeSeconds = 0.0, tileSeconds = 0.0, followSeconds = 0.0
    }
    private var countersStorage = Counters()
    /// `lower_fps`: the camera's motion over the frames not taken in (under `condition`).
    private var skippedMotion = Similarity.identity
    /// Each followed face's template, cut where the network last found it (under `condition`).
    private var templates: [Int: FaceTemplate] = [:]

    /// The same counts for monitoring (`/metrics`), through swift-metrics.
    private let metrics: StageMetrics
    /// Follows the camera's motion from the block means. Streaming thread
    /// only: measured outside the lock, so detection threads never wait for it.
    private var camera: CameraTracker?
    public var counters: Counters { condition.withLock { countersStorage } }
    /// Frames in the delay line now and how long the oldest has waited (ns): whether the stage is behind (health reports).
    public var held: (frames: Int, oldestWaitNs: UInt64) {
        condition.withLock { (queue.count, queue.first.map { Self.now() &- $0.arrival } ?? 0) }
    }

    struct Pending {
        var sample: Sample
        var index: Int
        var time: UInt64
        var arrival: UInt64
        var width: Int
        var height: Int
    }

    /// A pass and the luma of its region, copied under the lock.
    struct DetectionJob {
        var pass: DetectionPlanner.Pass
        /// Which planner chose it (a new one starts when the frame size changes).
        var generation: Int
        var luma: [UInt8]
        var width: Int
        var height: Int
        /// A forward follow the face's template may answer.
        var template: FaceTemplate?
    }

    /// `makeDetector` builds one detector per detection thread (default:
    /// CenterFace from `settings.modelPath`); tests pass a wrapped one.
    /// `metrics`: where the stage's counters and detection times go (the
    /// service's Prometheus registry); none for the offline `blur` command.
    /// `evidence`: every network search written to a record, or answered
    /// from one instead of the network (`DetectionEvidence`: no model is
    /// loaded then). `observeHidden`: told each frame's index and the
    /// regions hidden on it as it leaves (streaming thread, under the
    /// stage's lock: keep it short).
    public init(settings: FaceBlurSettings, realTime: Bool, logger: Logger = Logger(label: "allspark.faceblur"),
                metrics: MetricsFactory = NOOPMetricsHandler.instance, spareCPU: SpareCPU = .measured,
                evidence: DetectionEvidence.Role? = nil,
                observeHidden: ((_ frame: Int, _ regions: [FaceRect]) -> Void)? = nil,
                makeDetector: ((FaceBlurSettings) throws -> any FaceDetecting)? = nil) throws {
        self.settings = settings
        self.realTime = realTime
        self.spareCPU = spareCPU
        self.logger = logger
        self.evidence = evidence
        self.observeHidden = observeHidden
        var makeDetector = makeDetector
        if case .replay(let replay) = evidence {
            logger.info("face detection replays \(replay.path): no network runs")
            makeDetector = { _ in NoNetwork() }
        }
        self.metrics = StageMetrics(factory: metrics)
        // The detection threads load and drop networks whose activations are
        // tens of MB, and free on one thread what another allocated: with
        // glibc's per-thread arenas and rising mmap threshold that memory
        // stayed with the process (peak RSS well above what was in use).
        // Blocks from the size of the large activations up are mapped on their own.
        ProcessHeap.limitGrowth(mmapThreshold: 4 << 20)
        let workers = max(1, settings.workers)
        let spareTime = settings.plannedSearches(realTime: realTime).spareTileScale > 0 && settings.tuning.searches.tileEvery > 0
        // By default the detection threads share one set of networks: each
        // thread's own would keep every input size's activations per thread.
        let make: (FaceBlurSettings) throws -> any FaceDetecting = try makeDetector ?? {
            let shared = try FaceDetector.SharedNets(modelPath: settings.modelPath, threads: settings.threads,
                                                     sharers: workers + (spareTime ? 1 : 0), runtime: settings.runtime)
            if let reason = shared.fallbackReason {
                logger.warning("face detection runs on OpenCV DNN, 2 to 5 times slower than ONNX Runtime: \(reason)")
            } else {
                logger.info("face detection runs on \(shared.runtime == .onnxRuntime ? "ONNX Runtime" : "OpenCV DNN")")
            }
            return { _ in try FaceDetector(sharing: shared) }
        }()
        let quantized = try makeDetector != nil || settings.precision == .float ? nil
            : FaceDetector.SharedNets.quantized(besideModel: settings.modelPath, runtime: settings.runtime)
        if makeDetector == nil {
            switch (settings.precision, quantized) {
            case (.float, _): logger.info("face detection runs in floating point (privacy.precision = \"float\")")
            case (_, nil): logger.info("face detection runs in floating point: \(FaceDetector.quantizedModelName) is not installed beside the model, or ONNX Runtime is not used")
            case (_, .some): logger.info("face detection runs in floating point, follows on \(FaceDetector.quantizedModelName) (8-bit integers; what it is unsure of searched again in floating point)")
            }
        }
        let screened: (any FaceDetecting) throws -> any FaceDetecting = { float in
            guard let quantized else { return float }
            return ScreenedDetector(screen: try FaceDetector(sharing: quantized), reference: float)
        }
        // A replay's answers are final: a follow is not searched again on another network.
        let isReplay = if case .replay = evidence { true } else { false }
        let yuNetPath = settings.yuNetLibraryPath
            ?? ((settings.modelPath as NSString).deletingLastPathComponent as NSString).appendingPathComponent(YuNetDetector.libraryName)
        detectors = try (0..<workers).map { _ in
            let float = try make(settings)
            // A test that asks for YuNet with its own detector gets that detector for it too.
            let yuNet: (any FaceDetecting)? = settings.followNetwork != .yuNet || isReplay ? nil
                : makeDetector != nil ? float : try YuNetDetector(libraryPath: yuNetPath)
            return Detectors(centerFace: float, follows: try screened(float), yuNet: yuNet)
        }
        // Spare-time tiles are CenterFace searches only.
        spareDetectors = try spareTime ? try { let float = try make(settings); return Detectors(centerFace: float, follows: float, yuNet: nil) }() : nil
        runningWorkers = detectors.count + (spareDetectors == nil ? 0 : 1)
        for (i, detector) in detectors.enumerated() {
            start("face-detection-\(i + 1)") { [weak self] in self?.detectionLoop(detector) }
        }
        if let spareDetectors {
            start("face-spare-time") { [weak self] in self?.spareTimeLoop(spareDetectors) }
        }
    }

    private func start(_ name: String, _ body: @escaping () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.stackSize = 4 << 20
        threads.append(thread)
        thread.start()
    }

    /// Ends the detection thread (after `drain`); the stage is done.
    public func close() {
        let c = condition.withLock { () -> Counters in
            stopping = true
            condition.broadcast()
            // Let a pass under way finish: OpenCV must not be torn down under it at exit.
            let deadline = MonotonicCondition.deadline(after: 5)
            while runningWorkers > 0, MonotonicCondition.now < deadline { condition.wait(until: deadline) }
            return countersStorage
        }
        guard c.frames > 0 else { return }
        let passes = c.wholeFramePasses + c.tilePasses + c.followPasses
        logger.notice("face blur: \(c.frames) frames, \(c.framesWithFaces) with faces hidden, \(c.blackedOut) blacked out, \(c.dropped) dropped\(realTime ? ", \(c.skipped) not recorded (behind), \(c.late) late (\(String(format: "%.1f", c.unconfirmedArea / Double(max(1, c.late)) * 100)) % of their picture hidden as unconfirmed)" : c.stalls > 0 ? ", \(c.late) late after \(c.stalls) stalls" : ""); \(c.wholeFramePasses) whole-frame, \(c.tilePasses) tile (\(c.spareTilePasses) in spare time) and \(c.followPasses) follow detections (\(c.templateFollows) of them by template\(c.followsRetried > 0 ? ", \(c.followsRetried) searched again by CenterFace after YuNet missed" : ""); \(String(format: "%.1f + %.1f + %.1f s", c.wholeSeconds, c.tileSeconds, c.followSeconds)), \(passes > 0 ? Int(c.detectionSeconds / Double(passes) * 1000) : 0) ms each on average)")
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: Frame path

    public func process(_ frame: Sample) -> [Sample] {
        let time = UInt64(frame.runningTime ?? frame.presentationTime ?? 0)
        // 8×8 block means of the luma, for change gating (outside the lock).
        let blocks = try? frame.readingVideoFrame { f in
            (PlaneEditor.blockMeans(f.luma.data, width: f.width, height: f.height, stride: f.luma.stride,
                                    block: DetectionPlanner.block), f.width, f.height)
        }
        var motion = blocks.map { cameraMotion(to: $0.0, width: $0.1, height: $0.2) } ?? .identity
        condition.lock()
        countersStorage.frames += 1
        metrics.frames.increment()
        if blocks != nil, realTime, settings.whenBehind == .lowerFPS, planner != nil, !admit() {
            // Not taken in: the camera's motion over it still counts towards the next frame taken in.
            skippedMotion = motion.after(skippedMotion)
            noteSkipped()
            let ready = takeReady(force: false)
            condition.unlock()
            return finish(ready)
        }
        motion = motion.after(skippedMotion)
        skippedMotion = .identity
        let index = nextIndex
        nextIndex += 1
        var ready: [(Sample, Treatment)] = []
        if let (means, width, height) = blocks {
            if let p = planner, p.width != width || p.height != height {
                // A new frame size: let everything held go (unsettled parts hidden coarsely), start over.
                logger.warning("frame size changed from \(p.width)×\(p.height) to \(width)×\(height); face tracking starts over")
                ready += takeReady(force: true)
                planner = nil
            }
            if planner == nil {
                plannerGeneration += 1
                var tuning = settings.tuning
                tuning.searches = settings.plannedSearches(realTime: realTime)
                planner = DetectionPlanner(tuning: tuning, strict: settings.isStrict(realTime: realTime), width: width, height: height)
            }
            queue.append(Pending(sample: frame, index: index, time: time, arrival: Self.now(), width: width, height: height))
            planner!.add(index: index, time: time, blocks: means, cameraMotion: motion)
        } else {
            queue.append(Pending(sample: frame, index: index, time: time, arrival: Self.now(), width: 0, height: 0))
            fail("cannot read a frame for detection")
        }
        condition.broadcast()
        if !realTime {
            // Offline: wait for the detector rather than guess.
            // Longer than any search interval, or the oldest frame could wait for a frame that cannot come.
            let limit = max(searches.maxQueuedFrames, max(searches.wholeEvery, searches.tileEvery, searches.followEvery) + 4)
            // What was planned `applyLag` frames ago or earlier is applied first (waiting for it),
            // so that a face's next follow is planned from its last one.
            while let oldest = unapplied.first, oldest.frame <= index - Self.applyLag, applyNextOutcome() {}
            planAhead()
            while queue.count > limit, failure == nil, let first = queue.first,
                  !(planner?.isSettled(first.index) ?? true) {
                guard !unapplied.isEmpty else {
                    // Nothing runs and nothing is due, yet the oldest frame waits: no search will
                    // ever settle it. A planner bug, but a file must not hang on it: the frames
                    // held leave as late ones (what no search vouches for hidden coarsely).
                    countersStorage.stalls += 1
                    if countersStorage.stalls == 1 {
                        logger.error("face detection stalled on frame \(first.index) (\(planner!.holdUp(first.index))); the frames held were hidden as if late")
                    }
                    ready += takeReady(force: true)
                    break
                }
                guard applyNextOutcome() else { break }
                planAhead()
            }
        }
        ready += takeReady(force: false, keeping: framesKeptBack)
        condition.unlock()
        return finish(ready)
    }

    /// Offline: settled frames still held this long, so that a face first found by a later search is
    /// traced back onto them too. Settled is not final: a frame is settled once the whole frame and
    /// every tile were searched on it or after it, and a face the detector only finds a few frames
    /// later (coming in at a corner, half out of the picture) is then looked for backwards only
    /// through the frames still held. Held until a whole tile cycle has passed, a face entering at
    /// a corner is hidden on the frames before the search that found it as well.
    private var framesKeptBack: Int { realTime ? 0 : max(searches.wholeEvery, searches.tileEvery) }

    /// Under the lock, `lower_fps`: whether to take in this frame: only while
    /// fewer frames are held than there are detection threads, so that each
    /// frame taken in is searched completely right away.
    private func admit() -> Bool { queue.count < max(1, settings.workers) }

    /// Offline: passes planned ahead per detection thread, so that a thread
    /// done with a short follow finds the next passes waiting while another
    /// runs a tile: as fast as recording passes in the order they finished.
    static let planAheadPerWorker = 8
    /// Offline: frames taken in after a pass was planned by which its
    /// outcome is applied. Applied only when the oldest frame waited, a
    /// face's follows (each planned from the last one's outcome) fell
    /// behind while the decoder filled the delay line, and a big face leaving
    /// was next searched for many frames after its last sighting; with a lag
    /// of one frame the decoder waits on every pass. Two frames is the
    /// shortest lag at which neither happens.
    static let applyLag = 2

    /// Streaming thread, under the lock, offline: plans the passes due, up
    /// to `planAheadPerWorker` per detection thread outstanding.
    ///
    /// Offline, the result must not depend on which thread finishes first
    /// (before, two runs of `blur` on the same file could place different
    /// regions: each thread recorded what it found as it finished, and
    /// planned from whatever had been recorded and decoded by then). So the
    /// streaming thread plans every pass and applies every outcome, in the
    /// order planned (`applyNextOutcome`), and only at points fixed by the
    /// file: on taking in a frame, the passes planned `applyLag` frames
    /// before or earlier; and while the oldest frame waits.
    /// The detection threads only run the networks. The same file is
    /// blurred the same way every time.
    private func planAhead() {
        let most = max(1, settings.workers) * Self.planAheadPerWorker
        while unapplied.count < most, failure == nil, let pass = planner?.nextPass() {
            switch copyRegion(for: pass) {
            case .job(let job):
                planner?.begin(pass)
                plannedJobs.append((nextPlanned, job))
                unapplied.append((nextPlanned, nextIndex - 1))
                nextPlanned += 1
                condition.broadcast()
            case .outsidePicture:
                // No picture to search: nothing is there (see `detectionLoop`).
                planner?.record(pass, found: [])
            case .failed:
                return   // `fail` ended detection
            }
        }
    }

    /// Streaming thread, under the lock, offline: waits for the outcome of
    /// the oldest pass not yet applied, and applies it; false when there is
    /// none, or detection failed or stopped first.
    @discardableResult
    private func applyNextOutcome() -> Bool {
        guard let number = unapplied.first?.number else { return false }
        while outcomes[number] == nil, failure == nil, !stopping { condition.wait() }
        guard failure == nil, let outcome = outcomes.removeValue(forKey: number) else { return false }
        unapplied.removeFirst()
        apply(outcome)
        return true
    }

    /// Under the lock: one more frame not recorded because the stage is behind (`lower_fps`).
    private func noteSkipped() {
        countersStorage.skipped += 1
        metrics.skipped.increment()
        let n = countersStorage.skipped
        if n == 1 || n % 100 == 0 {
            logger.warning("face detection is behind: \(n) frames so far not recorded, so that every frame recorded is searched completely (privacy.when_behind = \"lower_fps\")")
        }
    }

    /// Streaming thread: how the picture moved since the previous frame (none after a size change).
    private func cameraMotion(to means: [UInt8], width: Int, height: Int) -> Similarity {
        guard camera?.fits(means) ?? false else {
            camera = CameraTracker(first: means, width: width, height: height)
            return .identity
        }
        return camera!.next(means)
    }

    public func drain() -> [Sample] {
        condition.lock()
        // Let the detector finish the tail (passes due later run on the last frame), then release everything.
        planner?.drain()
        condition.broadcast()
        if !realTime {
            planAhead()
            while failure == nil, heldFramesUnsettled(), applyNextOutcome() { planAhead() }
        }
        let deadline = MonotonicCondition.deadline(after: realTime ? 5 : 120)
        while failure == nil, heldFramesUnsettled(), MonotonicCondition.now < deadline {
            condition.wait(until: deadline)
        }
        let ready = takeReady(force: true)
        condition.unlock()
        return finish(ready)
    }

    /// Under the lock: whether the oldest or the newest frame held still waits for a search.
    private func heldFramesUnsettled() -> Bool {
        guard let first = queue.first, let last = queue.last, let planner else { return false }
        return !planner.isSettled(first.index) || !planner.isSettled(last.index)
    }

    /// What to do to a frame before it leaves.
    enum Treatment {
        /// Hide these faces, and (a frame that left unsettled) coarsely
        /// pixelate these cells that no search confirmed.
        case hide(faces: [FaceRect], unconfirmed: [FaceRect], cell: Int)
        /// The detector failed: nothing in the frame is vouched for.
        case blackOut
    }

    /// Under the lock: frames that may leave now, and what to hide in them.
    /// `keeping`: frames to hold back even when settled (unless forced).
    private func takeReady(force: Bool, keeping: Int = 0) -> [(Sample, Treatment)] {
        var ready: [(Sample, Treatment)] = []
        let now = Self.now()
        while let first = queue.first, force || queue.count > keeping {
            let settled = failure == nil && (planner?.isSettled(first.index) ?? false)
            let waitedTooLong = realTime && now - first.arrival > settings.maxLatencyNs
            guard settled || waitedTooLong || force || failure != nil else { break }
            queue.removeFirst()
            // (`planner!` below, not a local copy: a copy would make removing the oldest frame copy the delay line.)
            guard failure == nil, planner != nil else {
                countersStorage.blackedOut += 1
                metrics.blackedOut.increment()
                ready.append((first.sample, .blackOut))
                continue
            }
            if !settled, realTime, settings.whenBehind == .lowerFPS {
                // Not searched completely in time: not recorded (those recorded keep their true times).
                noteSkipped()
                if planner!.oldest?.index == first.index { planner!.removeOldest() }
                continue
            }
            let hidden = planner!.hiddenRegions(forFrame: first.index)
            let faces = hidden.map(\.rect)
            if !faces.isEmpty {
                countersStorage.framesWithFaces += 1
                metrics.framesWithFaces.increment()
                metrics.facesHidden.increment(by: faces.count)
            }
            var unconfirmed: [FaceRect] = []
            let cell = unconfirmedCell(height: first.height)
            if !settled {
                // Late (or the end of the stream): hide what no search vouches for, not the whole frame.
                unconfirmed = planner!.unconfirmedCells(first.index, cell: cell)
                countersStorage.late += 1
                metrics.late.increment()
                let area = unconfirmed.reduce(0) { $0 + $1.width * $1.height } / Double(max(1, first.width * first.height))
                countersStorage.unconfirmedArea += area
                let n = countersStorage.late
                if n == 1 || n % 100 == 0 {
                    logger.warning("face detection is behind: \(n) frames so far left before every search they needed was done; in each, what no search confirmed was pixelated coarsely (this one: \(Int((area * 100).rounded())) % of the picture)")
                }
            }
            if logger.logLevel <= .trace {
                let speed = planner!.frame(first.index)?.cameraSpeed ?? 0
                logger.trace("frame \(first.index) at \(first.time / 1_000_000) ms: hiding \(hidden), \(unconfirmed.count) unconfirmed runs, camera \(speed > settings.tuning.tracking.stillCameraSpeed ? "moving" : "still") (\(String(format: "%.1f", speed)) px)")
            }
            observeHidden?(first.index, faces + unconfirmed)
            ready.append((first.sample, .hide(faces: faces, unconfirmed: unconfirmed, cell: cell)))
            if planner!.oldest?.index == first.index { planner!.removeOldest() }
        }
        return ready
    }

    /// The coarse cell for unconfirmed parts: a fraction of the frame
    /// height, a multiple of the change blocks.
    private func unconfirmedCell(height: Int) -> Int {
        let block = DetectionPlanner.block
        return max(4 * block, Int((Double(height) * settings.tuning.hiding.unconfirmedCellFraction / Double(block)).rounded()) * block)
    }

    /// Outside the lock: pixelate, fill or black out.
    private func finish(_ ready: [(Sample, Treatment)]) -> [Sample] {
        ready.compactMap { sample, treatment in
            do {
                return try sample.modifyingVideoFrame { frame in
                    switch treatment {
                    case .hide(let faces, let unconfirmed, let cell):
                        for region in unconfirmed { pixelate(region, cell: cell, in: frame) }
                        hide(faces, in: frame)
                    case .blackOut:
                        blackOut(frame)
                    }
                }
            } catch {
                // A frame we cannot write is a frame we cannot vouch for: drop it.
                let dropped = condition.withLock { () -> Int in countersStorage.dropped += 1; return countersStorage.dropped }
                metrics.dropped.increment()
                if dropped == 1 || dropped % 300 == 0 {
                    logger.critical("cannot anonymise frames (\(error)); dropped \(dropped) so far")
                }
                return nil
            }
        }
    }

    private func hide(_ regions: [FaceRect], in frame: VideoFrame) {
        for region in regions {
            switch settings.mode {
            case .pixelate:
                pixelate(region, cell: max(hiding.minimumCell, Int(min(region.width, region.height)) / hiding.cellsAcross), in: frame)
            case .fill:
                fillBlack(region, in: frame)
            }
        }
    }

    /// Pixelates `region` (luma and chroma) in cells of `cell` pixels.
    private func pixelate(_ region: FaceRect, cell: Int, in frame: VideoFrame) {
        let half = FaceRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2)
        let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
        let y = frame.planes[0]
        PlaneEditor.pixelate(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, cell: cell)
        if frame.format == .i420 {
            for p in frame.planes[1...2] {
                PlaneEditor.pixelate(p.data, width: cw, height: ch, stride: p.stride, rect: half, cell: max(2, cell / 2))
            }
        } else {
            PlaneEditor.pixelate(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride,
                                 channels: 2, rect: half, cell: max(2, cell / 2))
        }
    }

    private func blackOut(_ frame: VideoFrame) {
        fillBlack(FaceRect(x: 0, y: 0, width: Double(frame.width), height: Double(frame.height)), in: frame)
    }

    /// Paints `region` black (luma 16, neutral chroma).
    private func fillBlack(_ region: FaceRect, in frame: VideoFrame) {
        let half = FaceRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2)
        let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
        let y = frame.planes[0]
        PlaneEditor.fill(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, value: 16)
        if frame.format == .i420 {
            for p in frame.planes[1...2] { PlaneEditor.fill(p.data, width: cw, height: ch, stride: p.stride, rect: half, value: 128) }
        } else {
            PlaneEditor.fill(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride, channels: 2, rect: half, value: 128)
        }
    }

    private func fail(_ reason: String) {
        guard failure == nil, !stopping else { return }
        failure = reason
        logger.critical("face detection failed (\(reason)); every frame is blacked out from now on")
        condition.broadcast()
    }

    // MARK: Detection thread

    /// A detection thread: runs the passes the planner holds frames for, as
    /// they come due (live), or the passes the streaming thread planned, in
    /// the order planned (offline, see `planAhead`).
    private func detectionLoop(_ detectors: Detectors) {
        defer { condition.withLock { runningWorkers -= 1; condition.broadcast() } }
        while true {
            condition.lock()
            var job: DetectionJob?
            var planned: Int?
            while !stopping {
                if !realTime {
                    if !plannedJobs.isEmpty {
                        (planned, job) = plannedJobs.removeFirst()
                        break
                    }
                } else if failure == nil, let pass = planner?.nextPass() {
                    switch copyRegion(for: pass) {
                    case .job(let made):
                        job = made
                        planner?.begin(pass)
                    case .outsidePicture:
                        // No picture to search: nothing is there. (Left unrun, the pass would
                        // stay due, hold every other one back, and the frames with it.)
                        planner?.record(pass, found: [])
                        continue
                    case .failed:
                        continue   // `fail` ended detection
                    }
                    break
                }
                condition.wait()
            }
            guard let job, !stopping else { condition.unlock(); return }
            condition.unlock()
            if let planned {
                let outcome = detect(job, on: detectors)
                condition.withLock {
                    outcomes[planned] = outcome
                    condition.broadcast()
                }
            } else {
                run(job, on: detectors)
            }
        }
    }

    /// Spare time: how many spare cores (`SpareCPUMeter`, over windows of
    /// `spareWindow` seconds) the spare-time thread needs to search at all.
    /// In the kernel's idle class it yields to everything else by itself,
    /// and the minimum only keeps it from starting searches that would
    /// crawl on crumbs and come back stale; where the idle class is refused
    /// (a seccomp filter), it runs at normal priority and its own time is
    /// not spare, so it stops while fewer than `spareMinimumAtNormalPriority`
    /// cores are idle: the rest of the box keeps a margin.
    static let spareWindow = 0.2, spareMinimum = 0.25, spareMinimumAtNormalPriority = 0.5

    /// The spare-time thread: spare-time tiles (`DetectionPlanner.nextSparePass`)
    /// in the kernel's idle class, one after another while any is due and the
    /// machine has CPU to spare; a pass never holds a frame back. It holds
    /// the stage's lock only to copy a tile and record what it found; set
    /// aside inside, it runs again as soon as a core goes idle, which the
    /// thread waiting on the lock frees (no live run, with one core busy
    /// either, had a late frame).
    private func spareTimeLoop(_ detectors: Detectors) {
        defer { condition.withLock { runningWorkers -= 1; condition.broadcast() } }
        let refused = IdlePriority.enterForThisThread()
        if let refused {
            logger.warning("face blur: the spare-time searches run at normal priority, only while half a core is idle: the kernel refused them its idle class (SCHED_IDLE: \(refused))")
        }
        let idleClass = refused == nil
        let minimum = idleClass ? Self.spareMinimum : Self.spareMinimumAtNormalPriority
        var meter = SpareCPUMeter(spareCPU, countsOwnTime: idleClass)   // this thread's own
        meter.start()
        var spare = 0.0   // none until measured
        /// Waits `seconds` or until the stage stops; true when it stops.
        func rest(_ seconds: Double) -> Bool {
            condition.withLock { () -> Bool in
                let until = MonotonicCondition.deadline(after: seconds)
                while !stopping, MonotonicCondition.now < until { condition.wait(until: until) }
                return stopping
            }
        }
        while true {
            if meter.elapsed >= Self.spareWindow {
                spare = meter.spareCores()
                meter.start()
            }
            // Why spare time searched nothing, in the trace log: too little CPU to spare, or no tile due.
            guard spare >= minimum else {
                logger.trace("spare time: \(String(format: "%.2f", spare)) cores spare, below \(minimum): no search")
                if rest(Self.spareWindow) { return }
                continue
            }
            let job = condition.withLock { () -> DetectionJob? in
                guard !stopping, failure == nil, let pass = planner?.nextSparePass(),
                      case .job(let job) = copyRegion(for: pass) else { return nil }
                planner?.begin(pass)
                return job
            }
            guard let job else {
                logger.trace("spare time: \(String(format: "%.2f", spare)) cores spare, no spare-time tile due")
                if rest(Self.spareWindow / 4) { return }
                continue
            }
            run(job, on: detectors)
        }
    }

    /// What a detection thread made of a job: the face its template found
    /// (`template`), or the network's answer; and how long it took.
    struct Outcome {
        var job: DetectionJob
        var template: FaceRect?
        var result: Result<[FaceDetection], Error> = .success([])
        var retried = false
        var seconds = 0.0
    }

    /// Detection thread, outside the lock: runs `job` and records what it found.
    private func run(_ job: DetectionJob, on detectors: Detectors) {
        let outcome = detect(job, on: detectors)
        condition.withLock {
            apply(outcome)
            condition.broadcast()
        }
    }

    /// Detection thread, outside the lock: runs `job` (its template first, if it has one).
    private func detect(_ job: DetectionJob, on detectors: Detectors) -> Outcome {
        let started = Self.now()
        if let found = matchTemplate(job) {
            return Outcome(job: job, template: found, seconds: Double(Self.now() - started) / 1e9)
        }
        if case .replay(let replay) = evidence {
            let (faces, seconds) = replay.answer(job.pass)
            // Live, the answer takes as long as the search did (a relative sleep: a wall-clock step does not stretch it).
            if realTime, seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
            let (ox, oy) = (job.pass.region.x, job.pass.region.y)
            let local = faces.map { FaceDetection(rect: $0.rect.offsetBy(dx: -ox, dy: -oy), score: $0.score) }
            return Outcome(job: job, result: .success(local), seconds: seconds)
        }
        var retried = false
        let result: Result<[FaceDetection], Error> = Result {
            try job.luma.withUnsafeBufferPointer { luma in
                let whole = FaceRect(x: 0, y: 0, width: Double(job.width), height: Double(job.height))
                let onCenterFace = {
                    try detectors.centerFace(for: job.pass.kind).detect(luma: luma.baseAddress!, width: job.width, height: job.height, stride: job.width,
                                                    region: whole, input: job.pass.input, keepAspect: job.pass.keepAspect,
                                                    threshold: self.searches.threshold)
                }
                guard let yuNet = detectors.yuNet, case .follow = job.pass.kind, let expected = job.pass.expected else {
                    return try onCenterFace()
                }
                let input = self.searches.yuNetFollowInput
                let local = FaceRect(x: expected.x - job.pass.region.x, y: expected.y - job.pass.region.y,
                                     width: expected.width, height: expected.height)
                let (faces, again) = try Self.follow(expecting: local, yuNet: {
                    try yuNet.detect(luma: luma.baseAddress!, width: job.width, height: job.height, stride: job.width,
                                     region: whole, input: (input, input), keepAspect: job.pass.keepAspect,
                                     threshold: self.searches.yuNetThreshold)
                }, centerFace: onCenterFace)
                retried = again
                return faces
            }
        }
        let elapsed = Self.now() - started
        metrics.detection(job.pass.kind).recordNanoseconds(Int64(elapsed))
        if case .record(let recorder) = evidence, case .success(let faces) = result {
            let (ox, oy) = (job.pass.region.x, job.pass.region.y)
            recorder.record(DetectionEvidence.Search(job.pass, faces: faces.map { FaceDetection(rect: $0.rect.offsetBy(dx: ox, dy: oy), score: $0.score) },
                                                     seconds: Double(elapsed) / 1e9))
        }
        return Outcome(job: job, result: result, retried: retried, seconds: Double(elapsed) / 1e9)
    }

    /// Under the lock: records what a search found in the planner (unless
    /// the planner it was planned by was replaced since), and counts it.
    private func apply(_ outcome: Outcome) {
        let (job, seconds) = (outcome.job, outcome.seconds)
        let current = planner != nil && job.generation == plannerGeneration
        if let found = outcome.template {
            guard current else { return }
            // Logged like the network's finds, so that a trace shows every sighting of a face.
            logger.debug("detection on frame \(job.pass.frame), \(job.pass.kind) \(job.pass.region) by template: [\"\(found)\"]")
            planner?.record(job.pass, found: [found], byTemplate: true)
            countersStorage.templateFollows += 1
            countersStorage.detectionSeconds += seconds
            countPass(job.pass.kind, seconds: seconds)
            return
        }
        countersStorage.detectionSeconds += seconds
        if outcome.retried { countersStorage.followsRetried += 1 }
        switch outcome.result {
        case .success(let faces):
            let (ox, oy) = (job.pass.region.x, job.pass.region.y)
            let found = faces.map { FaceRect(x: $0.rect.x + ox, y: $0.rect.y + oy, width: $0.rect.width, height: $0.rect.height) }
            if logger.logLevel <= .debug {
                logger.debug("detection on frame \(job.pass.frame), \(job.pass.kind) \(job.pass.region): \(zip(found, faces).map { "\($0.0) \(String(format: "%.2f", $0.1.score))" })")
            }
            if current {
                let sightings = planner?.record(job.pass, found: found) ?? []
                if searches.templateFollows > 0, planner?.strict == false { keepTemplates(of: sightings, frame: job.pass.frame) }
                countPass(job.pass.kind, seconds: seconds)
            }
        case .failure(let error):
            fail("\(error)")
        }
    }

    /// A follow run on YuNet first: YuNet's faces, unless they do not
    /// include the one `expected`; then CenterFace searches again (it finds
    /// more of the small, dark, turned and half-cut faces), so a follow
    /// misses only when both miss. (Asking CenterFace only on the miss that
    /// gives a face up would leave the first miss of a trace back at the
    /// picture's edge unchecked, and by the second the square has grown too
    /// large for a small face.)
    /// `retried`: CenterFace searched.
    static func follow(expecting expected: FaceRect,
                       yuNet: () throws -> [FaceDetection],
                       centerFace: () throws -> [FaceDetection]) rethrows -> (faces: [FaceDetection], retried: Bool) {
        let faces = try yuNet()
        if faces.contains(where: { FaceTracker.distance(expected, $0.rect) < 1 }) { return (faces, false) }
        return (try centerFace(), true)
    }

    /// Under the lock: one more search of `kind` done (by the network or a template), and its time.
    private func countPass(_ kind: DetectionPlanner.Kind, seconds: Double) {
        switch kind {
        case .whole:
            countersStorage.wholeFramePasses += 1
            countersStorage.wholeSeconds += seconds
        case .tile:
            countersStorage.tilePasses += 1
            countersStorage.tileSeconds += seconds
            if planner?.isSpareTime(kind) == true { countersStorage.spareTilePasses += 1 }
        case .follow:
            countersStorage.followPasses += 1
            countersStorage.followSeconds += seconds
        }
    }

    /// Detection thread, outside the lock: the face a forward follow looks
    /// for, found by its template around where it is expected (frame pixels),
    /// or nil: the network must look.
    private func matchTemplate(_ job: DetectionJob) -> FaceRect? {
        guard let template = job.template, let expected = job.pass.expected else { return nil }
        let (ox, oy) = (job.pass.region.x, job.pass.region.y)
        let local = FaceRect(x: expected.x - ox, y: expected.y - oy, width: expected.width, height: expected.height)
        let hit = job.luma.withUnsafeBufferPointer { luma in
            template.find(in: luma.baseAddress!, width: job.width, height: job.height, stride: job.width, around: local)
        }
        guard let box = hit?.box else { return nil }
        return FaceRect(x: box.x + ox, y: box.y + oy, width: box.width, height: box.height)
    }

    /// Under the lock: the templates of faces the network just found on
    /// held frame `index`; templates of tracks that ended are let go.
    private func keepTemplates(of sightings: [DetectionPlanner.Sighting], frame index: Int) {
        guard !sightings.isEmpty, let first = queue.first, index >= first.index, index - first.index < queue.count else { return }
        let pending = queue[index - first.index]
        let cut = try? pending.sample.readingVideoFrame { f in
            sightings.compactMap { s in
                FaceTemplate(luma: f.luma.data, width: f.width, height: f.height, stride: f.luma.stride, box: s.rect).map { (s.track, $0) }
            }
        }
        for (track, template) in cut ?? [] { templates[track] = template }
        if let planner, templates.count > 2 * planner.tracker.trackCount + 16 {
            let live = Set(planner.tracker.trackIDs)
            templates = templates.filter { live.contains($0.key) }
        }
    }

    /// What `copyRegion` made of a pass.
    enum RegionCopy {
        case job(DetectionJob)
        /// The region holds no pixel of the picture (nothing there to find).
        case outsidePicture
        /// The frame could not be read (detection failed: `fail`).
        case failed
    }

    /// Under the lock: a copy of the luma under `pass.region` of its frame.
    private func copyRegion(for pass: DetectionPlanner.Pass) -> RegionCopy {
        guard let first = queue.first, pass.frame >= first.index, pass.frame - first.index < queue.count else {
            // The planner holds exactly the frames queued: a pass for another is a bug, and a search skipped.
            fail("a search was planned on frame \(pass.frame), which is not held")
            return .failed
        }
        let pending = queue[pass.frame - first.index]
        let r = pass.region
        // A region may reach beyond the frame by less than the frame's size
        // (`DetectionPlanner.wholeFramePad`, follows at an edge): the picture
        // is mirrored there.
        let x0 = max(-(pending.width - 1), Int(r.x.rounded(.down))), y0 = max(-(pending.height - 1), Int(r.y.rounded(.down)))
        let x1 = min(2 * pending.width - 1, Int(r.maxX.rounded(.up))), y1 = min(2 * pending.height - 1, Int(r.maxY.rounded(.up)))
        guard x1 > max(0, x0), y1 > max(0, y0), x0 < pending.width, y0 < pending.height else { return .outsidePicture }
        do {
            let (w, h) = (x1 - x0, y1 - y0)
            let luma = try pending.sample.readingVideoFrame { f -> [UInt8] in
                var out = [UInt8](repeating: 0, count: w * h)
                let mirror = { (v: Int, n: Int) -> Int in v < 0 ? -v : (v >= n ? 2 * (n - 1) - v : v) }
                let inside = (max(0, x0), min(f.width, x1))
                out.withUnsafeMutableBufferPointer { dst in
                    for row in 0..<h {
                        let src = f.luma.data + mirror(y0 + row, f.height) * f.luma.stride
                        let line = dst.baseAddress! + row * w
                        (line + (inside.0 - x0)).update(from: src + inside.0, count: inside.1 - inside.0)
                        for x in x0..<inside.0 { line[x - x0] = src[mirror(x, f.width)] }
                        for x in inside.1..<x1 { line[x - x0] = src[mirror(x, f.width)] }
                    }
                }
                return out
            }
            var copied = pass
            copied.region = FaceRect(x: Double(x0), y: Double(y0), width: Double(w), height: Double(h))
            var template: FaceTemplate?
            if pass.mayUseTemplate, case .follow(let id, false) = pass.kind { template = templates[id] }
            return .job(DetectionJob(pass: copied, generation: plannerGeneration, luma: luma, width: w, height: h, template: template))
        } catch {
            fail("cannot read a frame for detection: \(error)")
            return .failed
        }
    }
}

/// The privacy stage's counts as swift-metrics counters and timers. The
/// handles are made once: making one per frame would cost a registry lookup.
struct StageMetrics {
    let frames, framesWithFaces, facesHidden, blackedOut, late, skipped, dropped: CoreMetrics.Counter
    let wholeFrame, tile, follow: CoreMetrics.Timer

    init(factory: MetricsFactory) {
        func counter(_ name: String) -> CoreMetrics.Counter { CoreMetrics.Counter(label: "allspark_privacy_\(name)_total", factory: factory) }
        frames = counter("frames")
        framesWithFaces = counter("frames_with_faces")
        facesHidden = counter("faces_hidden")
        blackedOut = counter("frames_blacked_out")
        late = counter("frames_late")
        skipped = counter("frames_skipped")
        dropped = counter("frames_dropped")
        func timer(_ pass: String) -> CoreMetrics.Timer {
            CoreMetrics.Timer(label: "allspark_face_detection_seconds", dimensions: [("pass", pass)], preferredDisplayUnit: .seconds, factory: factory)
        }
        (wholeFrame, tile, follow) = (timer("whole"), timer("tile"), timer("follow"))
    }

    func detection(_ kind: DetectionPlanner.Kind) -> CoreMetrics.Timer {
        switch kind {
        case .whole: return wholeFrame
        case .tile: return tile
        case .follow: return follow
        }
    }
}
