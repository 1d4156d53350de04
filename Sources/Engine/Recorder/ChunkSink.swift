import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import RecorderCore
import Storage

/// A chunk the splitmuxsink has finished and that now has its final name.
public struct FinishedChunk: Sendable {
    public var record: ChunkRecord
    public var width: Int
    public var height: Int
    public var framesPerSecond: Double
    /// The files written beside the chunk (`Companion`), in upload order.
    public var companions: [Companion] = []
}

/// Which companions the chunks opened from now on get (applied from the next chunk).
struct CompanionSettings: Equatable, Sendable {
    var timestamps: TimestampFormat
    var audio: AudioFormat

    init(timestamps: TimestampFormat = .none, audio: AudioFormat = .none) {
        self.timestamps = timestamps
        self.audio = audio
    }

    init(_ tuning: RecordingTuning) {
        self.init(timestamps: tuning.timestampFormat, audio: tuning.audioFormat)
    }
}

/// Owns the `chunks` splitmuxsink: its properties (location, duration,
/// container, robust muxing), the naming of each chunk by the wall-clock
/// time of its first frame (see "Two clocks" below), the rename from the hidden partial name to the
/// final name, and live changes of container and length, which its
/// `ChunkTimeline` orders: one switch at a time, in the order asked.
///
/// Threading: `name(fragment:)` runs on splitmuxsink's streaming thread;
/// the keyframe swap runs on the encoder's streaming thread; `split(at:)`
/// on the capture thread, from `cuts`; everything
/// else (bus messages, `apply`) runs on the main loop, which owns the
/// timeline's progress (a swap posts its completion there). The state
/// they share is under `lock`.
///
/// Two clocks: the pipeline runs on the monotonic clock, so every span is
/// measured there (`…ClockNs`: base time + running time) and a step of the
/// wall clock never stops or bursts the recording. Wall-clock times (`…Ns`,
/// epoch) are derived: a chunk's start is its first frame's clock time plus
/// the wall clock's offset read when that frame went to the encoder
/// (`ChunkCuts`), and everything after it in the chunk (its end, its frames'
/// timestamps) is that start plus the time elapsed on the monotonic clock.
/// A step cuts the chunk, so no chunk spans two times.
final class ChunkSink {
    private let pipeline: Pipeline
    private let storage: URL
    private let logger: Logger
    private let frameStatistics: () -> FrameStatistics

    private let lock = NSLock()
    /// The splitmuxsink receiving data now (after a container swap, a new one).
    private var active: Element
    /// What the active sink writes and the changes still to reach it. The
    /// settings asked for are owned by the recorder; this is their progress here.
    private var timeline: ChunkTimeline
    /// Sinks told to finish (EOS), and how their last chunk ends.
    private var endings: [ObjectID: Ending] = [:]
    /// Swapped-out sinks, removed from the pipeline once their last chunk is closed.
    private var retired: [ObjectID: Element] = [:]

    /// How a sink's input ended, which fixes the end time of its last chunk.
    /// splitmuxsink reports a chunk closed by a split at the start of the
    /// next chunk, but the last chunk of a stream at its last frame's start.
    enum Ending {
        /// The recording stopped: the last chunk ends after the last frame recorded.
        case stopped
        /// The container was switched: the last chunk ends where the new sink starts.
        case swapped(atRunningTime: UInt64)
    }
    /// The container each sink was configured with (a swapped-out sink keeps its own).
    private var formats: [ObjectID: VideoFormat] = [:]
    /// Each sink's chunk starts: a chunk ends where its successor starts.
    private var fragmentStarts: [ObjectID: FragmentStarts] = [:]
    /// Running time of the keyframe of the last container switch (encoder thread, under `lock`).
    private var lastSwapKeyframe: UInt64?
    /// Fragments being written, by partial path.
    private var open: [String: OpenFragment] = [:]
    /// The fragment named last (the one frames go to now); nil when its file
    /// could not be created. Any other open fragment is still being finalised.
    private var writing: String?
    private var generation = 1
    /// Sinks that take the frames while no video is recorded (fakesinks, `recordsVideo` false).
    private var discarding: Set<ObjectID> = []
    /// The companions of chunks opened from now on.
    private var companionSettings: CompanionSettings
    /// Running times of the frames that reached the chunk sink, oldest first,
    /// until their chunk is finished: its timestamps file lists them.
    private var frameTimes: [UInt64] = []
    /// Gets the chunk length (it bounds how much audio is kept).
    private let audio: AudioTrack?
    /// Where chunks are cut: the frame path asks it about every frame (see `ChunkCuts`).
    let cuts: ChunkCuts

    struct OpenFragment {
        /// Wall-clock start (epoch ns) and the same instant on the pipeline's clock.
        var startNs: UInt64
        var startClockNs: UInt64
        var startMs: Int64
        /// Whether the wall clock was synchronised when the chunk opened (nil: not visible).
        var clockSynchronized: Bool?
        var format: VideoFormat
        var sink: ObjectID
        /// Running time of the chunk's first frame (nil when the sink gave no buffer).
        var startRunningTime: UInt64?
        var companions: CompanionSettings
    }

    private let wallClock: WallClock

    init(pipeline: Pipeline, element: Element, storage: URL, settings: ChunkSettings, companions: CompanionSettings = .init(),
         audio: AudioTrack? = nil, wallClock: WallClock, logger: Logger, frameStatistics: @escaping () -> FrameStatistics) {
        self.pipeline = pipeline
        self.storage = storage
        self.logger = logger
        self.frameStatistics = frameStatistics
        self.active = element
        self.timeline = ChunkTimeline(settings)
        self.companionSettings = companions
        self.audio = audio
        self.wallClock = wallClock
        self.cuts = ChunkCuts(lengthMs: settings.recordsVideo ? settings.chunkDurationMs : nil, wallClock: wallClock)
        audio?.setChunkLength(ms: settings.chunkDurationMs)
        audio?.setWanted(companions.audio != .none)
    }

    /// The companions chunks opened from now on get.
    func setCompanions(_ settings: CompanionSettings) {
        lock.withLock { companionSettings = settings }
        updateAudioWanted()
    }

    /// Audio is kept while the next chunk or one still open asks for it.
    private func updateAudioWanted() {
        guard let audio else { return }
        audio.setWanted(lock.withLock { companionSettings.audio != .none || open.values.contains { $0.companions.audio != .none } })
    }

    /// The timeline now (for tests and logs).
    var currentTimeline: ChunkTimeline { lock.withLock { timeline } }

    /// Runs on the main loop when a container switch could not be made;
    /// the recorder then restarts the pipeline with the settings asked.
    var onSwitchFailed: ((String) -> Void)?

    /// The pad feeding the chunk sink (the encoder part's last output), once installed:
    /// it stays linked to whichever sink is active, so a tap on it sees every frame recorded.
    private(set) var encodedOutput: Pad?

    /// Puts a freshly configured splitmuxsink in place of the parsed one.
    /// gst_parse links the parsed sink before we can configure it, which
    /// creates its muxer with the default factory (mp4mux); a qtmux chunk
    /// would then fail at the first split ("Could not create the new
    /// muxer/sink"). Runs before the pipeline starts.
    func install() throws {
        MainLoop.preconditionOnLoop()
        let parsed = active
        guard let parsedPad = parsed.staticPad("video"), let feed = parsedPad.peer else {
            throw GStreamerError("the chunk sink has no linked video input")
        }
        feed.unlink(from: parsedPad)
        parsed.setState(.null)
        pipeline.remove(parsed)
        let settings = lock.withLock { timeline.written }
        let fresh = try Self.makeSink(for: settings, name: PipelineTemplate.Contract.chunkSink)
        lock.withLock { active = fresh }
        guard attach(fresh, to: feed, settings: settings) else {
            throw GStreamerError("cannot link the encoder to the chunk sink")
        }
        encodedOutput = feed
        // The encoder's output stays linked to whichever sink is active (a
        // container switch re-links the same pad), so this sees every frame recorded.
        feed.onEveryBuffer { [weak self] runningTime in self?.frameArrived(at: runningTime) }
        cuts.onCut = { [weak self] runningTime in self?.split(at: runningTime) }
    }

    /// On the capture thread: the frame at `runningTime`, on its way to the
    /// encoder as a keyframe, starts the next chunk.
    private func split(at runningTime: UInt64) {
        let (sink, discards) = lock.withLock { (active, discarding.contains(active.id)) }
        guard !discards else { return }
        sink.splitAtRunningTime(ClockTime(runningTime))
    }

    /// A splitmuxsink for chunks, or a fakesink while no video is recorded:
    /// the encoder keeps running (the preview, a later switch back), its frames go nowhere.
    private static func makeSink(for settings: ChunkSettings, name: String) throws -> Element {
        try Element.make(settings.recordsVideo ? "splitmuxsink" : "fakesink", name: settings.recordsVideo ? name : "no_video_\(name)")
    }

    /// The pad the encoder feeds on a sink `makeSink` made.
    private func input(of sink: Element) -> Pad? {
        sink.staticPad("video") ?? sink.staticPad("sink")
    }

    // MARK: Frames reaching the chunks

    /// Frames that reached the chunk sink, and when the last one did
    /// (monotonic nanoseconds): what the frame watchdog and "recording"
    /// go by, since only these frames end up in a file.
    private var framesArrived = 0
    private var lastFrameUptimeNs: UInt64?
    /// Runs once, on the main loop, when the first frame reaches the chunk
    /// sink. Set it before the pipeline starts: the streaming thread reads it.
    var onFirstFrame: (() -> Void)?
    /// Why the latest chunk's file could not be created, until `handle` reports it.
    private var creationFailure: StorageError?

    /// What `handle` makes of a bus message from the chunk sink.
    enum Event {
        /// The chunk is closed: `Closing.finalize` (on the worker: it may probe the
        /// file) gives it its final name; its companions are then written from its job.
        case finished(Closing)
        /// The next chunk's file could not be created (a read-only or full
        /// folder): a writer failure the bus itself never reports.
        case cannotCreate(message: String, noSpaceLeft: Bool)
    }

    private func frameArrived(at runningTime: ClockTime?) {
        let now = DispatchTime.now().uptimeNanoseconds
        let first = lock.withLock { () -> Bool in
            framesArrived += 1
            lastFrameUptimeNs = now
            if let runningTime {
                frameTimes.append(UInt64(runningTime))
                // Bounded while no chunk takes them (no video recorded, a stalled writer).
                let keep = UInt64(2 * timeline.requested.chunkDurationMs + 30_000) * 1_000_000
                if frameTimes.count > 1, let oldest = frameTimes.first, UInt64(runningTime) > oldest + 2 * keep {
                    frameTimes.removeAll { $0 + keep < UInt64(runningTime) }
                }
            }
            return framesArrived == 1
        }
        if first, let onFirstFrame { MainLoop.post(onFirstFrame) }
    }

    var framesWritten: Int { lock.withLock { framesArrived } }
    var lastFrameUptime: UInt64? { lock.withLock { lastFrameUptimeNs } }

    /// True when the message's poster is a chunk sink or inside one (its
    /// muxer, its file sink): the writing side failed.
    func isWriter(_ message: BusMessage) -> Bool {
        let sinks = lock.withLock { [active] + Array(retired.values) }
        return sinks.contains { message.comes(fromInside: $0) }
    }

    /// Configures a new sink made by `makeSink`, adds it to the pipeline and links `feed` into it.
    private func attach(_ sink: Element, to feed: Pad, settings: ChunkSettings) -> Bool {
        if settings.recordsVideo {
            // Configure before requesting the pad: that creates the muxer.
            configure(sink, format: settings.format, durationMs: settings.chunkDurationMs)
        } else {
            sink.set("sync", false)
            sink.set("async", false)
            lock.withLock { _ = discarding.insert(sink.id) }
        }
        guard pipeline.add(sink) else { return false }
        sink.syncStateWithParent()
        guard let pad = settings.recordsVideo ? sink.requestPad("video") : sink.staticPad("sink") else { return false }
        return feed.link(to: pad)
    }


    private func configure(_ element: Element, format: VideoFormat, durationMs: Int) {
        // async-finalize: each chunk gets a fresh muxer and file sink, so a
        // slow finalisation never stalls capture, and muxer-properties apply.
        element.set("async-finalize", true)
        element.set("async-handling", true)   // lets the sink after the appsrc reach PLAYING
        element.set("muxer-factory", format.muxerFactory)
        lock.withLock { formats[element.id] = format }
        element.set("sink-factory", "filesink")
        element.set("max-size-bytes", 0)
        // The recorder asks for each cut itself (`ChunkCuts`); its own time
        // limit, with its keyframe requests, is only a backstop.
        element.set("max-size-time", Self.backstopNs(durationMs: durationMs))
        element.set("send-keyframe-requests", false)
        // Robust muxing comes from the muxer properties alone: splitmuxsink's
        // own use-robust-muxing also cuts the first chunk at half length.
        setMuxerProperties(element, durationMs: durationMs)
        FragmentNamer.connect(to: element) { [weak self, sinkID = element.id] _, sample in
            self?.name(firstSample: sample, sink: sinkID) ?? "/dev/null"
        }
    }

    /// Where splitmuxsink cuts on its own when no cut was asked for (frames
    /// without a running time): late enough never to pre-empt a requested cut
    /// (which comes within a frame of the length), within what robust muxing reserves.
    private static func backstopNs(durationMs: Int) -> UInt64 {
        UInt64(durationMs + min(durationMs / 2, 5_000)) * 1_000_000
    }

    /// Robust muxing keeps a playable moov updated every half second of
    /// media, so a chunk cut short by a crash or power loss keeps all but
    /// what came after the last update. splitmuxsink hands the muxer a
    /// whole GOP at once (one second with the shipped pipelines); with a
    /// one-second period the update fell once per GOP, anywhere in it, and
    /// the rest of that GOP waited for the next one. Half a second updates
    /// at least once in the second half of each GOP (measured: SIGKILL cost 1.6 s
    /// on average with blur off, now 0.8 s; 3.9 s with blur on, now 2.5 s; see
    /// docs/operations-recording.md). Rewriting a
    /// moov of a few KiB twice a second costs nothing worth counting.
    private func setMuxerProperties(_ element: Element, durationMs: Int) {
        // Reserve room for the longest the chunk can become (past the backstop, one GOP more).
        let reserved = (UInt64(durationMs) + 10_000) * 1_000_000
        element.set("muxer-properties",
                    "properties,reserved-moov-update-period=(guint64)500000000,reserved-max-duration=(guint64)\(reserved)")
    }

    /// Names a new chunk after the wall-clock time of its first frame: its
    /// time on the pipeline's (monotonic) clock plus the wall clock's offset
    /// read when it went to the encoder.
    private func name(firstSample: Sample?, sink: ObjectID) -> String {
        let startClockNs: UInt64, offsetNs: Int64
        if let running = firstSample?.runningTime {
            startClockNs = UInt64(pipeline.baseTime) + UInt64(running)
            offsetNs = cuts.wallClockOffset(atRunningTime: UInt64(running)) ?? wallClock.currentOffsetNs
        } else {
            // No buffer in the sample: fall back to now, which is within a frame or two.
            logger.debug("format-location without a buffer; naming the chunk after the current time")
            let now = WallClock.systemReading()
            (startClockNs, offsetNs) = (now.monotonicNs, now.offsetNs)
        }
        // A wall clock before the epoch (a box that has not learnt the time) names chunks from 0.
        let startNs = UInt64(max(0, Int64(truncatingIfNeeded: startClockNs) &+ offsetNs))
        let clockSynchronized = wallClock.isSynchronized()
        var startMs = Int64(startNs / 1_000_000)
        let format = lock.withLock { formats[sink] ?? timeline.written.format }
        switch createPartialFile(startMs: startMs, format: format) {
        case .success(let createdMs):
            startMs = createdMs
        case .failure(let error):
            logger.error("cannot create a chunk file in \(storage.path): \(error); the chunk sink cannot write")
            // splitmuxsink needs some location; what it writes there is lost, so this is
            // a writer failure like one on the bus. It is reported when the fragment-opened
            // message for it arrives, not from here: stopping the pipeline while
            // splitmuxsink is still switching fragments deadlocks it.
            lock.withLock {
                writing = nil
                creationFailure = error
            }
            return Self.discardedLocation
        }
        let path = storage.appendingPathComponent(ChunkName.partial(startMs: startMs, format: format)).path
        let startRunningTime = firstSample?.runningTime.map { UInt64($0) }
        lock.withLock {
            if let startRunningTime { fragmentStarts[sink, default: FragmentStarts()].opened(at: startRunningTime) }
            open[path] = OpenFragment(startNs: startNs, startClockNs: startClockNs, startMs: startMs,
                                      clockSynchronized: clockSynchronized, format: format, sink: sink,
                                      startRunningTime: startRunningTime, companions: companionSettings)
            writing = path
        }
        return path
    }

    /// Where a chunk goes whose file could not be created.
    static let discardedLocation = "/dev/null"

    /// Creates a chunk's partial file, exclusively: filesink opens its location
    /// following links, so a link planted under the expected name is never
    /// written through. If the name is taken, a name a millisecond later is as
    /// good (the catalog keeps the exact start). Returns the start in the name.
    private func createPartialFile(startMs: Int64, format: VideoFormat) -> Result<Int64, StorageError> {
        let folder = StorageFolder(storage)
        var startMs = startMs
        for _ in 0..<5 {
            // After the wall clock was set back, an older chunk (or its companions) may carry this time already.
            guard Self.nameIsFree(startMs, in: folder) else {
                logger.notice("chunk_\(startMs) is taken by an earlier chunk (the wall clock was set back); naming the chunk a millisecond later")
                startMs += 1
                continue
            }
            do {
                try folder.createNew(ChunkName.partial(startMs: startMs, format: format))
                return .success(startMs)
            } catch let error as StorageError where error.code == EEXIST {
                logger.warning("\(error); naming the chunk a millisecond later")
                startMs += 1
            } catch {
                // Another name does not help on a read-only, full or vanished folder.
                return .failure(error as? StorageError ?? StorageError("\(error)"))
            }
        }
        return .failure(StorageError("every name near \(ChunkName.partial(startMs: startMs, format: format)) is taken", code: EEXIST))
    }

    /// No finished chunk of either container and none of their companions carries `startMs`.
    static func nameIsFree(_ startMs: Int64, in folder: StorageFolder) -> Bool {
        let names = VideoFormat.allCases.map { ChunkName.final(startMs: startMs, format: $0) }
            + Companion.candidates(forChunkStartingAt: startMs).map(\.file)
        return names.allSatisfy { folder.entry($0) == .missing }
    }

    /// Handles splitmuxsink's element messages: a chunk closed, or one whose file could not be created started.
    func handle(_ message: BusMessage) -> Event? {
        MainLoop.preconditionOnLoop()
        guard case .element(let name) = message.kind, let location = message.strings["location"] else { return nil }
        if location == Self.discardedLocation {
            guard name == "splitmuxsink-fragment-opened", let error = lock.withLock({ () -> StorageError? in
                defer { creationFailure = nil }
                return creationFailure
            }) else { return nil }
            return .cannotCreate(message: error.description, noSpaceLeft: error.code == ENOSPC || error.code == EDQUOT)
        }
        guard name == "splitmuxsink-fragment-closed", let runningTime = message.times["running-time"] else { return nil }
        // How the sink ended (if it did) decides whether this is its last chunk; see `Ending`.
        let (fragment, ending, successorStart) = lock.withLock { () -> (OpenFragment?, Ending?, UInt64?) in
            guard let fragment = open.removeValue(forKey: location) else { return (nil, nil, nil) }
            var next: UInt64?
            if let start = fragment.startRunningTime {
                let stillOpen = open.values.filter { $0.sink == fragment.sink }.compactMap(\.startRunningTime)
                next = fragmentStarts[fragment.sink]?.closed(startingAt: start, stillOpen: stillOpen)
            }
            return (fragment, endings[fragment.sink], next)
        }
        guard let fragment else {
            logger.warning("splitmuxsink closed \(location), which this recorder did not open")
            return nil
        }
        defer { updateAudioWanted() }
        let stats = frameStatistics()
        let closedAt = UInt64(runningTime)
        var endRunningTime = closedAt
        var isLast = false
        logger.debug("\(location) closed at running time \(closedAt); it started at \(fragment.startRunningTime.map { "\($0)" } ?? "-"), the next chunk of its sink at \(successorStart.map { "\($0)" } ?? "-"), the last frame pushed at \(stats.lastFrameRunningTime)")
        switch ending {
        case _ where successorStart != nil:
            // The sink opened a chunk after this one: this one ends exactly where that one
            // starts, whatever the message says. (Its running time is not always that: a stop
            // while the privacy stage still held frames back, drained after the stop, once
            // made a 2 s chunk close "at" its last keyframe's time, 1.1 s, and the last-frame
            // test below then took it for the last chunk of the stream.)
            endRunningTime = successorStart!
        case .stopped?:
            // After the stream ended no frame follows the last one recorded.
            isLast = closedAt >= stats.lastFrameRunningTime
            if isLast { endRunningTime = closedAt + stats.lastFrameDuration }
        case .swapped(let keyframe)?:
            // Frame times are rounded to the nanosecond, so one frame after the
            // last one's start may be a nanosecond short of the keyframe: half a frame of slack.
            isLast = closedAt + stats.lastFrameDuration + stats.lastFrameDuration / 2 >= keyframe
            if isLast { endRunningTime = keyframe }
        case nil:
            break
        }
        let endClockNs = UInt64(pipeline.baseTime) + endRunningTime
        // The chunk lasts what the monotonic clock says, from its wall-clock start.
        let endNs = fragment.startNs + (endClockNs > fragment.startClockNs ? endClockNs - fragment.startClockNs : 0)
        if isLast { retireIfDone(fragment.sink) }
        if stats.recorded == 0 {
            // splitmuxsink opens a fragment on caps alone; with no frame it holds no video.
            // At every retry of a silent source: the failure itself is what is logged (once).
            logger.debug("discarding \(location): the stream ended before any frame was recorded")
            try? FileManager.default.removeItem(atPath: location)
            return nil
        }
        let longest = UInt64(lock.withLock { max(timeline.written.chunkDurationMs, timeline.requested.chunkDurationMs) } + 60_000) * 1_000_000
        let plausible = endNs > fragment.startNs && endNs - fragment.startNs < longest
        let lastOfStream: Bool
        if case .stopped? = ending, isLast { lastOfStream = true } else { lastOfStream = false }
        // After a stop, a chunk with no successor start known (the last, or one whose successor's
        // opening message is not handled yet) is measured: its end was inferred from the frames pushed
        // and the close message's running time, which a stop while the privacy stage still held frames
        // back can get wrong (under load a 2 s chunk was catalogued 1.13 s, once as the last, and once,
        // in CI, with its successor not known yet).
        let measured: Bool
        if case .stopped? = ending, successorStart == nil { measured = true } else { measured = false }
        return .finished(Closing(fragment: fragment, partialPath: location, endNs: endNs, stats: stats,
                                 verify: verifyBeforeFinalizing || !plausible || measured, endsWithMedia: measured,
                                 storage: storage, logger: logger, probe: probe,
                                 job: companionJob(for: fragment, endClockNs: endClockNs, lastOfStream: lastOfStream)))
    }

    /// The chunk's companions as its settings asked when it opened: the
    /// capture times of its frames (those from its first frame up to the
    /// next chunk's first, or to the end of the stream) and its audio span.
    /// Frames no open chunk needs any more are forgotten.
    private func companionJob(for fragment: OpenFragment, endClockNs: UInt64, lastOfStream: Bool) -> CompanionJob {
        let base = UInt64(pipeline.baseTime)
        let startRT = fragment.startRunningTime ?? (fragment.startClockNs >= base ? fragment.startClockNs - base : 0)
        let endRT = endClockNs >= base ? endClockNs - base : 0
        return lock.withLock {
            var times: [Int64]?
            if fragment.companions.timestamps == .txt {
                // Each frame's wall-clock time: the chunk's start plus its time since the chunk's first frame.
                times = frameTimes.filter { $0 >= startRT && (lastOfStream || $0 < endRT) }.sorted()
                    .map { Int64((fragment.startNs + ($0 - startRT)) / 1_000_000) }
            }
            // A chunk opened before this one (still being finalised) keeps its frames.
            let stillNeeded = open.values.compactMap(\.startRunningTime).min() ?? .max
            let cutoff = min(endRT, stillNeeded)
            frameTimes.removeAll { $0 < cutoff }
            return CompanionJob(startMs: fragment.startMs, startClockNs: fragment.startClockNs, endClockNs: endClockNs,
                                frameTimesMs: times, audio: fragment.companions.audio)
        }
    }

    /// Set after a pipeline error: chunks closed afterwards may be cut short
    /// (a full disk), so each is checked to be playable before it is named.
    var verifyBeforeFinalizing = false

    /// How a closed chunk's file is measured when it must be (see `Closing.verify`):
    /// a synchronous discoverer run, so only ever called on the worker.
    var probe: @Sendable (URL) -> Double? = { MediaProbe.duration(of: $0) }

    /// A chunk splitmuxsink closed, still under its partial name. Everything
    /// the main loop knows is taken when the message comes; `finalize` then
    /// runs on the recorder's worker, because it may probe the file (a
    /// discoverer run of up to 10 s, which must never hold the main loop).
    struct Closing: @unchecked Sendable {
        let fragment: OpenFragment
        let partialPath: String
        let endNs: UInt64
        let stats: FrameStatistics
        /// Set after a pipeline error, for an implausible span, or for a chunk whose end a
        /// stop leaves unsure (see `endsWithMedia`): the file is probed and the chunk ends
        /// no later than its media.
        let verify: Bool
        /// The last chunk of a stopped stream, or one closed after a stop before its successor's
        /// start was known: probed, it ends where its media ends.
        let endsWithMedia: Bool
        let storage: URL
        let logger: Logger
        let probe: @Sendable (URL) -> Double?
        /// The companions as the chunk's span says before any probe.
        let job: CompanionJob

        /// On the worker: the chunk under its final name and its companions' job; nil when it is not kept.
        func finalize() -> (FinishedChunk, CompanionJob)? {
            guard let (chunk, endNs) = ChunkSink.finalize(self) else { return nil }
            var job = job
            if endNs < self.endNs {
                // The file holds less than the span said: the companions end where it does.
                job.endClockNs -= min(self.endNs - endNs, job.endClockNs - job.startClockNs)
                job.frameTimesMs = job.frameTimesMs?.filter { $0 < Int64(endNs / 1_000_000) }
            }
            return (chunk, job)
        }
    }

    /// Renames a closed chunk to its final name; returns it and its end (wall-clock ns), nil when it is not kept.
    private static func finalize(_ closing: Closing) -> (FinishedChunk, UInt64)? {
        let fragment = closing.fragment, partialPath = closing.partialPath, stats = closing.stats, logger = closing.logger
        let storage = closing.storage
        var endNs = closing.endNs
        if closing.verify {
            guard let playable = closing.probe(URL(fileURLWithPath: partialPath)) else {
                logger.warning("\(partialPath) is not playable; the repair pass handles it")
                return nil
            }
            let mediaEndNs = fragment.startNs + UInt64(playable * 1e9)
            endNs = closing.endsWithMedia ? mediaEndNs : min(endNs, mediaEndNs)
        }
        let finalName = ChunkName.final(startMs: fragment.startMs, format: fragment.format)
        let finalURL = storage.appendingPathComponent(finalName)
        let fm = FileManager.default
        guard let attributes = try? fm.attributesOfItem(atPath: partialPath),
              let size = (attributes[.size] as? NSNumber)?.int64Value, size > 0 else {
            logger.error("chunk \(finalName) was closed but its file is missing or empty; it is left for repair at the next start")
            return nil
        }
        do {
            try fm.moveItem(atPath: partialPath, toPath: finalURL.path)
        } catch {
            logger.error("cannot rename \(partialPath) to \(finalName): \(error)")
            return nil
        }
        // The name carries milliseconds; the catalog keeps full precision.
        let start = Double(fragment.startNs) / 1e9
        let end = max(start, Double(endNs) / 1e9)
        let record = ChunkRecord(file: finalName, start: start, end: end, size: size, format: fragment.format,
                                 clockSynchronized: fragment.clockSynchronized)
        return (FinishedChunk(record: record, width: stats.width, height: stats.height, framesPerSecond: stats.framesPerSecond), endNs)
    }

    /// Set once end-of-stream has reached the active sink's input.
    private var inputEnded = false

    /// The recording is ending: the active sink's last chunk ends after its
    /// last frame, and `onFinished` runs (on the main loop) once the
    /// end-of-stream has passed into the sink and every chunk is closed.
    func markFinishing(onInputEnded: @escaping () -> Void) {
        MainLoop.preconditionOnLoop()
        let sink = lock.withLock { () -> Element in
            endings[active.id] = .stopped
            return active
        }
        guard let feed = input(of: sink)?.peer else {
            lock.withLock { inputEnded = true }
            MainLoop.post(onInputEnded)
            return
        }
        feed.onEndOfStream { [weak self] in
            guard let self else { return }
            self.lock.withLock { self.inputEnded = true }
            MainLoop.post(onInputEnded)
        }
    }

    /// Chunks opened and not yet closed other than the one frames go to now:
    /// those still being finalised after a split, which may well finish
    /// when the chunk being written cannot.
    var finishingCount: Int {
        lock.withLock { open.count - (writing.map { open[$0] == nil ? 0 : 1 } ?? 0) }
    }

    /// When the oldest chunk opened and not yet closed started (on the pipeline's clock).
    var oldestOpenStartClockNs: UInt64? { lock.withLock { open.values.map(\.startClockNs).min() } }

    /// True when the stream has ended and its last chunk is closed.
    var isFinished: Bool { lock.withLock { inputEnded && open.isEmpty } }

    // MARK: Live re-tune

    /// Asks for `target` (the recorder's settings after a re-tune). A length
    /// applies to the sink writing now; a container switch waits for the
    /// next keyframe, and changes asked meanwhile wait for it in the
    /// timeline. Throws when a switch cannot even start.
    func apply(_ target: ChunkSettings) throws {
        MainLoop.preconditionOnLoop()
        let steps = lock.withLock { timeline.request(target) }
        try perform(steps)
    }

    private func perform(_ steps: [ChunkTimeline.Step]) throws {
        for step in steps {
            switch step {
            case .setChunkLength(let ms):
                setChunkDuration(ms: ms)
            case .switchSink(let settings):
                do {
                    try startSwitch(to: settings)
                } catch {
                    lock.withLock { _ = timeline.abandon() }
                    throw error
                }
            }
        }
    }

    /// The next chunk takes the new length; robust muxing reserves room for it.
    private func setChunkDuration(ms: Int) {
        audio?.setChunkLength(ms: ms)
        let (sink, discards) = lock.withLock { (active, discarding.contains(active.id)) }
        // While no video is recorded the length waits in the timeline for the next chunk sink.
        guard !discards else { return }
        // Also for the chunk being written: the next cut comes at its start + the new length.
        cuts.setLength(ms: ms)
        sink.set("max-size-time", Self.backstopNs(durationMs: ms))
        setMuxerProperties(sink, durationMs: ms)
    }

    /// Switches the container without stopping capture. splitmuxsink cannot
    /// change its muxer while running, so at the next keyframe (requested
    /// now) the encoder is re-linked to a new splitmuxsink, and the old one
    /// is sent EOS so it finishes its chunk; it is removed once it has.
    /// The swap posts its completion to the main loop, which starts what
    /// the timeline queued meanwhile.
    private func startSwitch(to settings: ChunkSettings) throws {
        let old = lock.withLock { active }
        guard let oldPad = input(of: old), let feed = oldPad.peer else {
            throw GStreamerError("cannot switch the container: the chunk sink has no linked video input")
        }
        generation += 1
        let replacement = try Self.makeSink(for: settings, name: "chunks_\(generation)")
        feed.atNextKeyframe { [weak self] keyframeTime in
            guard let self else { return true }
            let oldID = old.id
            // A probe added while the keyframe that made the current sink is still being
            // dispatched is called for that same keyframe (GStreamer runs hooks added during
            // a dispatch): switching there would leave the current sink without a frame.
            // Wait for the keyframe this switch asked for.
            if let last = self.lock.withLock({ self.lastSwapKeyframe }), UInt64(keyframeTime) <= last { return false }
            self.lock.withLock { self.lastSwapKeyframe = UInt64(keyframeTime) }
            // The recording is ending: its last chunk stays in the old sink,
            // and the next pipeline run starts with the settings asked.
            guard self.lock.withLock({ self.endings[oldID] == nil }) else {
                MainLoop.post { [weak self] in self?.lock.withLock { _ = self?.timeline.abandon() } }
                return true
            }
            feed.unlink(from: oldPad)
            guard self.attach(replacement, to: feed, settings: settings) else {
                // Frames keep going to the old sink; the recorder restarts the pipeline.
                _ = feed.link(to: oldPad)
                MainLoop.post { [weak self] in self?.switchFailed("cannot link the encoder to the new chunk sink") }
                return true
            }
            // The new sink's first chunk starts at this keyframe.
            self.cuts.restart(at: UInt64(keyframeTime), lengthMs: settings.recordsVideo ? settings.chunkDurationMs : nil)
            // A sink that recorded nothing has no chunk to finish: it just goes.
            if self.lock.withLock({ self.discarding.remove(oldID) != nil }) {
                self.lock.withLock { self.active = replacement }
                MainLoop.post { [weak self, pipeline = self.pipeline] in
                    old.setState(.null)
                    pipeline.remove(old)
                    self?.switchCompleted()
                }
                return true
            }
            self.lock.withLock {
                self.endings[oldID] = .swapped(atRunningTime: UInt64(keyframeTime))
                self.retired[oldID] = old
                self.active = replacement
            }
            // Finishes the old sink's chunk; its fragment-closed message retires it.
            _ = oldPad.sendEndOfStream()
            MainLoop.post { [weak self] in self?.switchCompleted() }
            return true
        }
        feed.requestKeyframeUpstream()
    }

    /// On the main loop: the new sink receives the frames; start what waited for it.
    private func switchCompleted() {
        let steps = lock.withLock { timeline.switchCompleted() }
        do {
            try perform(steps)
        } catch {
            switchFailed("\(error)")
        }
    }

    private func switchFailed(_ message: String) {
        let wanted = lock.withLock { timeline.abandon() }
        logger.error("container switch failed: \(message); restarting the pipeline for \(wanted)")
        onSwitchFailed?(message)
    }

    private func retireIfDone(_ sinkID: ObjectID) {
        let done = lock.withLock { () -> Element? in
            guard !open.values.contains(where: { $0.sink == sinkID }) else { return nil }
            endings[sinkID] = nil
            formats[sinkID] = nil
            fragmentStarts[sinkID] = nil
            // The active sink ends with the whole pipeline; only swapped-out ones are removed here.
            return retired.removeValue(forKey: sinkID)
        }
        guard let done else { return }
        // Not from within its own message dispatch: post to the next loop turn.
        MainLoop.post { [pipeline] in
            done.setState(.null)
            pipeline.remove(done)
        }
    }
}
