import Foundation
import GLibSupport
import GStreamerSupport
import Logging

/// The live preview: JPEG pictures of what the privacy stage hands to
/// `blur_out`, never of anything before it. Costs nothing while nobody
/// watches: the JPEG pipeline is built for the first watcher and torn down
/// after the last. The recording thread only hands over a reference, at the
/// capped rate, into a one-picture leaky queue: a slow encoder or viewer
/// drops preview pictures, never recorded frames.
///
/// Threading: `offer` runs on the capture streaming thread; everything else
/// on the main loop, where pictures are delivered too. `lock` guards what both touch.
public final class PreviewTap: @unchecked Sendable {
    public struct Settings: Equatable, Sendable {
        public var framesPerSecond: Double
        public var maximumWidth: Int
        public var quality: Int
        public init(framesPerSecond: Double = 5, maximumWidth: Int = 640, quality: Int = 70) {
            self.framesPerSecond = framesPerSecond
            self.maximumWidth = maximumWidth
            self.quality = quality
        }
    }

    public typealias Watcher = (Data) -> Void
    public struct Token: Hashable { let id: Int }

    private let settings: Settings
    private let logger: Logger
    private let lock = NSLock()
    /// The encoder's input while someone watches (under `lock`).
    private var input: AppSource?
    private var lastOfferNs: UInt64 = 0
    /// Pictures handed to the encoder since it was built (under `lock`; tests and metrics).
    private var offered = 0

    // Main loop only.
    private var encoder: Pipeline?
    private var watchers: [Int: Watcher] = [:]
    private var nextID = 0
    /// The last picture made, for stills.
    public private(set) var latest: Data?

    public init(settings: Settings = Settings(), logger: Logger = Logger(label: "allspark.preview")) {
        self.settings = settings
        self.logger = logger
    }

    public var watcherCount: Int { watchers.count }
    public var picturesOffered: Int { lock.withLock { offered } }

    /// Called with each recorded frame, after the privacy stage (streaming thread).
    func offer(_ frame: Sample) {
        let now = DispatchTime.now().uptimeNanoseconds
        let interval = UInt64(1e9 / settings.framesPerSecond)
        let target: AppSource? = lock.withLock {
            guard let input, now &- lastOfferNs >= interval else { return nil }
            lastOfferNs = now
            offered += 1
            return input
        }
        // Never blocks: the encoder's input drops what it cannot take.
        _ = target?.push(frame)
    }

    /// Starts delivering pictures to `watcher` on the main loop; the first watcher builds the encoder.
    public func watch(_ watcher: @escaping Watcher) throws -> Token {
        MainLoop.preconditionOnLoopThread()
        if encoder == nil { try buildEncoder() }
        nextID += 1
        watchers[nextID] = watcher
        return Token(id: nextID)
    }

    public func stopWatching(_ token: Token) {
        MainLoop.preconditionOnLoopThread()
        guard watchers.removeValue(forKey: token.id) != nil, watchers.isEmpty else { return }
        tearDownEncoder()
    }

    private func buildEncoder() throws {
        // Scaled to at most the width asked, keeping the aspect ratio; one picture in flight.
        let pipeline = try Pipeline.parse("""
            appsrc name=preview_in format=time is-live=true block=false max-buffers=1 leaky-type=downstream \
            ! videoconvert ! videoscale add-borders=false \
            ! capsfilter name=preview_size ! jpegenc quality=\(settings.quality) \
            ! appsink name=preview_out sync=false max-buffers=1 drop=true
            """)
        guard let source = pipeline.element(named: "preview_in").flatMap(AppSource.init),
              let sink = pipeline.element(named: "preview_out").flatMap(AppSink.init) else {
            throw GStreamerError("the preview pipeline has no appsrc/appsink")
        }
        sink.setHandlers(onSample: { [weak self] sample in
            guard let picture = sample.bytes else { return true }
            MainLoop.post { self?.deliver(picture) }
            return true
        }, onEndOfStream: {})
        pipeline.element(named: "preview_size")?.set("caps", "video/x-raw,width=[1,\(settings.maximumWidth)],pixel-aspect-ratio=1/1")
        guard pipeline.setState(.playing) else { throw GStreamerError("the preview pipeline does not start") }
        encoder = pipeline
        lock.withLock {
            input = source
            offered = 0
        }
        logger.info("preview: started (at most \(settings.framesPerSecond) pictures/s, \(settings.maximumWidth) px wide)")
    }

    private func tearDownEncoder() {
        lock.withLock { input = nil }
        if let encoder {
            encoder.element(named: "preview_out").flatMap(AppSink.init)?.clearHandlers()
            _ = encoder.setState(.null)
        }
        encoder = nil
        logger.info("preview: stopped (nobody watches)")
    }

    private func deliver(_ picture: Data) {
        latest = picture
        for watcher in watchers.values { watcher(picture) }
    }
}
