import Foundation
import AllSparkProtocol
import GLibSupport
import Logging
import Recorder
import RecorderCore
import RTSPServerSupport
import ServerLink
import SystemdSupport

/// The recorder service: owns and wires the recorder (with its privacy
/// stage), the server link, discovery and the settings, with one lifecycle:
/// `start`, `reload` (SIGHUP), `stop`. The `run` command, the tests and any
/// other front end (a console) use this, not the parts one by one.
///
/// ## Threads and who owns what
/// - **The GLib main loop's thread** owns this service and everything it
///   wires: `Recorder`, its `RecordingSession` and the main-loop half of
///   `ChunkSink`, `ServerLink` with its upload queue, `DiscoveryService` and
///   the Avahi browser. libsoup, Avahi and bus callbacks arrive there; every
///   public method of these types must be called there.
/// - **GStreamer's streaming threads** run the frame path (the privacy
///   stage's `process`, the frame counters) and splitmuxsink's naming
///   callback; what they share with the main loop is under each type's lock
///   and said at its top.
/// - **The privacy stage's detection threads** (`FaceBlurStage`) belong to
///   one pipeline run; stopping the run closes the stage and joins them.
/// - **The RTSP server's thread** ("allspark-rtsp", with a GLib main context of its own)
///   owns the stream's clients, sessions and media (`RTSPStreamServer`); the stream's
///   credential check runs there. The recording's encoder thread only hands it frames.
/// - **Slow work** (finishing a run, probing media, repairing the catalog)
///   runs off the main loop, with its result posted back to it.
public final class RecorderService {
    /// What is running, carrying what it runs.
    public enum State {
        case idle
        case running(Parts)
        case stopping(Parts)
        /// Stopped after running: the parts stay for the final report.
        case stopped(Parts)
    }

    /// The parts a running service owns.
    public struct Parts {
        public let recorder: Recorder
        public let link: ServerLink?
        public let discovery: DiscoveryService?
    }

    public let settings: ServiceSettings
    /// The config in force. Its recording settings (`tuning`) have one owner: the recorder once
    /// made (they change while it runs, only through `apply`), `base` before that.
    public var configuration: RecorderConfig {
        var config = base
        if let recorder { config.tuning = recorder.currentTuning }
        return config
    }
    /// The config the service started with and the server the console chose; its `tuning` is
    /// read only while there is no recorder (see `configuration`).
    private var base: RecorderConfig
    /// The config file's own recording settings, as last read (a reload applies what changed in it).
    private var fileTuning: RecordingTuning
    /// The one settings path (Settings.swift): the server link's clientConfig, the console, SIGHUP.
    public private(set) lazy var settingsKeeper = SettingsKeeper(
        bounds: { [unowned self] in self.base.server.bounds },
        store: ServerSettingsStore(storageDirectory: base.recording.storageDirectory),
        current: { [unowned self] in self.configuration.tuning },
        retune: { [unowned self] tuning in
            if let recorder = self.recorder { return recorder.retune(tuning) }
            let changes = SettingsChange.difference(from: self.base.tuning, to: tuning).fields.map { "\($0.configKey) from the start" }
            self.base.tuning = tuning
            return changes.sorted()
        },
        fileTuning: { [unowned self] in self.fileTuning }, logger: logger)
    public private(set) var state: State = .idle
    /// The RTSP stream out, while `stream.rtsp_listen` is set and it listens.
    public private(set) var stream: RTSPStream?
    /// Checks the stream's credentials (`StreamAuth` in Console); without one the stream is not
    /// started (fail closed). Set before `start`; called on the RTSP server's thread.
    public var streamCheck: RTSPStreamServer.Check?
    /// The service's monitoring numbers (the console's `/metrics`).
    public let metrics = ServiceMetrics()
    /// Called on the main loop whenever the recorder's state changes.
    public var onRecorderStateChange: ((Recorder.State) -> Void)?
    /// Called on the main loop with the host taken from a pairing QR code, once it is stored and the link made.
    public var onPaired: ((String) -> Void)?
    private let logger: Logger
    /// Looking for a pairing QR code (`server.pair_by_qr` with no host, or `pairByQRCode()`).
    private var pairing: QRPairing?
    /// True while the service looks for a pairing QR code.
    public var isPairing: Bool { pairing != nil }
    /// Tells systemd how the service is, when it runs as a notify unit.
    private let systemd: SystemdReporter?
    /// The one clock of the service's timers: the recorder's retries, the preview, the stop's
    /// grace, the server link, the console. The main loop's unless a test gives a `TestClock`.
    public let clock: LoopClock

    /// Reads the config (with the server's last settings over it); throws
    /// for a config that cannot be used, naming the file and the key.
    /// - Parameter systemd: sd_notify's socket (`SystemdNotifier.fromEnvironment()` under systemd); nil tells no one.
    public init(settings: ServiceSettings, logger: Logger = Logger(label: "allspark.run"), systemd: SystemdNotifier? = nil,
                clock: LoopClock = MainLoopClock.shared) throws {
        self.settings = settings
        self.logger = logger
        self.clock = clock
        self.systemd = systemd.map { SystemdReporter(notifier: $0, logger: logger) }
        let file = try settings.loadFile(logger: logger)
        fileTuning = file.tuning
        base = settings.withKeptSettings(file, logger: logger)
    }

    public var parts: Parts? {
        switch state {
        case .idle: return nil
        case .running(let parts), .stopping(let parts), .stopped(let parts): return parts
        }
    }

    public var recorder: Recorder? { parts?.recorder }
    public var link: ServerLink? { parts?.link }
    public var discovery: DiscoveryService? { parts?.discovery }

    /// Starts recording, then the server link and discovery. Throws for what
    /// a retry cannot fix (a broken pipeline file, no privacy stage, an
    /// unusable storage folder); nothing is left running then.
    public func start() throws {
        MainLoop.preconditionOnLoop()
        guard case .idle = state else { return }
        if !configuration.privacy.faceBlur {
            logger.warning("privacy.face_blur = false: faces are recorded unblurred")
        }
        let metricsFactory = metrics.factory
        let recorder = try Recorder(config: configuration, clock: clock, makeProcessor: { try PrivacyStage.make(for: $0, metrics: metricsFactory) })
        recorder.onStateChange = { [weak self] state in
            guard let self else { return }
            if let now = self.health { self.systemd?.update(now.state, now.statistics, now.chunks, now.link) }
            self.onRecorderStateChange?(state)
        }
        try recorder.start()
        state = .running(connected(recorder))
        startStream(recorder)
        systemd?.start { [weak self] in self?.health }
        if configuration.server.pairByQR && configuration.server.host.isEmpty {
            do { try pairByQRCode() } catch { logger.error("pairing: \(error); recording goes on without it") }
        }
    }

    /// The RTSP stream is a window on the recording: when it cannot listen, recording goes on without it.
    private func startStream(_ recorder: Recorder) {
        guard configuration.stream.isEnabled else { return }
        guard let streamCheck else {
            logger.error("stream: no credential check was given, so the stream stays off (stream.rtsp_listen in \(settings.configFile))")
            return
        }
        do {
            stream = try RTSPStream(config: configuration, tap: recorder.streamTap, check: streamCheck, logger: logger)
        } catch {
            logger.error("stream: \(error); recording goes on without it (stream.rtsp_listen in \(settings.configFile))")
        }
    }

    /// What systemd's STATUS and watchdog read: the recorder's state and counters, the link's state.
    private var health: (state: Recorder.State, statistics: FrameStatistics, chunks: Int, link: ServerLink.State?)? {
        guard let recorder else { return nil }
        return (recorder.state, recorder.frameStatistics, recorder.catalog.all.count, link?.state)
    }

    /// Looks for a pairing QR code in the live picture (before the privacy
    /// stage; those frames are never recorded) until a code names a server
    /// that answers `/api/health`; that server becomes the server host, as
    /// `changeServer` makes it (kept for the next start). Whatever host is
    /// set now is replaced then, not before. Asking while already looking changes nothing.
    public func pairByQRCode() throws {
        MainLoop.preconditionOnLoop()
        guard case .running(let parts) = state else { throw NotRunning() }
        guard pairing == nil else { return }
        let pairing = QRPairing(scanner: parts.recorder.qrScanner, verifyTLS: configuration.server.verifyTLS,
                                logger: logger) { [weak self] host in
            guard let self else { return }
            // Also ends the pairing (a host is set).
            try self.changeServer(host: host, verifyTLS: self.configuration.server.verifyTLS, by: "QR code")
            self.logger.notice("paired by QR code: server.host = \(host), kept in the storage folder")
            self.onPaired?(host)
        }
        try pairing.start()
        self.pairing = pairing
    }

    /// Stops looking for a pairing QR code (nothing changes). Idempotent.
    public func stopPairing() {
        MainLoop.preconditionOnLoop()
        pairing?.stop()
        pairing = nil
    }

    /// The server link and discovery the configuration asks for, started, around `recorder`.
    private func connected(_ recorder: Recorder) -> Parts {
        let link = ServerLinks.forRecording(configuration, recorder: recorder, settings: settingsKeeper, clock: clock, logger: logger)
        // No link: finished chunks are announced to no one (not to a link stopped before).
        if link == nil { recorder.onChunkFinished = nil }
        link?.start()
        let discovery = DiscoveryService.start(for: configuration, link: link)
        return Parts(recorder: recorder, link: link, discovery: discovery)
    }

    /// Changes recording settings on the running service: the one path for the server's
    /// clientConfig, the console and SIGHUP (`SettingsKeeper`). Checked for `source` (a server
    /// within `[server]`, anyone else within the config's hard limits), applied to the recorder
    /// from the next chunk, and exactly what was applied kept for the next start.
    @discardableResult
    public func apply(_ change: SettingsChange, from source: SettingsSource) -> SettingsOutcome {
        MainLoop.preconditionOnLoop()
        return settingsKeeper.apply(change, from: source)
    }

    /// Re-reads the config file: the recording settings that changed in it
    /// go through `apply` (at the next chunk; what was set while running
    /// and not changed in the file stays), a changed pipeline restarts it
    /// after the current chunk. A file that cannot be used changes nothing (logged).
    public func reload() {
        MainLoop.preconditionOnLoop()
        guard case .running(let parts) = state else { return }
        logger.notice("re-reading \(settings.configFile)")
        do {
            let reloaded = try settings.loadFile(logger: logger)
            if reloaded.server != base.server || reloaded.device != base.device {
                logger.warning("[server] and [device] changes take effect at the next start, not now")
            }
            let changed = SettingsChange.difference(from: fileTuning, to: reloaded.tuning)
            fileTuning = reloaded.tuning
            if !changed.isEmpty {
                let outcome = apply(changed, from: .configFile)
                for refusal in outcome.refused { logger.error("reload: \(refusal)") }
            }
            var next = reloaded
            next.tuning = parts.recorder.currentTuning
            parts.recorder.reload(next)
        } catch {
            logger.error("reload refused, keeping the running settings: \(error)")
        }
    }

    /// Points the service at another AllSpark server (or none): the old link
    /// is stopped and a new one made for `host` and `verifyTLS`, wired like
    /// the one `start` makes (finished chunks are announced to it) and
    /// handed to a new discovery, whose choice now depends on the new host.
    /// An empty host means what an empty `server.host` means in the file:
    /// with discovery on, the server discovery picks; with it off, no link.
    /// Uploads still waiting on the old link are dropped (logged). Asking
    /// again for the server already connected to changes nothing.
    /// The choice is kept in the storage folder (`ServerLinkStore`) and laid
    /// over the config at the next start. Throws for a host that is not a
    /// server address, changing nothing.
    public func changeServer(host: String, verifyTLS: Bool, discovery: Bool? = nil, by who: String) throws {
        MainLoop.preconditionOnLoop()
        let host = host.trimmingCharacters(in: .whitespaces)
        if !host.isEmpty { _ = try ServerAddress(parsing: host) }
        guard case .running(let parts) = state else {
            throw NotRunning()
        }
        let discovery = discovery ?? configuration.server.discovery
        if host == configuration.server.host, verifyTLS == configuration.server.verifyTLS, discovery == configuration.server.discovery,
           case .connected? = parts.link?.state {
            logger.info("server change by \(who): already connected to \(host)")
            return
        }
        if let old = parts.link, old.pendingUploads > 0 {
            logger.warning("server change: \(old.pendingUploads) chunk(s) waiting to upload to \(old.address.map { "\($0)" } ?? "no server") are dropped")
        }
        // A host chosen (by a QR code or anyone else) ends the search for a pairing code.
        if !host.isEmpty { stopPairing() }
        parts.discovery?.stop()
        parts.link?.stop()
        base.server.host = host
        base.server.verifyTLS = verifyTLS
        base.server.discovery = discovery
        logger.notice("server changed by \(who): \(host.isEmpty ? (discovery ? "no host, using discovery" : "no server") : host), verify_tls = \(verifyTLS), discovery = \(discovery)")
        state = .running(connected(parts.recorder))
        do {
            try ServerLinkStore(storageDirectory: configuration.recording.storageDirectory)
                .save(host: host, verifyTLS: verifyTLS, discovery: discovery, by: who)
        } catch {
            logger.error("cannot keep the server choice for the next start: \(error)")
        }
    }

    /// `changeServer` was asked before `start` or after `stop`.
    public struct NotRunning: Error, CustomStringConvertible {
        public var description: String { "the service is not running; the server can be changed while it records" }
    }

    /// Finishes the current chunk and stops everything. The link stays up
    /// until the last chunk is finished, so that it is announced too.
    /// `completion` runs on the main loop once all is stopped.
    public func stop(reason: String, completion: @escaping () -> Void) {
        MainLoop.preconditionOnLoop()
        guard case .running(let parts) = state else {
            if case .stopping = state { return }
            completion()
            return
        }
        logger.notice("\(reason): finishing the current chunk")
        stopPairing()
        systemd?.stopping(reason)
        stream?.stop()
        stream = nil
        state = .stopping(parts)
        parts.discovery?.stop()
        parts.recorder.stop { [weak self] in
            parts.link?.recordingEnded()
            // The last chunks' chunkSaved may still be held behind an upload or unanswered, and
            // the server's autoUpload asks for each chunk right after its announcement: give a
            // connected server a few seconds to take them; what is still out then is logged.
            Self.whenDone(parts.link, within: Self.stopGraceSeconds, on: self?.clock ?? MainLoopClock.shared) { outstanding in
                if outstanding.announcements > 0 {
                    self?.logger.warning("stopping with \(outstanding.announcements) chunkSaved message(s) the server has not confirmed; those chunks are not announced")
                }
                if outstanding.uploads > 0 {
                    self?.logger.warning("stopping with \(outstanding.uploads) upload(s) not done; the server must ask for them again")
                }
                parts.link?.stop()
                self?.state = .stopped(parts)
                completion()
            }
        }
    }

    /// How long a stop waits for the server to confirm the last announcements and take the last uploads.
    static let stopGraceSeconds = 5.0

    /// Calls `done` with what is still outstanding, once nothing is or `seconds`
    /// passed (at once without a connected link).
    private static func whenDone(_ link: ServerLink?, within seconds: Double, on clock: LoopClock,
                                 _ done: @escaping ((announcements: Int, uploads: Int)) -> Void) {
        func busy(_ o: (announcements: Int, uploads: Int)) -> Bool { o.announcements > 0 || o.uploads > 0 }
        guard let link, case .connected = link.state, busy(link.outstanding) else {
            return done(link?.outstanding ?? (0, 0))
        }
        let deadline = clock.now.addingTimeInterval(seconds)
        clock.every(0.1) {
            let outstanding = link.outstanding
            guard case .connected = link.state, busy(outstanding), clock.now < deadline else {
                done(outstanding)
                return false
            }
            return true
        }
    }

    /// One line on what the service did, for the log at exit.
    public var summary: String {
        guard let recorder else { return "stopped before recording" }
        let stats = recorder.frameStatistics
        return "\(stats.captured) frames captured, \(stats.recorded) recorded; \(recorder.catalog.all.count) chunks in \(configuration.recording.storageDirectory)"
    }
}
