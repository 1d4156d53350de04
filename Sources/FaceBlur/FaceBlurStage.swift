import Foundation
import GStreamerSupport
import Logging
import Recorder

/// What the face-blur stage does and how hard it tries.
public struct FaceBlurSettings: Equatable, Sendable {
    public enum Mode: String, Sendable, CaseIterable { case pixelate, fill }

    public var modelPath: String
    public var mode: Mode = .pixelate
    /// CenterFace heatmap threshold; lower finds more faces (and a few non-faces).
    public var threshold: Float = 0.3
    public var tracker = FaceTracker.Settings()
    /// Network input width of the whole-frame pass (a multiple of 32).
    public var detectWidth = 960
    /// After this many whole-frame passes, one tile is searched at full
    /// resolution for small faces (0: no tiles).
    public var tileEvery = 1
    /// Live: the longest a frame waits for a detection that saw it.
    public var maxLatencyNs: UInt64 = 400_000_000
    /// A frame whose nearest whole-frame detection is further away than this
    /// is blacked out: the stage has fallen too far behind to vouch for it.
    public var maxDetectionAgeNs: UInt64 = 700_000_000
    /// Offline: frames held at most before waiting for the detector.
    public var maxQueuedFrames = 4
    /// Pixel cells across the smaller side of a hidden region.
    public var cellsAcross = 5
    /// The smallest cell, in pixels: small faces get coarse blocks too.
    public var minimumCell = 8
    /// OpenCV threads for the detector.
    public var threads = 2

    public init(modelPath: String) { self.modelPath = modelPath }
}

/// Hides every face before the frame reaches the encoder.
///
/// Design (speed with recall, and fail closed):
/// - Detection never runs on the frame path. A detection thread takes a copy
///   of the newest frame's luma plane whenever it is free, and alternates a
///   whole-frame pass at `detectWidth` (faces down to ~30 px at 720p) with,
///   every `tileEvery` passes, one tile of a 2×2 grid at full resolution
///   (faces down to ~15 px), so each tile is revisited every ~8 passes.
/// - Frames wait in a short delay line until a whole-frame detection on a
///   frame at or after them has finished (look-ahead), so a face entering
///   the picture is hidden from its first frame, not from the next
///   detection on. Regions come from `FaceTracker`: the nearest
///   observations before and after the frame, grown by the margin and by
///   motion over the time gap, held for `hold` after a miss.
/// - Live, a frame never waits longer than `maxLatency`; if by then no
///   whole-frame detection lies within `maxDetectionAge` of it, it is blacked
///   out and counted: an unprocessed frame never passes. Offline
///   (`realTime: false`) the frame path waits for the detector instead.
/// - A detector error makes the stage black out every frame from then on,
///   with a critical log line. A missing model fails `init` (the recorder
///   refuses to record).
/// - Anonymisation works in place on the I420/NV12 planes: Y is pixelated
///   in cells of 1/`cellsAcross` of the region; chroma the same at half size.
///
/// Threading: `process`/`drain` on the streaming thread (one at a time);
/// the detector on its own thread; shared state under `condition`.
public final class FaceBlurStage: FrameProcessor {
    public var name: String { "face blur (\(settings.mode.rawValue))" }

    public let settings: FaceBlurSettings
    private let realTime: Bool
    private let logger: Logger
    private let detector: FaceDetector

    private let condition = NSCondition()
    private var queue: [Pending] = []
    private var tracker: FaceTracker
    /// Capture times of finished whole-frame detections (recent ones).
    private var fullPassTimes: [UInt64] = []
    private var job: DetectionJob?
    private var failure: String?
    private var stopping = false
    private var thread: Thread?
    private var passCounter = 0
    private var nextTile = 0

    /// Frame counts for logs, tests and benchmarks.
    public struct Counters: Equatable, Sendable {
        public var frames = 0
        public var framesWithFaces = 0
        public var blackedOut = 0
        /// Frames that could not be anonymised and were not recorded at all.
        public var dropped = 0
        public var wholeFramePasses = 0
        public var tilePasses = 0
        public var detectionSeconds = 0.0
    }
    private var countersStorage = Counters()
    public var counters: Counters { condition.withLock { countersStorage } }

    struct Pending {
        var sample: Sample
        var time: UInt64
        var arrival: UInt64
    }

    struct DetectionJob {
        var luma: [UInt8]
        var width: Int
        var height: Int
        var time: UInt64
    }

    public init(settings: FaceBlurSettings, realTime: Bool, logger: Logger = Logger(label: "allspark.faceblur")) throws {
        self.settings = settings
        self.realTime = realTime
        self.logger = logger
        self.tracker = FaceTracker(settings: settings.tracker)
        detector = try FaceDetector(modelPath: settings.modelPath, threads: settings.threads)
        let thread = Thread { [weak self] in self?.detectionLoop() }
        thread.name = "face-detection"
        thread.stackSize = 4 << 20
        self.thread = thread
        thread.start()
    }

    /// Ends the detection thread (after `drain`); the stage is done.
    public func close() {
        let c = condition.withLock { () -> Counters in
            stopping = true
            condition.broadcast()
            return countersStorage
        }
        guard c.frames > 0 else { return }
        let passes = c.wholeFramePasses + c.tilePasses
        logger.notice("face blur: \(c.frames) frames, \(c.framesWithFaces) with faces hidden, \(c.blackedOut) blacked out, \(c.dropped) dropped; \(c.wholeFramePasses) whole-frame and \(c.tilePasses) tile detections, \(passes > 0 ? Int(c.detectionSeconds / Double(passes) * 1000) : 0) ms each")
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    // MARK: Frame path

    public func process(_ frame: Sample) -> [Sample] {
        let time = UInt64(frame.runningTime ?? frame.presentationTime ?? 0)
        condition.lock()
        queue.append(Pending(sample: frame, time: time, arrival: Self.now()))
        countersStorage.frames += 1
        if job == nil, failure == nil { offerJob(frame, time: time) }
        if !realTime {
            // Offline: wait for the detector rather than guess.
            while queue.count > settings.maxQueuedFrames, !isCovered(queue[0].time), failure == nil {
                if job == nil, let newest = queue.last { offerJob(newest.sample, time: newest.time) }
                condition.wait()
            }
        }
        let ready = takeReady(force: false)
        condition.unlock()
        return finish(ready)
    }

    public func drain() -> [Sample] {
        condition.lock()
        // Let the detector see the tail, then release everything.
        if failure == nil, let newest = queue.last {
            let deadline = Date().addingTimeInterval(5)
            while !isCovered(newest.time), failure == nil, Date() < deadline {
                if job == nil { offerJob(newest.sample, time: newest.time) }
                _ = condition.wait(until: deadline)
            }
        }
        let ready = takeReady(force: true)
        condition.unlock()
        return finish(ready)
    }

    /// A whole-frame detection ran on a frame at or after `time`.
    private func isCovered(_ time: UInt64) -> Bool {
        (fullPassTimes.last ?? 0) >= time && !fullPassTimes.isEmpty
    }

    /// Under the lock: frames that may leave now, with the regions to hide
    /// (nil: black out).
    private func takeReady(force: Bool) -> [(Sample, [FaceRect]?)] {
        var ready: [(Sample, [FaceRect]?)] = []
        let now = Self.now()
        while let first = queue.first {
            let covered = isCovered(first.time)
            let waitedTooLong = realTime && now - first.arrival > settings.maxLatencyNs
            guard covered || waitedTooLong || force || failure != nil else { break }
            queue.removeFirst()
            if failure != nil || !hasNearbyDetection(first.time) {
                countersStorage.blackedOut += 1
                let n = countersStorage.blackedOut
                if failure == nil, n == 1 || n % 100 == 0 {
                    logger.critical("face detection fell behind (no detection within \(settings.maxDetectionAgeNs / 1_000_000) ms of a frame): blacked out \(n) frames so far")
                }
                ready.append((first.sample, nil))
            } else {
                let regions = tracker.regions(at: first.time)
                if !regions.isEmpty { countersStorage.framesWithFaces += 1 }
                if logger.logLevel <= .trace { logger.trace("frame at \(first.time / 1_000_000) ms: hiding \(regions)") }
                ready.append((first.sample, regions))
            }
        }
        return ready
    }

    private func hasNearbyDetection(_ time: UInt64) -> Bool {
        fullPassTimes.contains { ($0 > time ? $0 - time : time - $0) <= settings.maxDetectionAgeNs }
    }

    /// Outside the lock: pixelate, fill or black out.
    private func finish(_ ready: [(Sample, [FaceRect]?)]) -> [Sample] {
        ready.compactMap { sample, regions in
            do {
                return try sample.modifyingVideoFrame { frame in
                    if let regions { hide(regions, in: frame) } else { blackOut(frame) }
                }
            } catch {
                // A frame we cannot write is a frame we cannot vouch for: drop it.
                let dropped = condition.withLock { () -> Int in countersStorage.dropped += 1; return countersStorage.dropped }
                if dropped == 1 || dropped % 300 == 0 {
                    logger.critical("cannot anonymise frames (\(error)); dropped \(dropped) so far")
                }
                return nil
            }
        }
    }

    private func hide(_ regions: [FaceRect], in frame: VideoFrame) {
        for region in regions {
            let cell = max(settings.minimumCell, Int(min(region.width, region.height)) / settings.cellsAcross)
            let half = FaceRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2)
            let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
            let y = frame.planes[0]
            switch settings.mode {
            case .pixelate:
                PlaneEditor.pixelate(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, cell: cell)
                if frame.format == .i420 {
                    for p in frame.planes[1...2] {
                        PlaneEditor.pixelate(p.data, width: cw, height: ch, stride: p.stride, rect: half, cell: max(2, cell / 2))
                    }
                } else {
                    PlaneEditor.pixelate(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride,
                                         channels: 2, rect: half, cell: max(2, cell / 2))
                }
            case .fill:
                PlaneEditor.fill(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, value: 16)
                if frame.format == .i420 {
                    for p in frame.planes[1...2] { PlaneEditor.fill(p.data, width: cw, height: ch, stride: p.stride, rect: half, value: 128) }
                } else {
                    PlaneEditor.fill(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride, channels: 2, rect: half, value: 128)
                }
            }
        }
    }

    private func blackOut(_ frame: VideoFrame) {
        let whole = FaceRect(x: 0, y: 0, width: Double(frame.width), height: Double(frame.height))
        PlaneEditor.fill(frame.planes[0].data, width: frame.width, height: frame.height, stride: frame.planes[0].stride, rect: whole, value: 16)
        let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
        let half = FaceRect(x: 0, y: 0, width: Double(cw), height: Double(ch))
        if frame.format == .i420 {
            for p in frame.planes[1...2] { PlaneEditor.fill(p.data, width: cw, height: ch, stride: p.stride, rect: half, value: 128) }
        } else {
            PlaneEditor.fill(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride, channels: 2, rect: half, value: 128)
        }
    }

    /// Under the lock: hands the detector a copy of this frame's luma.
    private func offerJob(_ frame: Sample, time: UInt64) {
        do {
            let job = try frame.readingVideoFrame { f -> DetectionJob in
                var luma = [UInt8](repeating: 0, count: f.width * f.height)
                luma.withUnsafeMutableBufferPointer { out in
                    for row in 0..<f.height {
                        (out.baseAddress! + row * f.width).update(from: f.luma.data + row * f.luma.stride, count: f.width)
                    }
                }
                return DetectionJob(luma: luma, width: f.width, height: f.height, time: time)
            }
            self.job = job
            condition.broadcast()
        } catch {
            fail("cannot read a frame for detection: \(error)")
        }
    }

    private func fail(_ reason: String) {
        guard failure == nil else { return }
        failure = reason
        logger.critical("face detection failed (\(reason)); every frame is blacked out from now on")
        condition.broadcast()
    }

    // MARK: Detection thread

    private func detectionLoop() {
        while true {
            condition.lock()
            while job == nil && !stopping { condition.wait() }
            if stopping { condition.unlock(); return }
            let current = job!
            passCounter += 1
            let tileNow = settings.tileEvery > 0 && passCounter % (settings.tileEvery + 1) == 0
            let tile = tileNow ? nextTile : nil
            if tileNow { nextTile = (nextTile + 1) % 4 }
            condition.unlock()

            let started = Self.now()
            let result: Result<[FaceDetection], Error> = Result {
                try current.luma.withUnsafeBufferPointer { luma in
                    let region = tile.map { Self.tileRegion($0, width: current.width, height: current.height) }
                    return try detector.detect(luma: luma.baseAddress!, width: current.width, height: current.height,
                                               stride: current.width, region: region,
                                               // Tiles run at full resolution: they are there for the small faces.
                                               inputWidth: region.map { Int($0.width) } ?? settings.detectWidth,
                                               threshold: settings.threshold)
                }
            }
            let seconds = Double(Self.now() - started) / 1e9

            condition.lock()
            countersStorage.detectionSeconds += seconds
            switch result {
            case .success(var faces):
                if let tile {
                    // A face cut by an inner tile edge is whole in a neighbouring tile
                    // or in the whole-frame pass; its partial box would mislead the tracker.
                    let region = Self.tileRegion(tile, width: current.width, height: current.height)
                    faces.removeAll { Self.touchesInnerEdge($0.rect, of: region, width: current.width, height: current.height) }
                }
                if logger.logLevel <= .debug {
                    logger.debug("detection at \(current.time / 1_000_000) ms \(tile.map { "tile \($0)" } ?? "whole frame"): \(faces.map { "\($0.rect) \(String(format: "%.2f", $0.score))" })")
                }
                tracker.update(detections: faces.map(\.rect), time: current.time)
                if tile == nil {
                    countersStorage.wholeFramePasses += 1
                    fullPassTimes.append(current.time)
                    if fullPassTimes.count > 64 { fullPassTimes.removeFirst(32) }
                    // Frames up to maxLatency older than this one may still need a held track.
                    tracker.prune(now: current.time - min(current.time, settings.maxLatencyNs))
                } else {
                    countersStorage.tilePasses += 1
                }
            case .failure(let error):
                fail("\(error)")
            }
            job = nil
            condition.broadcast()
            condition.unlock()
        }
    }

    static func touchesInnerEdge(_ box: FaceRect, of tile: FaceRect, width: Int, height: Int) -> Bool {
        let slack = 2.0
        return (tile.x > 0 && box.x <= tile.x + slack)
            || (tile.maxX < Double(width) && box.maxX >= tile.maxX - slack)
            || (tile.y > 0 && box.y <= tile.y + slack)
            || (tile.maxY < Double(height) && box.maxY >= tile.maxY - slack)
    }

    /// Quadrant `index` of a 2×2 grid, overlapping its neighbours by 10 % of
    /// the frame so a face on a border is whole in one tile.
    static func tileRegion(_ index: Int, width: Int, height: Int) -> FaceRect {
        let w = Double(width) * 0.6, h = Double(height) * 0.6
        let x = index % 2 == 0 ? 0 : Double(width) - w
        let y = index / 2 == 0 ? 0 : Double(height) - h
        return FaceRect(x: x, y: y, width: w, height: h)
    }
}
