import Foundation
import GStreamerSupport

/// The recorded H.264, handed to a network stream (the RTSP server) as the
/// recording's own parser made it: after the privacy stage and the encoder,
/// never a second encode, never anything from the capture side.
///
/// The tap is a buffer probe on the pad that feeds `chunks` (the output of
/// the pipeline's last element before the chunk sink, which the privacy
/// boundary check proves gets frames from `blur_out` only; see
/// `PipelineLoader.checkStreamTap`). The recording pipeline's graph is
/// not changed: no tee, no queue, no sink that could hold it up. What the
/// consumer does with a frame must not block (the RTSP server takes a
/// buffer reference and drops what a client cannot take).
///
/// Threading: `offer` runs on the encoder's streaming thread; `consumer` is
/// set from any thread (under `lock`).
public final class StreamTap: @unchecked Sendable {
    public typealias Consumer = @Sendable (PassingBuffer) -> Void
    private let lock = NSLock()
    private var consumerStorage: Consumer?
    private var offeredStorage = 0

    public init() {}

    /// Who takes the recorded frames (nil: nobody; the tap then costs one lock per frame).
    public var consumer: Consumer? {
        get { lock.withLock { consumerStorage } }
        set { lock.withLock { consumerStorage = newValue } }
    }

    /// Frames that passed the tap since the recorder started (tests, metrics).
    public var framesOffered: Int { lock.withLock { offeredStorage } }

    /// Called with every encoded frame on its way to the chunks (streaming thread).
    func offer(_ frame: PassingBuffer) {
        let consumer: Consumer? = lock.withLock {
            offeredStorage += 1
            return consumerStorage
        }
        consumer?(frame)
    }

    /// Puts the probe on `pad` (the pad linked into the chunk sink's video input).
    func attach(to pad: Pad) {
        pad.onEveryPassingBuffer { [weak self] frame in self?.offer(frame) }
    }
}
