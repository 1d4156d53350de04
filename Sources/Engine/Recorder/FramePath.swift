// Threads and locks of the frame path, in the order they may be taken (a
// thread holding one may take only those below it), as gst-plugins-rs
// elements write theirs down:
//
// 1. `FramePath.processing`: the thread that runs the processor and pushes
//    (the capture chain's streaming thread in `handle`, or the recorder's
//    worker in `finish`). Held across `process`/`drain` and the pushes.
// 2. GStreamer locks taken inside calls out while pushing: appsrc's queue
//    mutex (`gst_app_src_push_sample`, which may wait for room), the
//    splitmuxsink's lock (`split-at-running-time` through `ChunkCuts`), the
//    preview's and the QR scanner's own locks. Each is held only inside
//    that call.
// 3. `FramePath.lock`: counters and the keyframe queue; a leaf, never held
//    across a call out.
//
// Never taken on the frame path: an element's STATE_LOCK. Both
// `gst_element_send_event` and `gst_element_set_state` take it, and a state
// change holds it while it waits for the element's streaming threads. So
// the keyframe requests do not go through `gst_element_send_event` from the
// pushing thread: the frames that start a chunk are queued here (3) and
// appsrc's own streaming thread puts the force-key-unit event before each
// (`AppSource.forceKeyframes`). And `unblock`, on the main loop, no longer
// sets appsrc to NULL on its own: that held appsrc's STATE_LOCK while
// waiting for appsrc's streaming thread, which can sit in a splitmuxsink
// whose next file could not be opened (file descriptors exhausted) until
// the pipeline's own state change releases it, while the pushing thread
// waited for that STATE_LOCK in `gst_element_send_event`: the main loop
// hung and SIGTERM went unanswered. `unblock` now only makes pushes return
// (appsrc's queue mutex, briefly), and the pipeline goes to NULL as a whole,
// sinks first, which releases every streaming thread from downstream up.

import Foundation
import GStreamerSupport

/// The privacy stage between `blur_in` and `blur_out`.
///
/// Threading: `process` and `drain` are called one at a time (never
/// concurrently), `process` on the capture chain's streaming thread, in
/// frame order.
public protocol FrameProcessor: AnyObject {
    /// Short name for logs.
    var name: String { get }
    /// Takes a frame and returns the frames ready to be recorded, oldest
    /// first: none, this one, or older ones a delaying stage held back.
    /// A processor that cannot do its job must never return an unprocessed
    /// frame (fail closed): it drops it or blacks it out.
    func process(_ frame: Sample) -> [Sample]
    /// End of stream: every frame still held, processed.
    func drain() -> [Sample]
    /// The pipeline run is over: release threads and resources.
    func close()
}

/// Hands frames through untouched; used when `privacy.face_blur = false`.
public final class PassThroughProcessor: FrameProcessor {
    public init() {}
    public var name: String { "pass-through" }
    public func process(_ frame: Sample) -> [Sample] { [frame] }
    public func drain() -> [Sample] { [] }
    public func close() {}
}

/// Frame counts of one pipeline run.
public struct FrameStatistics: Equatable, Sendable {
    /// Frames that reached `blur_in`.
    public var captured = 0
    /// Frames handed to `blur_out` (and so to the encoder).
    public var recorded = 0
    /// Frames that arrived after the run was told to stop.
    public var afterStop = 0
    public var width = 0
    public var height = 0
    public var framesPerSecond = 0.0
    /// Duration of the last frame handed on, in nanoseconds.
    public var lastFrameDuration: UInt64 = 0
    /// Running time of the last frame handed on, in nanoseconds.
    public var lastFrameRunningTime: UInt64 = 0
}

/// Moves frames from the capture sink through a processor into the source
/// that feeds the encoder, counting every frame so that tests and
/// benchmarks can prove none was lost.
///
/// Threading: frames flow on the capture streaming thread; `finish` (which
/// may wait for the processor's drain) and `detach` (which waits for its
/// threads to end) belong on a worker, never the main loop; `statistics`
/// may be read from any thread. Shared state is under `lock`.
public final class FramePath: @unchecked Sendable {
    private let sink: AppSink
    private let source: AppSource
    private let processor: FrameProcessor
    private let lock = NSLock()
    /// Serialises `process`/`drain` and pushes, so the end of stream always
    /// follows the last frame.
    private let processing = NSLock()
    private var stats = FrameStatistics()
    private var finished = false
    private var detached = false
    private var lastCaptureUptimeNs: UInt64?
    /// Set by `unblock`: the pipeline is being torn down, nothing more is recorded.
    private var tornDown = false
    /// Presentation times of frames pushed to start a chunk, oldest first,
    /// until they leave appsrc (where they get their keyframe request).
    private var keyframesDue: [UInt64] = []
    /// Gets every recorded frame after the processor (set before the pipeline plays).
    public var preview: PreviewTap?
    /// Offered every captured frame before the processor, for pairing; its
    /// frames go nowhere near the encoder (set before the pipeline plays).
    public var qrScanner: QRScanner?
    /// Runs on the capture thread after the capture ended (end of stream at
    /// blur_in) and its last frames went on (set before the pipeline plays).
    public var onCaptureEnded: (() -> Void)?
    /// Decides which frames start a chunk (set before the pipeline plays).
    var chunkCuts: ChunkCuts?

    public init(sink: AppSink, source: AppSource, processor: FrameProcessor) {
        self.sink = sink
        self.source = source
        self.processor = processor
    }

    /// Configures both ends and starts accepting frames (before the pipeline
    /// plays). `realTime: false` processes a file as fast as possible.
    public func start(realTime: Bool = true) {
        // The service owns these properties, whatever the file says:
        // sync so that file sources play in real time (live sources are
        // never early); no dropping: a lost frame must be a counted decision.
        sink.element.set("sync", realTime)
        sink.element.set("drop", false)
        sink.element.set("max-buffers", 4)
        sink.element.set("enable-last-sample", false)
        source.element.set("format", "time")
        source.element.set("is-live", realTime)
        source.element.set("do-timestamp", false)
        // Block the capture thread rather than queue without bound when the
        // encoder falls behind: back-pressure, not memory growth.
        source.element.set("block", true)
        source.element.set("max-bytes", 64 * 1024 * 1024)
        source.forceKeyframes { [weak self] pts in self?.keyframeDue(at: UInt64(pts)) ?? false }
        sink.setHandlers(onSample: { [weak self] sample in
            self?.handle(sample) ?? false
        }, onEndOfStream: { [weak self] in
            self?.finish()
            self?.onCaptureEnded?()
        })
    }

    private func handle(_ sample: Sample) -> Bool {
        processing.lock(); defer { processing.unlock() }
        lock.lock()
        if finished {
            stats.afterStop += 1
            lock.unlock()
            return true
        }
        stats.captured += 1
        lastCaptureUptimeNs = DispatchTime.now().uptimeNanoseconds
        if stats.width == 0, let info = sample.videoInfo {
            stats.width = info.width
            stats.height = info.height
            stats.framesPerSecond = info.fps
        }
        lock.unlock()
        qrScanner?.offer(sample)
        push(processor.process(sample))
        return true
    }

    private func push(_ frames: [Sample]) {
        for frame in frames {
            let runningTime = frame.runningTime
            if lock.withLock({ tornDown }) {
                lock.withLock { stats.afterStop += 1 }
                continue
            }
            // A frame that starts a chunk must reach the encoder as a keyframe: the chunk is cut there.
            if let chunkCuts, let runningTime, let pts = frame.presentationTime, chunkCuts.startsChunk(at: UInt64(runningTime)) {
                lock.withLock { keyframesDue.append(UInt64(pts)) }
            }
            // A push woken by `unblock` queued its frame into a pipeline being torn down: not recorded.
            let pushed = source.push(frame) && !lock.withLock { tornDown }
            // What the encoder got, and only that, may be shown.
            if pushed { preview?.offer(frame) }
            lock.lock()
            if pushed {
                stats.recorded += 1
                stats.lastFrameDuration = frame.duration.map(UInt64.init) ?? stats.lastFrameDuration
                stats.lastFrameRunningTime = runningTime.map(UInt64.init) ?? stats.lastFrameRunningTime
            } else {
                stats.afterStop += 1
            }
            lock.unlock()
        }
    }

    /// Stops accepting frames, records what the processor still holds, and
    /// ends the stream into the encoder after every frame already accepted.
    /// Idempotent.
    public func finish() {
        processing.lock(); defer { processing.unlock() }
        lock.lock()
        let wasFinished = finished
        finished = true
        lock.unlock()
        guard !wasFinished else { return }
        push(processor.drain())
        source.endOfStream()
    }

    /// When the last frame reached blur_in (monotonic nanoseconds), nil before the first.
    public var lastCaptureUptime: UInt64? {
        lock.lock(); defer { lock.unlock() }
        return lastCaptureUptimeNs
    }

    /// The privacy stage's own counts, when it reports them (any thread).
    public var privacyCounts: PrivacyStageCounts? { (processor as? PrivacyStageReporting)?.privacyCounts }

    public var statistics: FrameStatistics {
        lock.lock(); defer { lock.unlock() }
        return stats
    }

    /// On appsrc's streaming thread, for each frame leaving it: true when it
    /// starts a chunk and so must be preceded by a keyframe request.
    private func keyframeDue(at pts: UInt64) -> Bool {
        lock.withLock {
            // Frames are in order; one that never left (a flush) must not hold the queue.
            while let first = keyframesDue.first, first < pts { keyframesDue.removeFirst() }
            guard keyframesDue.first == pts else { return false }
            keyframesDue.removeFirst()
            return true
        }
    }

    /// A push waiting for room in `blur_out` (an encoder that stopped
    /// taking frames) returns at once, and nothing more is pushed: the
    /// pipeline is being torn down. Call on the main loop before stopping
    /// the pipeline while `finish` may still run. Takes no element's
    /// state lock and waits for no streaming thread (see the lock order
    /// at the top of this file).
    public func unblock() {
        lock.withLock { tornDown = true }
        source.stopBlocking()
    }

    /// Drops the sink's callbacks so nothing refers back to this object,
    /// and closes the processor (its threads end). Idempotent.
    public func detach() {
        let first = lock.withLock { () -> Bool in
            defer { detached = true }
            return !detached
        }
        guard first else { return }
        sink.clearHandlers()
        processor.close()
    }
}
