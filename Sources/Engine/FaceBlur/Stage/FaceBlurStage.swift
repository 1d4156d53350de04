import CoreMetrics
import FaceDetectorSupport
import Foundation
import GStreamerSupport
import Logging
import Recorder

/// Hides every face before the frame reaches the encoder.
///
/// Design (speed with recall, and fail closed):
/// - Detection never runs on the frame path. Frames wait in a delay line;
///   detection threads run the passes `DetectionPlanner` chooses on the
///   held frames: whole-frame passes at `wholeWidth` (faces from about
///   45 px at 720p), full-resolution tiles for small faces (from about
///   22 px), and cheap searches around each
///   face already found (96×96 network input) every 2 to
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
///   still heading towards it. The tracker (`FaceTracker`) places each face
///   on it, and the hiding policy (`HidingPolicy`) decides what is hidden.
///   Every number these parts are tuned by is `settings.tuning` (`PrivacyTuning`).
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
///   in cells of 1/`cellsAcross` of the region; chroma the same at half size
///   (`FaceBlurStage+Pixels`).
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
    var searches: PrivacyTuning.Searches { settings.tuning.searches }
    var hiding: PrivacyTuning.Hiding { settings.tuning.hiding }
    let realTime: Bool
    let logger: Logger
    /// Each detection thread's detectors: CenterFace in floating point for
    /// whole frames and tiles; for follows in 8-bit integers screened by the
    /// float network where that network is installed (else in floating point
    /// too); and YuNet when follows run on it first. 8 bits lose faces in tiles
    /// that the float network is sure of, on faces the calibration never saw,
    /// but not in follow squares (docs/privacy.md, Networks).
    struct Detectors {
        var centerFace: any FaceDetecting
        var follows: any FaceDetecting
        var yuNet: (any FaceDetecting)?

        func centerFace(for kind: DetectionPlanner.Kind) -> any FaceDetecting {
            if case .follow = kind { return follows }
            return centerFace
        }
    }
    private let detectors: [Detectors]
    let evidence: DetectionEvidence.Role?
    private let observeHidden: ((Int, [FaceRect]) -> Void)?
    /// The spare-time thread's detector (`spareTileScale`, live only).
    private let spareDetectors: Detectors?
    let spareCPU: SpareCPU

    let condition = MonotonicCondition()   // its timed waits run on the monotonic clock
    var queue: [Pending] = []
    var planner: DetectionPlanner?
    var plannerGeneration = 0
    var nextIndex = 0
    var failure: String?
    var stopping = false
    private var threads: [Thread] = []
    /// Detection threads still in their loop.
    var runningWorkers = 0
    /// Offline: the searches planned, run and applied in an order fixed by the file.
    var order = OfflineOrder<DetectionJob, Outcome>()

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
    var countersStorage = Counters()
    /// `lower_fps`: the camera's motion over the frames not taken in (under `condition`).
    private var skippedMotion = Similarity.identity
    /// Each followed face's template, cut where the network last found it (under `condition`).
    var templates: [Int: FaceTemplate] = [:]

    /// The same counts for monitoring (`/metrics`), through swift-metrics.
    let metrics: StageMetrics
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

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

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
            while let planned = order.oldestUnappliedFrame, planned <= index - Self.applyLag, applyNextOutcome() {}
            planAhead()
            while queue.count > limit, failure == nil, let first = queue.first,
                  !(planner?.isSettled(first.index) ?? true) {
                guard order.oldestUnappliedFrame != nil else {
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

    func fail(_ reason: String) {
        guard failure == nil, !stopping else { return }
        failure = reason
        logger.critical("face detection failed (\(reason)); every frame is blacked out from now on")
        condition.broadcast()
    }

}
