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
/// The privacy stage hands frames on in bursts (it holds them until a search
/// confirmed them), so pictures are chosen by their timestamps, not by when
/// they arrive, and played out at their own pace a moment later.
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
    /// Timestamps between pictures, from `settings.framesPerSecond`.
    private let interval: ClockTime
    private let logger: Logger
    private let lock = NSLock()
    /// The encoder's input while someone watches (under `lock`).
    private var input: AppSource?
    /// The timestamp from which the next picture is due.
    private var nextDue: ClockTime = 0
    /// Pictures handed to the encoder since it was built (under `lock`; tests and metrics).
    private var offered = 0

    // Main loop only.
    private var encoder: Pipeline?
    /// Pictures made and waiting for their moment, oldest first.
    private var playout: [(time: UInt64, picture: Data)] = []
    /// Which timestamp is shown at which moment (uptime ns), once playing.
    private var anchor: (time: UInt64, uptime: UInt64)?
    /// Wakes the playout; on the service's clock (what is due is measured in uptime, so a
    /// virtual clock that runs ahead only shows pictures sooner).
    private var playoutTimer: LoopTimer?
    private let clock: LoopClock
    private var made = 0
    /// How long pictures wait before they are shown, so a burst plays out evenly.
    private let playoutDelayNs: UInt64 = 600_000_000
    private var watchers: [Int: Watcher] = [:]
    private var nextID = 0
    /// The last picture made, for stills.
    public private(set) var latest: Data?

    public init(settings: Settings = Settings(), clock: LoopClock = MainLoopClock.shared,
                logger: Logger = Logger(label: "allspark.preview")) {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        interval = ClockTime(1e9 / settings.framesPerSecond)
    }

    public var watcherCount: Int { watchers.count }
    public var picturesOffered: Int { lock.withLock { offered } }

    /// Called with each recorded frame, after the privacy stage (streaming thread).
    func offer(_ frame: Sample) {
        guard let time = frame.presentationTime else { return }
        let target: AppSource? = lock.withLock {
            // A restarted pipeline starts its timestamps again.
            guard let input, time >= nextDue || nextDue - time > 10 * interval else { return nil }
            nextDue = time + interval
            offered += 1
            return input
        }
        // Never blocks: the encoder's input drops what it cannot take.
        _ = target?.push(frame)
    }

    /// Starts delivering pictures to `watcher` on the main loop; the first watcher builds the encoder.
    public func watch(_ watcher: @escaping Watcher) throws -> Token {
        MainLoop.preconditionOnLoop()
        if encoder == nil { try buildEncoder() }
        nextID += 1
        watchers[nextID] = watcher
        return Token(id: nextID)
    }

    public func stopWatching(_ token: Token) {
        MainLoop.preconditionOnLoop()
        guard watchers.removeValue(forKey: token.id) != nil, watchers.isEmpty else { return }
        tearDownEncoder()
    }

    private func buildEncoder() throws {
        // Scaled to at most the width asked, keeping the aspect ratio; one picture in flight.
        let pipeline = try Pipeline.parse("""
            appsrc name=preview_in format=time is-live=false block=false max-buffers=8 max-bytes=0 leaky-type=downstream \
            ! videoconvert ! videoscale add-borders=false \
            ! capsfilter name=preview_size ! jpegenc quality=\(settings.quality) \
            ! appsink name=preview_out sync=false async=false max-buffers=1 drop=true
            """)
        guard let source = pipeline.element(named: "preview_in").flatMap(AppSource.init),
              let sink = pipeline.element(named: "preview_out").flatMap(AppSink.init) else {
            throw GStreamerError("the preview pipeline has no appsrc/appsink")
        }
        sink.setHandlers(onSample: { [weak self] sample in
            guard let picture = sample.bytes, let time = sample.presentationTime else { return true }
            MainLoop.post { self?.arrived(picture, time: UInt64(time)) }
            return true
        }, onEndOfStream: {})
        pipeline.element(named: "preview_size")?.set("caps", "video/x-raw,width=[1,\(settings.maximumWidth)],pixel-aspect-ratio=1/1")
        guard pipeline.setState(.playing) else { throw GStreamerError("the preview pipeline does not start") }
        encoder = pipeline
        made = 0
        lock.withLock {
            input = source
            offered = 0
            nextDue = 0
        }
        logger.info("preview: started (at most \(settings.framesPerSecond) pictures/s, \(settings.maximumWidth) px wide)")
    }

    private func tearDownEncoder() {
        lock.withLock { input = nil }
        playoutTimer?.cancel()
        playoutTimer = nil
        playout.removeAll()
        anchor = nil
        if let encoder {
            encoder.element(named: "preview_out").flatMap(AppSink.init)?.clearHandlers()
            _ = encoder.setState(.null)
        }
        encoder = nil
        logger.info("preview: stopped (nobody watches); \(picturesOffered) pictures offered, \(made) made")
    }

    private func arrived(_ picture: Data, time: UInt64) {
        guard encoder != nil else { return }
        made += 1
        let now = DispatchTime.now().uptimeNanoseconds
        if let (t, _) = anchor, time >= t {
            // Behind its pace (the stage held it longer than the ones before): show it now and keep pace from here.
            if let (t, u) = anchor, u &+ (time - t) < now { anchor = (time, now) }
        } else {
            // The start, or a restarted pipeline (its timestamps start again).
            anchor = (time, now + playoutDelayNs)
            playout.removeAll()
        }
        playout.append((time, picture))
        if playout.count > 32 { playout.removeFirst() }
        if playoutTimer == nil { scheduleNext() }
    }

    private func scheduleNext() {
        guard let next = playout.first, let (t, u) = anchor else { playoutTimer = nil; return }
        let due = u &+ (next.time &- t)
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = due > now ? Double(due - now) / 1e9 : 0
        playoutTimer = clock.after(wait) { [weak self] in
            guard let self else { return }
            self.playoutTimer = nil
            guard !self.playout.isEmpty else { return }
            self.deliver(self.playout.removeFirst().picture)
            self.scheduleNext()
        }
    }

    private func deliver(_ picture: Data) {
        latest = picture
        for watcher in watchers.values { watcher(picture) }
    }
}
