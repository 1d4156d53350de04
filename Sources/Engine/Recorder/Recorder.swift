import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import RecorderCore
import Storage

/// Why the recorder refuses to start.
public struct RecorderStartError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The recording service: keeps a pipeline running, turns what it writes
/// into catalogued chunks, enforces retention, restarts after failures,
/// and takes live re-tunes.
///
/// Settings: `tuning` is the one owner of the recording settings
/// (container, chunk length, buffer size); `config` and `currentTuning`
/// read it, each pipeline run starts its chunk sink with it, and a
/// re-tune hands it to the running chunk sink, whose `ChunkTimeline`
/// orders the changes. Retention reads the buffer size from it.
///
/// Threading: every method must be called on the thread running the GLib
/// main loop (`MainLoop`), which owns this object (checked at entry with
/// `MainLoop.preconditionOnLoop()`); callbacks also arrive there. The
/// slow steps (the storage repair and its media probes, draining and
/// closing the privacy stage) run on `worker`, a serial queue, and post
/// their result back to the main loop.
public final class Recorder {
    public enum State: Equatable, CustomStringConvertible {
        case stopped
        /// A pipeline runs, but no frame has reached the chunks yet.
        case waitingForSource
        /// Frames reach the chunks.
        case recording
        /// Waiting to restart the pipeline after a failure.
        case waitingToRetry(seconds: Double)
        case stopping

        public var description: String {
            switch self {
            case .stopped: return "stopped"
            case .waitingForSource: return "waiting for the source"
            case .recording: return "recording"
            case .waitingToRetry(let s): return "waiting \(String(format: "%.0f", s)) s to retry"
            case .stopping: return "stopping"
            }
        }
    }

    /// The config in force; its recording tunables are `tuning`'s.
    public var config: RecorderConfig {
        var config = baseConfig
        config.tuning = tuning
        return config
    }
    /// Everything but the recording tunables, which only `tuning` holds
    /// (read through `config`).
    private var baseConfig: RecorderConfig
    public let catalog: ChunkCatalog
    public private(set) var state: State = .stopped {
        didSet {
            guard state != oldValue else { return }
            logger.info("recorder: \(oldValue) → \(state)")
            onStateChange?(state)
        }
    }
    /// Called on the main loop after each chunk is finished and catalogued.
    public var onChunkFinished: ((FinishedChunk) -> Void)?
    /// Called on the main loop whenever `state` changes.
    public var onStateChange: ((State) -> Void)?
    /// Called on the main loop each time a pipeline has started and waits for its
    /// first frame: after the storage folder was checked, and after each restart.
    public var onPipelineStarted: (() -> Void)?
    /// Chunks finished and catalogued since this recorder was made.
    public private(set) var chunksRecorded = 0
    /// Why the last pipeline run failed or stopped producing frames, for
    /// reports such as "recorded nothing"; nil while nothing went wrong.
    public private(set) var lastProblem: String?
    /// Live pictures of what is recorded, after the privacy stage (built only while watched).
    public let preview: PreviewTap
    /// The recorded H.264 for a network stream (the RTSP server), taken where it enters the chunks.
    public let streamTap = StreamTap()
    /// Reads pairing QR codes from the captured picture (before the privacy stage, never recorded; built only while scanning).
    public let qrScanner = QRScanner()

    private let logger: Logger
    /// The wall clock against the pipelines' monotonic clock: its steps and whether it is synchronised.
    public let wallClock: WallClock
    private let makeProcessor: (RecorderConfig) throws -> FrameProcessor
    /// The pipeline run in progress (internal: tests reach its elements).
    private(set) var session: RecordingSession?
    /// The recording settings asked for (by the config, SIGHUP or the
    /// server): the one copy everything else reads.
    private var tuning: RecordingTuning
    /// Serial: the storage repair and the slow steps of stopping a session.
    private let worker = DispatchQueue(label: "allspark.recorder.worker")
    /// The service's clock: the retry backoff only waits, so a test may run it in virtual time.
    /// (The frame watchdog measures real time and stays on the main loop: RecordingSession.)
    private let clock: LoopClock
    /// Measures a file's playable duration: a synchronous discoverer run of
    /// up to 10 s, so called on `worker` only (the repair, checking a chunk
    /// closed after an error). Tests put in one that never returns.
    var mediaProbe: @Sendable (URL) -> Double? = { MediaProbe.duration(of: $0) }
    private var retryTimer: LoopTimer?
    private var retryDelay = RetryBackoff()
    /// The failures of the retries since recording last worked: said once, not at every try.
    private var failureLog = RepeatedFailureLog()
    /// Set by `init`, which checked the pipeline and the privacy stage: the first `start` need not again.
    private var checkedAtInit = true
    /// Set by `stop`: no restart or retry may start a pipeline after it.
    private var stopRequested = false
    private var pipelineFingerprint: String?
    /// Frame counts of the sessions that ended, plus the running one.
    private var finishedSessionStatistics = FrameStatistics()

    /// - Parameter makeProcessor: builds the privacy stage for each pipeline
    ///   run from the current config (a reload may change it); throwing
    ///   refuses to record (fail closed).
    public init(config: RecorderConfig, logger: Logger = Logger(label: "allspark.recorder"), clock: LoopClock = MainLoopClock.shared,
                makeProcessor: @escaping (RecorderConfig) throws -> FrameProcessor) throws {
        self.baseConfig = config
        self.logger = logger
        self.clock = clock
        self.makeProcessor = makeProcessor
        self.tuning = config.tuning
        wallClock = WallClock(syncFlag: config.recording.clockSyncFlag, logger: logger)
        preview = PreviewTap(settings: .init(framesPerSecond: config.console.previewFps, maximumWidth: config.console.previewWidth), clock: clock)
        GStreamer.initialize()
        // Before the catalog creates the storage folder: a refused run leaves nothing behind.
        try Self.validate(config, makeProcessor: makeProcessor)
        catalog = try ChunkCatalog(directory: URL(fileURLWithPath: config.recording.storageDirectory),
                                   logger: Logger(label: "allspark.catalog"))
    }

    /// Samples counters, CPU and temperature for `health` (started with the recorder).
    private lazy var healthSampler = HealthSampler { [unowned self] in
        (self.frameStatistics, self.session?.framePath.privacyCounts)
    }

    /// How recording goes now: the frame rate actually recorded, the privacy
    /// stage's state over the last minute, CPU and temperature, and what
    /// makes it degraded.
    public var health: RecordingHealth {
        MainLoop.preconditionOnLoop()
        return healthSampler.health(recording: state == .recording, sourceFPS: frameStatistics.framesPerSecond,
                                    stageNow: session?.framePath.privacyCounts)
    }

    /// Checks what a retry cannot fix: the pipeline file and the privacy stage
    /// (fail closed now, not at the first frame). A missing pipeline file is
    /// traced to the config line that names it.
    static func validate(_ config: RecorderConfig, makeProcessor: (RecorderConfig) throws -> FrameProcessor) throws {
        do {
            _ = try PipelineLoader.load(file: config.recording.pipeline, variables: config.pipelineVariables,
                                        privacyBoundary: config.privacy.faceBlur)
        } catch {
            guard FileManager.default.isReadableFile(atPath: config.recording.pipeline) else {
                throw RecorderStartError("\(error) (the path is from \(config.origin(of: "recording.pipeline")))")
            }
            throw error
        }
        try makeProcessor(config).close()
    }

    /// Frames captured and recorded since the recorder started, over every pipeline run.
    public var frameStatistics: FrameStatistics {
        var total = finishedSessionStatistics
        if let current = session?.framePath.statistics {
            total.captured += current.captured
            total.recorded += current.recorded
            total.afterStop += current.afterStop
            total.width = current.width
            total.height = current.height
            total.framesPerSecond = current.framesPerSecond
        }
        return total
    }

    public var currentTuning: RecordingTuning { tuning }

    /// Checks the pipeline, repairs the storage folder and starts recording.
    /// Throws for what a retry cannot fix (a broken pipeline file, no privacy stage).
    public func start() throws {
        MainLoop.preconditionOnLoop()
        stopRequested = false
        // `init` checked them (before making the storage folder); a later start checks again.
        if checkedAtInit { checkedAtInit = false } else { try Self.validate(config, makeProcessor: makeProcessor) }
        state = .waitingForSource
        healthSampler.start()
        // The repair probes every file the index does not vouch for: on the worker.
        worker.async { [catalog, mediaProbe] in
            let report = catalog.reconcile(probe: { mediaProbe(URL(fileURLWithPath: $0.reopenablePath)) })
            MainLoop.post { [weak self] in
                guard let self else { return }
                let summary = "storage \(catalog.directory.path): \(catalog.all.count) chunks, \(catalog.totalBytes / 1_048_576) MiB"
                    + (report.repaired.isEmpty ? "" : ", repaired \(report.repaired.count)")
                    + (report.removed.isEmpty ? "" : ", removed \(report.removed.count) unplayable")
                self.logger.info("\(summary)")
                self.enforceRetention()
                self.startSession()
            }
        }
    }

    private func startSession() {
        retryTimer = nil
        guard !stopRequested else { return }
        do {
            let loaded = try PipelineLoader.load(file: config.recording.pipeline, variables: pipelineVariables(of: config),
                                                 privacyBoundary: config.privacy.faceBlur)
            let processor = try makeProcessor(config)
            let session = RecordingSession(loaded: loaded, storage: catalog.directory, settings: ChunkSettings(tuning),
                                           companions: CompanionSettings(tuning),
                                           frameTimeout: config.recording.frameTimeoutSeconds,
                                           processor: processor, preview: preview, qrScanner: qrScanner,
                                           streamTap: streamTap, wallClock: wallClock, worker: worker, logger: logger)
            session.probe = mediaProbe
            session.onChunkFinished = { [weak self] chunk in self?.chunkFinished(chunk) }
            session.onFirstFrame = { [weak self, weak session] in
                guard let self, let session, session === self.session, self.state == .waitingForSource else { return }
                self.lastProblem = nil
                self.state = .recording
            }
            session.onFailure = { [weak self, weak session] failure in
                guard let self, let session, session === self.session else { return }
                self.sessionFailed(failure)
            }
            session.onSwitchFailed = { [weak self, weak session] _ in
                guard let self, let session, session === self.session else { return }
                self.restartSession()
            }
            self.session = session
            pipelineFingerprint = fingerprint(of: config)
            try session.start()
            state = .waitingForSource
            onPipelineStarted?()
            logger.notice("started \(loaded.template.file), waiting for the source; chunks go to \(catalog.directory.path) as \(tuning.recordsVideo ? tuning.videoFormat.rawValue : "no video (none)") chunks of \(tuning.chunkDurationMs) ms (frames through \(processor.name); audio: \(loaded.audioSink == nil ? "no audio_in branch" : tuning.audioFormat.rawValue); timestamps: \(tuning.timestampFormat.rawValue))")
        } catch {
            lastProblem = "cannot start recording: \(error)"
            logFailure(.error, "cannot start recording: \(error)")
            let failed = session
            session = nil
            failed?.stop { }
            scheduleRetry()
        }
    }

    /// Logs a failure of a pipeline run at `level` the first time, then (the
    /// same failure at every retry while the source stays away) at debug.
    private func logFailure(_ level: Logger.Level, _ text: String) {
        if failureLog.isNew(text) {
            logger.log(level: level, "\(text)")
        } else {
            logger.debug("again (\(failureLog.quietRepeats) times in a row, retrying every \(String(format: "%g", retryDelay.maximum)) s): \(text)")
        }
    }

    private func sessionFailed(_ failure: RecordingSession.Failure) {
        switch failure {
        case .pipelineError(let element, let message, let inWriter):
            lastProblem = "pipeline error from \(element): \(message)"
            let next = inWriter ? "the chunk being written cannot be finished; stopping at once and retrying"
                                : "finishing the current chunk and retrying"
            logFailure(.error, "pipeline error from \(element): \(message); \(next)")
        case .noFrames(let seconds, let everFlowed):
            let timeout = String(format: "%g", seconds)
            if everFlowed {
                lastProblem = "the source sent no frame for \(timeout) s"
                logFailure(.warning, "no frame from the source for \(timeout) s (recording.frame_timeout_s): a frozen camera or a stalled stream; finishing the chunk at its last frame and restarting the source")
            } else {
                lastProblem = "no frame reached the chunks within \(timeout) s of starting the pipeline"
                logFailure(.warning, "waiting for the source: no frame reached the chunks within \(timeout) s of starting \((config.recording.pipeline as NSString).lastPathComponent) (no camera, a source that sends nothing, or an element that never passes frames on); restarting it")
            }
        case .diskFull(let message):
            lastProblem = "the disk is full"
            StorageGuard(catalog: catalog).diskFull(message, maxBytes: tuning.bufferMaxBytes)
        case .sourceEnded:
            lastProblem = "the source ended"
            logFailure(.warning, "the source ended; restarting the pipeline")
        }
        stopSession { [weak self] in self?.scheduleRetry() }
    }

    /// True while a pipeline runs (a chunk is being written or about to be).
    public var isCapturing: Bool { state == .recording || state == .waitingForSource }

    /// Restarts capture at once if it is waiting to retry after a failure
    /// (the server's record command); true if it did.
    @discardableResult
    public func resumeIfWaiting() -> Bool {
        MainLoop.preconditionOnLoop()
        guard case .waitingToRetry = state, !stopRequested else { return false }
        retryTimer?.cancel()
        startSession()
        return true
    }

    private func scheduleRetry() {
        guard !stopRequested else { return }
        let delay = retryDelay.next()
        state = .waitingToRetry(seconds: delay)
        retryTimer = clock.after(delay) { [weak self] in
            guard let self, case .waitingToRetry = self.state else { return }
            self.startSession()
        }
    }

    /// Stops the running session, repairs what it left (on the worker) and
    /// then runs `completion` on the main loop, after everything the worker
    /// had to do: no thread of the session is left running by then.
    private func stopSession(completion: @escaping () -> Void) {
        guard let session else {
            worker.async { MainLoop.post(completion) }
            return
        }
        session.stop { [weak self] in
            guard let self else { return }
            self.addFinished(session.framePath.statistics)
            if self.session === session { self.session = nil }
            // Anything the pipeline could not finish is repaired now, not at the next boot.
            self.worker.async { [catalog = self.catalog, mediaProbe = self.mediaProbe] in
                catalog.reconcile(probe: { mediaProbe(URL(fileURLWithPath: $0.reopenablePath)) })
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    // A chunk abandoned on a full disk comes back through the repair, not as a
                    // finished chunk: it counts toward the buffer and the free-space reserve
                    // now, or each retry's repaired chunk fills the room the last one freed.
                    self.enforceRetention()
                    completion()
                }
            }
        }
    }

    /// Finishes the current chunk and starts a new pipeline run with the settings in force.
    private func restartSession() {
        stopSession { [weak self] in self?.startSession() }
    }

    private func addFinished(_ s: FrameStatistics) {
        finishedSessionStatistics.captured += s.captured
        finishedSessionStatistics.recorded += s.recorded
        finishedSessionStatistics.afterStop += s.afterStop
    }

    private func chunkFinished(_ chunk: FinishedChunk) {
        catalog.add(chunk.record)
        chunksRecorded += 1
        retryDelay.reset()
        failureLog.reset()
        logger.info("chunk \(chunk.record.file): \(String(format: "%.3f", chunk.record.duration)) s, \(chunk.record.size) bytes")
        enforceRetention()
        onChunkFinished?(chunk)
    }

    /// Deletes what the retention rules pick (`RetentionPlan`: `buffer_max_mb`,
    /// the free-space reserve, never the newest or a pinned chunk).
    private func enforceRetention() {
        StorageGuard(catalog: catalog).enforce(maxBytes: tuning.bufferMaxBytes)
    }

    /// Finishes the current chunk and stops. `completion` runs on the main loop.
    public func stop(completion: @escaping () -> Void = {}) {
        MainLoop.preconditionOnLoop()
        stopRequested = true
        retryTimer?.cancel()
        retryTimer = nil
        state = .stopping
        stopSession { [weak self] in
            self?.state = .stopped
            self?.healthSampler.stop()
            completion()
        }
    }

    // MARK: Live re-tune

    /// The one entry point for changing format, chunk length and buffer size
    /// on a running recorder (used by SIGHUP and by the server's clientConfig).
    /// Capture never stops: the next chunk uses the new duration and container.
    /// Returns a description of each change made.
    @discardableResult
    public func retune(_ new: RecordingTuning) -> [String] {
        MainLoop.preconditionOnLoop()
        var changes: [String] = []
        let old = tuning
        tuning = new
        if new.chunkDurationMs != old.chunkDurationMs {
            changes.append("chunk duration \(old.chunkDurationMs) → \(new.chunkDurationMs) ms")
        }
        if new.videoFormat != old.videoFormat {
            changes.append("container \(old.videoFormat.rawValue) → \(new.videoFormat.rawValue)")
        }
        if new.recordsVideo != old.recordsVideo {
            changes.append(new.recordsVideo ? "video recording resumes at the next keyframe"
                                            : "video recording stops at the next keyframe (videoFormat none); capture and the preview go on")
        }
        if CompanionSettings(new) != CompanionSettings(old) {
            changes.append("companions from the next chunk: timestamps \(new.timestampFormat.rawValue), audio \(new.audioFormat.rawValue)")
            session?.setCompanions(CompanionSettings(new))
        }
        if new.framerate != old.framerate, let fps = new.framerate {
            changes.append(framerateChange(fps))
        }
        if ChunkSettings(new) != ChunkSettings(old), let session {
            do {
                try session.apply(ChunkSettings(new))
            } catch {
                logger.error("cannot switch the container live (\(error)); restarting the pipeline instead")
                restartSession()
            }
        }
        if new.bufferMaxMB != old.bufferMaxMB {
            changes.append("buffer \(old.bufferMaxMB) → \(new.bufferMaxMB) MiB")
            enforceRetention()
        }
        for change in changes { logger.notice("re-tuned: \(change)") }
        return changes
    }

    /// Applies a re-read config file (SIGHUP): tunables go through `retune`;
    /// a changed pipeline file or variables restart the pipeline after the
    /// current chunk is finished. Other changes need a restart of the service.
    public func reload(_ new: RecorderConfig) {
        MainLoop.preconditionOnLoop()
        if new.recording.storageDirectory != config.recording.storageDirectory {
            logger.warning("recording.storage_dir changed; it takes effect when the service restarts")
        }
        let pipelineChanged = fingerprint(of: new) != pipelineFingerprint
        let previous = baseConfig
        var adopted = new
        adopted.recording.storageDirectory = previous.recording.storageDirectory
        // The tunables go through `tuning` (below), never through the base config.
        baseConfig = adopted
        if pipelineChanged {
            do {
                _ = try PipelineLoader.load(file: new.recording.pipeline, variables: new.pipelineVariables,
                                            privacyBoundary: new.privacy.faceBlur)
                try makeProcessor(new).close()
            } catch {
                logger.error("reload: the new pipeline or privacy settings are not usable, keeping the running ones: \(error)")
                baseConfig.recording.pipeline = previous.recording.pipeline
                baseConfig.pipelineVariables = previous.pipelineVariables
                baseConfig.privacy = previous.privacy
                retune(new.tuning)
                return
            }
            logger.notice("reload: the pipeline or privacy settings changed; finishing the current chunk and restarting it")
            tuning = new.tuning
            restartSession()
        } else {
            // The service applies the file's setting changes through its settings path first; what is left here is none.
            let changes = retune(new.tuning)
            if changes.isEmpty { logger.notice("reload: the pipeline and privacy settings are unchanged") }
        }
    }

    /// The variables a pipeline run is built with: the config's, with
    /// `framerate` set to the frame rate asked (the server's `fps`), when one is.
    private func pipelineVariables(of config: RecorderConfig) -> [String: String] {
        var variables = config.pipelineVariables
        if let fps = tuning.framerate, fps.isFinite, fps >= 1 {
            // Pipelines write it as `framerate=${framerate}/1` and as a keyframe interval: whole frames.
            variables[Self.framerateVariable] = String(Int(fps.rounded()))
        }
        return variables
    }

    static let framerateVariable = "framerate"
    private var loggedFramerateNotApplicable = false

    /// A frame rate asked live. Caps are fixed when the pipeline is parsed,
    /// and a live source (a V4L2 camera) cannot change its rate while
    /// running, so a pipeline written with `${framerate}` gets the new rate
    /// when it next starts (a restart, a reload, a retry); one without it
    /// keeps its own rate (logged once).
    private func framerateChange(_ fps: Double) -> String {
        let text = (try? String(contentsOfFile: config.recording.pipeline, encoding: .utf8)) ?? ""
        let file = (config.recording.pipeline as NSString).lastPathComponent
        if text.contains("${\(Self.framerateVariable)}") {
            return "frame rate \(String(format: "%g", fps)) fps: applied when \(file) next starts (caps are fixed while the pipeline runs)"
        }
        if !loggedFramerateNotApplicable {
            loggedFramerateNotApplicable = true
            logger.notice("fps not applicable to this pipeline: \(file) does not use ${\(Self.framerateVariable)}; it keeps its own frame rate")
        }
        return "frame rate \(String(format: "%g", fps)) fps asked (not applicable to \(file))"
    }

    /// Identity of what a pipeline run is built from: the file's text, the
    /// variables and the privacy stage's settings.
    private func fingerprint(of config: RecorderConfig) -> String {
        let text = (try? String(contentsOfFile: config.recording.pipeline, encoding: .utf8)) ?? ""
        let vars = pipelineVariables(of: config).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return [config.recording.pipeline, text, vars.joined(separator: "\n"), "\(config.privacy)"].joined(separator: "\n")
    }
}

/// The link reads and pins chunks through RecorderControl (RecorderCore); settings go through the service's SettingsKeeper.
extension Recorder: RecorderControl {}

/// When to try a failed source again: 1 s, then every 2 s for as long as it
/// stays away. Not a growing back-off: a camera unplugged for ten minutes
/// must record again within seconds of coming back (after a doubling
/// back-off, up to 30 s more were lost). A try is cheap: the pipeline is
/// parsed and started and fails at once while the source is missing; its
/// repeated failures are logged once, then only when the reason changes
/// (`RepeatedFailureLog`).
struct RetryBackoff {
    private(set) var current: Double = 0
    let initial: Double = 1
    let maximum: Double = 2

    mutating func next() -> Double {
        current = current == 0 ? initial : min(maximum, current * 2)
        return current
    }

    mutating func reset() { current = 0 }
}

/// Says a failure that repeats at every retry once at its level, then at
/// debug, and again when it changes or after recording resumed.
struct RepeatedFailureLog {
    private var last: String?
    private var repeats = 0

    /// True when `reason` should be logged at its own level now.
    mutating func isNew(_ reason: String) -> Bool {
        // Numbers (times, counts) vary between tries of one failure.
        let key = reason.filter { !$0.isNumber }
        defer { last = key }
        if key == last { repeats += 1; return false }
        repeats = 0
        return true
    }

    /// Repeats of the current failure not logged at its level.
    var quietRepeats: Int { repeats }

    mutating func reset() { last = nil; repeats = 0 }
}

extension MediaProbe {
    /// The playable duration of a file the storage folder opened and checked,
    /// read through its descriptor (never through a link swapped in since).
    public static func duration(of file: OpenedFile) -> Double? {
        duration(of: URL(fileURLWithPath: file.reopenablePath))
    }
}
