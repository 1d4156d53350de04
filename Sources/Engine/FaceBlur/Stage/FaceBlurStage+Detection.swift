import CoreMetrics
import FaceDetectorSupport
import Foundation
import GStreamerSupport
import Logging
import Recorder

/// The detection threads: each takes a search, runs its network outside the lock, and records
/// what it found under it; live, the spare-time thread does the same with idle CPU only.
extension FaceBlurStage {
    /// A detection thread: runs the passes the planner holds frames for, as
    /// they come due (live), or the passes the streaming thread planned, in
    /// the order planned (offline, see `planAhead`).
    func detectionLoop(_ detectors: Detectors) {
        defer { condition.withLock { runningWorkers -= 1; condition.broadcast() } }
        while true {
            condition.lock()
            var job: DetectionJob?
            var planned: Int?
            while !stopping {
                if !realTime {
                    if let next = order.take() {
                        (planned, job) = (next.number, next.job)
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
                    order.deliver(outcome, for: planned)
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
    func spareTimeLoop(_ detectors: Detectors) {
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
    func run(_ job: DetectionJob, on detectors: Detectors) {
        let outcome = detect(job, on: detectors)
        condition.withLock {
            apply(outcome)
            condition.broadcast()
        }
    }

    /// Detection thread, outside the lock: runs `job` (its template first, if it has one).
    func detect(_ job: DetectionJob, on detectors: Detectors) -> Outcome {
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
    func apply(_ outcome: Outcome) {
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
    func countPass(_ kind: DetectionPlanner.Kind, seconds: Double) {
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
    func matchTemplate(_ job: DetectionJob) -> FaceRect? {
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
    func keepTemplates(of sightings: [DetectionPlanner.Sighting], frame index: Int) {
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
    func copyRegion(for pass: DetectionPlanner.Pass) -> RegionCopy {
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
