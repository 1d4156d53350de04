import AllSparkProtocol
import Foundation
import Logging
import RecorderCore
import SoupSupport

/// The socket lifecycle of a link: tries the address's schemes in order
/// (wss, then ws only when the server does not speak TLS at all, never after
/// a certificate failure), gives each attempt one handshake deadline, opens
/// a `Session` per connected channel, watches it for a silent peer, and
/// reconnects after a loss, forever, until stopped.
///
/// A silent peer: a server after SIGTERM stops reading its connections (no
/// pongs, no replies, no close frame) for minutes; a crashed host or a cut
/// cable says nothing at all. The rule that notices either within
/// `silenceLimit` plus one watchdog tick, whatever is being sent:
/// - libsoup pings every `keepAlive` seconds; every message, every pong and
///   every byte of a streamed file that the connection takes counts as
///   hearing from the peer;
/// - while a file goes out as one binary frame, pings cannot be sent (no
///   frame may start inside another: libsoup queues them, the shim's gate
///   holds them until the file's frame ends), so no pong can come back. The
///   file's progress is then the sign of life: a peer that reads keeps taking
///   bytes; a deaf one stops taking them once the socket buffers between the
///   two are full (a crashed host at once). So an upload in flight never
///   hides a dead peer for longer than it takes to fill those buffers, and a
///   slow peer that still reads is not taken for dead;
/// - nothing heard for `silenceLimit` (three ping intervals): the peer is
///   taken for dead, the connection dropped and a new one tried. What earned
///   no reply on it is sent again there (Session.end, UploadQueue).
///
/// It is the upload queue's transport: uploads go out through the current session.
///
/// Threading: main-loop thread only (see ServerLink.swift).
final class Connection {
    /// Where the connection is; each case holds what only it has (a timer, the open session),
    /// so nothing of a state outlives it.
    enum Phase {
        /// Not started, or stopped: nothing runs and nothing is attempted.
        case stopped
        /// Started, not connected and not trying: no address, or between dropping a connection and the next step.
        case idle
        /// A handshake is under way; `attempt` tells its callback apart from an abandoned attempt's.
        case connecting(attempt: Int)
        /// Waiting `reconnectDelay` before the next attempt.
        case waitingToReconnect(LinkTimer)
        /// A session is open on a channel and watched for silence.
        case connected(Live)
    }

    /// An open connection: its session and what watches it.
    final class Live {
        let session: Session
        let scheme: ServerAddress.Scheme
        /// The silence watchdog (set right after the connection is made).
        var watchdog: LinkTimer?
        var lastHeard: Date
        /// The channel's `streamedBytes` when the watchdog last looked.
        var lastStreamed: UInt64

        init(session: Session, scheme: ServerAddress.Scheme, now: Date) {
            self.session = session
            self.scheme = scheme
            lastHeard = now
            lastStreamed = session.channel.streamedBytes
        }
    }

    /// The server connected to (or being tried); nil when there is none to use.
    private(set) var address: ServerAddress?
    private let verifyTLS: Bool
    private let reconnectDelay: Double
    /// Seconds between keep-alive pings.
    private let keepAlive: Double
    /// A peer not heard from for this long is taken for dead: three ping intervals, so one or
    /// two pings (or pongs) lost or late are not a reason to drop a working connection.
    private var silenceLimit: Double { 3 * keepAlive }
    /// How often the watchdog looks: the drop comes at most this long after `silenceLimit`.
    private let watchdogTick: Double = 1
    /// Connect, TLS and the HTTP upgrade together. Short enough that a wss attempt on a
    /// server that never answers the TLS hello gives way to ws soon.
    private let handshakeDeadline: UInt32 = 5
    private let connector: LinkConnector
    private let fileNames: UploadFileNames
    /// Connections in a row that the server dropped within a second of an upload's metadata:
    /// what servers before 0.5 do with every millisecond name.
    private var dropsAtMetadata = 0
    private let clock: LinkClock
    private let logger: Logger

    weak var uploads: UploadQueue?
    /// Makes the session for a channel that just connected and starts it once open (the link).
    weak var delegate: ConnectionDelegate?
    var stateObservers: [(ServerLink.State) -> Void] = []
    var onConnectAttempt: ((String) -> Void)?
    /// The server's `communicationsPolicy`, each time a `clientConfig` holds one.
    var onCommunicationsPolicy: ((CommunicationsPolicy) -> Void)?

    private var phase: Phase = .stopped {
        didSet { publishState() }
    }
    /// The session on the connected channel, if any.
    var session: Session? { if case .connected(let live) = phase { return live.session }; return nil }
    private var isStopped: Bool { if case .stopped = phase { return true }; return false }
    /// The id of the last connection attempt (`Phase.connecting`).
    private var attempts = 0
    /// A file is going out: the next upload's metadata must never overtake it. Outlives the
    /// session that sent it: an aborted send still completes (with an error) later.
    var streamingFile = false

    /// The state the link shows, as last told to the observers.
    private(set) var state: ServerLink.State = .disconnected

    /// Logs a change of the state the phase shows and tells the observers.
    private func publishState() {
        let new: ServerLink.State
        switch phase {
        case .stopped, .idle, .waitingToReconnect: new = .disconnected
        case .connecting: new = .connecting
        case .connected(let live): new = .connected(live.scheme)
        }
        guard new != state else { return }
        logger.notice("server \(address?.description ?? "(none)"): \(state) → \(new)")
        state = new
        for observer in stateObservers { observer(new) }
    }

    init(address: ServerAddress?, verifyTLS: Bool, reconnectDelay: Double, keepAliveSeconds: Double,
         fileNames: UploadFileNames = .milliseconds, connector: LinkConnector, clock: LinkClock, logger: Logger) {
        self.fileNames = fileNames
        self.address = address
        self.verifyTLS = verifyTLS
        self.reconnectDelay = reconnectDelay
        keepAlive = keepAliveSeconds
        self.connector = connector
        self.clock = clock
        self.logger = logger
    }

    func start() {
        guard isStopped else { return }
        phase = .idle
        if let address { connect(address, candidates: address.candidates) }
    }

    func stop() {
        drop(code: 1001, reason: "recorder stopping")
        phase = .stopped
    }

    /// Moves to another server (nil: none); `forget` runs once the old connection is dropped.
    func switchServer(to newAddress: ServerAddress?, forget: () -> Void) {
        logger.notice("server: switching from \(address?.description ?? "(none)") to \(newAddress?.description ?? "(none)")")
        let running = !isStopped
        drop(code: 1001, reason: "switching server")
        address = newAddress
        forget()
        guard running else { return }
        if let newAddress { connect(newAddress, candidates: newAddress.candidates) }
    }

    /// Something was heard from the server (a message, a pong) or the wire is free again.
    func heard() {
        if case .connected(let live) = phase { live.lastHeard = clock.now }
    }

    /// Ends the current connection, or the attempt or wait in progress, from this side (callers log
    /// why first), and leaves the connection idle (stopped stays stopped).
    func drop(code: Int, reason: String) {
        switch phase {
        case .connected(let live):
            live.watchdog?.cancel()
            phase = .idle
            live.session.end(code: code, reason: reason, midFile: streamingFile)
        case .waitingToReconnect(let timer):
            timer.cancel()
            phase = .idle
        case .connecting:
            // Its callback finds the phase changed and is ignored.
            phase = .idle
        case .idle, .stopped:
            break
        }
        uploads?.connectionLost()
    }

    /// The link can no longer trust this connection (replies that fit nothing, or none in time):
    /// says so, drops it, and reconnects; what was not confirmed is sent again on the new one.
    func renew(because reason: String) {
        guard session != nil else { return }
        logger.warning("server \(address?.description ?? ""): \(reason); the recorder closes the connection (1002) and reconnects, and sends again everything the server did not confirm")
        drop(code: 1002, reason: "replies out of step")
        scheduleReconnect()
    }

    /// Half a frame may be on the wire: only a fresh connection is in a known state.
    func cut(because reason: String) {
        // (A file send fails when the server drops the connection under it: a drop all the same.)
        if let session { noteDrop(of: session) }
        session?.channel.abort(reason: reason)
        drop(code: 1001, reason: "")
        scheduleReconnect()
    }

    private func connect(_ address: ServerAddress, candidates: [ServerAddress.Scheme]) {
        guard !isStopped, let scheme = candidates.first else { return }
        attempts += 1
        let thisAttempt = attempts
        phase = .connecting(attempt: thisAttempt)
        let url = address.url(scheme)
        onConnectAttempt?(url)
        connector.connect(url: url, acceptAnyCertificate: !verifyTLS, deadlineSeconds: handshakeDeadline) { [weak self] result in
            guard let self, case .connecting(let current) = self.phase, current == thisAttempt else { return }
            switch result {
            case .success(let channel):
                self.connected(channel, scheme: scheme)
            case .failure(let error):
                // The error may quote the server (its HTTP status line): escaped like all it sends.
                let why = loggable(error.description)
                if error.isCertificateError {
                    self.logger.error("\(url): the server's TLS certificate is not trusted (\(why)); not falling back to ws. For a self-signed server set server.verify_tls = false")
                } else if scheme == .wss, candidates.count > 1 {
                    // Not a certificate problem: the server may not speak TLS at all (no scheme was given).
                    // A certificate failure above never gets here: it is an error, not a reason to downgrade.
                    self.logger.info("\(url): \(why); trying \(candidates[1].rawValue)")
                    self.connect(address, candidates: Array(candidates.dropFirst()))
                    return
                } else {
                    self.logger.warning("\(url): \(why)")
                }
                self.scheduleReconnect()
            }
        }
    }

    private func connected(_ channel: LinkChannel, scheme: ServerAddress.Scheme) {
        guard let delegate else {
            channel.abort(reason: "the link is gone")
            phase = .idle
            return
        }
        let session = delegate.makeSession(for: channel, of: self)
        let live = Live(session: session, scheme: scheme, now: clock.now)
        channel.keepAlive(every: UInt32(max(1, keepAlive.rounded())))
        channel.setMaximumIncomingPayload(UInt64(maximumIncomingBytes))
        channel.onPong { [weak self, weak session] payload in
            guard let self, let session, session === self.session else { return }
            self.heard()
            session.pong(payload)
        }
        // libsoup 3.2 keeps pinging a peer that has gone silent and never gives up on it; a TCP
        // connection may take many minutes to notice. The rule is in the comment on this type.
        live.watchdog = clock.every(watchdogTick) { [weak self, weak live] in
            guard let self, let live, case .connected(let current) = self.phase, current === live else { return false }
            let session = live.session
            let streamed = session.channel.streamedBytes
            if streamed != live.lastStreamed {
                live.lastStreamed = streamed
                live.lastHeard = self.clock.now
            }
            let silent = self.clock.now.timeIntervalSince(live.lastHeard)
            guard silent > self.silenceLimit else { return true }
            let what = self.streamingFile ? "no pong, reply or progress of the file being sent" : "no answer to keep-alive pings"
            self.logger.warning("server \(self.address?.description ?? ""): \(what) for \(Int(silent)) s; the recorder takes the server for gone (a server shutting down stops reading), drops the connection and reconnects")
            session.channel.abort(reason: "\(what)")
            self.drop(code: 1001, reason: "")
            self.scheduleReconnect()
            return false
        }
        channel.onEvents(message: { [weak self, weak session] message in
            self?.heard()
            session?.received(message)
        }, closed: { [weak self, weak session] ending in
            // Connections this link ended itself were logged (with why) when it ended them.
            guard let self, let session, session === self.session else { return }
            self.logger.warning("\(self.describe(ending))")
            self.noteDrop(of: session)
            self.drop(code: 1000, reason: "")
            self.scheduleReconnect()
        })
        phase = .connected(live)
        delegate.opened(session)
    }

    /// The server ended a connection (or it failed under a file): three times in a row within a second of an upload's
    /// metadata is how a server before 0.5 answers a millisecond file name.
    private func noteDrop(of session: Session) {
        guard let sent = session.lastMetadataSent, clock.now.timeIntervalSince(sent) <= 1 else {
            dropsAtMetadata = 0
            return
        }
        dropsAtMetadata += 1
        guard dropsAtMetadata == 3 else { return }
        if fileNames == .milliseconds {
            logger.warning("server \(address?.description ?? ""): the connection was dropped within a second of an upload's metadata three times in a row; the server may be older than 0.5, which takes the millisecond time in chunk_<ms> names for seconds and drops the connection. If so, set server.file_names = \"seconds\" (or update the server)")
        } else {
            logger.warning("server \(address?.description ?? ""): the connection was dropped within a second of an upload's metadata three times in a row (server.file_names = \"seconds\" already)")
        }
    }

    /// An upload was received: the server takes this link's file names.
    func uploadReceived() { dropsAtMetadata = 0 }

    /// Who ended the connection and why, for the log.
    private func describe(_ ending: WebSocket.Ending) -> String {
        let server = "server \(address?.description ?? "")"
        switch ending {
        case .byPeer(let code, let reason):
            return "\(server) closed the connection (\(code)\(reason.map { $0.isEmpty ? "" : ": \(loggable($0))" } ?? ""))"
        case .byUs(1009, _):
            return "\(server) sent a message larger than \(maximumIncomingBytes / 1024) KiB, the most this recorder reads: the recorder closed the connection (1009, message too big); reconnecting"
        case .byUs(let code, let reason):
            return "the recorder closed the connection to \(server) (\(code): \(loggable(reason))); reconnecting"
        case .dropped(let error):
            return "the connection to \(server) was lost without a close (\(error.map { loggable($0) } ?? "no error given")); reconnecting"
        }
    }

    /// Largest message read from the server; libsoup closes the connection (1009) on a larger
    /// one without reading it. Text messages above `ServerMessage.maximumTextBytes` are read and ignored.
    private let maximumIncomingBytes = ServerMessage.maximumTextBytes * 4

    private func scheduleReconnect() {
        guard !isStopped else { return }
        if case .waitingToReconnect(let timer) = phase { timer.cancel() }
        let timer = clock.after(reconnectDelay) { [weak self] in
            guard let self, case .waitingToReconnect = self.phase, let address = self.address else { return }
            self.connect(address, candidates: address.candidates)
        }
        phase = .waitingToReconnect(timer)
    }
}

/// What a connection asks of its link (ServerLink).
protocol ConnectionDelegate: AnyObject {
    /// The session for a channel that just connected.
    func makeSession(for channel: LinkChannel, of connection: Connection) -> Session
    /// The session is open and the state says so: introduce the device, start sending.
    func opened(_ session: Session)
}

extension Connection: UploadTransport {
    /// Connected, and the previous file is completely sent: the next upload's metadata must
    /// never overtake the previous file (the server would write that file under the new name).
    var canSend: Bool { session?.channel.isOpen == true && !streamingFile }

    func sendUpload(_ upload: UploadFile, file: OpenedFile) throws {
        guard let session, session.channel.isOpen else { throw WebSocketError(description: "not connected") }
        session.sendUpload(upload, file: file)
    }
}
