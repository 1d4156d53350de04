import Foundation
import GStreamerSupport

/// The privacy stage between `blur_in` and `blur_out`.
///
/// Threading: `process` is called on the capture chain's streaming thread,
/// one frame at a time and in order.
public protocol FrameProcessor: AnyObject {
    /// Short name for logs.
    var name: String { get }
    /// The frame to record, or nil to drop it. A processor that cannot do
    /// its job must return nil, never the unprocessed frame (fail closed).
    func process(_ frame: Sample) -> Sample?
}

/// Hands frames through untouched; used when `privacy.face_blur = false`.
public final class PassThroughProcessor: FrameProcessor {
    public init() {}
    public var name: String { "pass-through" }
    public func process(_ frame: Sample) -> Sample? { frame }
}

/// Frame counts of one pipeline run.
public struct FrameStatistics: Equatable, Sendable {
    /// Frames that reached `blur_in`.
    public var captured = 0
    /// Frames handed to `blur_out` (and so to the encoder).
    public var recorded = 0
    /// Frames the processor refused.
    public var dropped = 0
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
/// Threading: frames flow on the capture streaming thread; `finish` and
/// `statistics` may be called from the main loop. Shared state is under `lock`.
public final class FramePath: @unchecked Sendable {
    private let sink: AppSink
    private let source: AppSource
    private let processor: FrameProcessor
    private let lock = NSLock()
    private var stats = FrameStatistics()
    private var finished = false

    public init(sink: AppSink, source: AppSource, processor: FrameProcessor) {
        self.sink = sink
        self.source = source
        self.processor = processor
    }

    /// Configures both ends and starts accepting frames (before the pipeline plays).
    public func start() {
        // The service owns these properties, whatever the file says:
        // sync so that file sources play in real time (live sources are
        // never early); no dropping: a lost frame must be a counted decision.
        sink.element.set("sync", true)
        sink.element.set("drop", false)
        sink.element.set("max-buffers", 4)
        sink.element.set("enable-last-sample", false)
        source.element.set("format", "time")
        source.element.set("is-live", true)
        source.element.set("do-timestamp", false)
        // Block the capture thread rather than queue without bound when the
        // encoder falls behind: back-pressure, not memory growth.
        source.element.set("block", true)
        source.element.set("max-bytes", 64 * 1024 * 1024)
        sink.setHandlers(onSample: { [weak self] sample in
            self?.handle(sample) ?? false
        }, onEndOfStream: { [weak self] in
            self?.finish()
        })
    }

    private func handle(_ sample: Sample) -> Bool {
        lock.lock()
        if finished {
            stats.afterStop += 1
            lock.unlock()
            return true
        }
        stats.captured += 1
        if stats.width == 0, let info = sample.videoInfo {
            stats.width = info.width
            stats.height = info.height
            stats.framesPerSecond = info.fps
        }
        lock.unlock()

        guard let processed = processor.process(sample) else {
            lock.lock(); stats.dropped += 1; lock.unlock()
            return true
        }
        let pushed = source.push(processed)
        lock.lock()
        if pushed {
            stats.recorded += 1
            stats.lastFrameDuration = processed.duration.map(UInt64.init) ?? stats.lastFrameDuration
            stats.lastFrameRunningTime = processed.runningTime.map(UInt64.init) ?? stats.lastFrameRunningTime
        } else {
            stats.afterStop += 1
        }
        lock.unlock()
        return true
    }

    /// Stops accepting frames and ends the stream into the encoder, after
    /// every frame already accepted. Idempotent.
    public func finish() {
        lock.lock()
        let wasFinished = finished
        finished = true
        lock.unlock()
        if !wasFinished { source.endOfStream() }
    }

    public var statistics: FrameStatistics {
        lock.lock(); defer { lock.unlock() }
        return stats
    }

    /// Drops the sink's callbacks so nothing refers back to this object.
    public func detach() { sink.clearHandlers() }
}
