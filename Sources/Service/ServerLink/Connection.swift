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
    /// Makes the session for a channel that just connected (the link wires it).
    var makeSession: ((LinkChannel) -> Session)!
    /// A session is connected and its state set: introduce the device, start sending.
    var onOpen: ((Session) -> Void)?
    var stateObservers: [(ServerLink.State) -> Void] = []
    var onConnectAttempt: ((String) -> Void)?
    /// The server's `communicationsPolicy`, each time a `clientConfig` holds one.
    var onCommunicationsPolicy: ((CommunicationsPolicy) -> Void)?

    /// The session on the connected channel, if any.
    private(set) var session: Session?
    private var reconnectTimer: LinkTimer?
    private var watchdog: LinkTimer?
    private var lastHeard: Date
    /// The channel's `streamedBytes` when the watchdog last looked.
    private var lastStreamed: UInt64 = 0
    private var stopped = true
    /// Increases with every connection attempt, so callbacks of an abandoned attempt are ignored.
    private var attempt = 0
    /// A file is going out: the next upload's metadata must never overtake it. Outlives the
    /// session that sent it: an aborted send still completes (with an error) later.
    var streamingFile = false

    private(set) var state: ServerLink.State = .disconnected {
        didSet { if state != oldValue { logger.notice("server \(address?.description ?? "(none)"): \(oldValue) → \(state)") } }
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
        lastHeard = clock.now
    }

    func start() {
        stopped = false
        if let address { connect(address, candidates: address.candidates) }
    }

    func stop() {
        stopped = true
        reconnectTimer?.cancel()
        attempt += 1
        drop(code: 1001, reason: "recorder stopping")
        set(.disconnected)
    }

    /// Moves to another server (nil: none); `forget` runs once the old connection is dropped.
    func switchServer(to newAddress: ServerAddress?, forget: () -> Void) {
        logger.notice("server: switching from \(address?.description ?? "(none)") to \(newAddress?.description ?? "(none)")")
        reconnectTimer?.cancel()
        attempt += 1
        drop(code: 1001, reason: "switching server")
        address = newAddress
        forget()
        set(.disconnected)
        if !stopped, let newAddress { connect(newAddress, candidates: newAddress.candidates) }
    }

    /// Something was heard from the server (a message, a pong) or the wire is free again.
    func heard() { lastHeard = clock.now }

    private func set(_ new: ServerLink.State) {
        state = new
        for observer in stateObservers { observer(new) }
    }

    /// Ends the current connection from this side (callers log why first).
    func drop(code: Int, reason: String) {
        watchdog?.cancel()
        session?.end(code: code, reason: reason, midFile: streamingFile)
        session = nil
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
        guard !stopped, let scheme = candidates.first else { return }
        set(.connecting)
        attempt += 1
        let thisAttempt = attempt
        let url = address.url(scheme)
        onConnectAttempt?(url)
        connector.connect(url: url, acceptAnyCertificate: !verifyTLS, deadlineSeconds: handshakeDeadline) { [weak self] result in
            guard let self, !self.stopped, thisAttempt == self.attempt else { return }
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
        let session = makeSession(channel)
        self.session = session
        channel.keepAlive(every: UInt32(max(1, keepAlive.rounded())))
        channel.setMaximumIncomingPayload(UInt64(maximumIncomingBytes))
        heard()
        lastStreamed = channel.streamedBytes
        channel.onPong { [weak self, weak session] payload in
            guard let self, let session, session === self.session else { return }
            self.heard()
            session.pong(payload)
        }
        // libsoup 3.2 keeps pinging a peer that has gone silent and never gives up on it; a TCP
        // connection may take many minutes to notice. The rule is in the comment on this type.
        watchdog = clock.every(watchdogTick) { [weak self, weak session] in
            guard let self, let session, session === self.session else { return false }
            let streamed = session.channel.streamedBytes
            if streamed != self.lastStreamed {
                self.lastStreamed = streamed
                self.heard()
            }
            let silent = self.clock.now.timeIntervalSince(self.lastHeard)
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
        set(.connected(scheme))
        onOpen?(session)
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
        guard !stopped else { return }
        set(.disconnected)
        reconnectTimer?.cancel()
        reconnectTimer = clock.after(reconnectDelay) { [weak self] in
            guard let self, !self.stopped, let address = self.address else { return }
            self.connect(address, candidates: address.candidates)
        }
    }
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
