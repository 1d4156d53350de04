import AllSparkProtocol
import Foundation
import GLibSupport
import Logging
import RecorderCore
import SoupSupport

/// What the server may see and change on the running recorder.
public protocol RecorderControl: AnyObject {
    var currentTuning: RecordingTuning { get }
    @discardableResult func retune(_ tuning: RecordingTuning) -> [String]
    /// The recorded chunks (uploads read and pin them).
    var catalog: ChunkCatalog { get }
    /// True while a pipeline runs, so a chunk is being written now.
    var isCapturing: Bool { get }
    /// Restarts capture now if it is waiting to retry; true if it did.
    @discardableResult func resumeIfWaiting() -> Bool
}

/// The connection to one AllSpark server: connect (wss first, ws only when
/// the server does not speak TLS at all), introduce the device, apply and
/// persist `clientConfig`, announce finished chunks, upload chunks by time
/// range, and reconnect after a loss, forever.
///
/// Threading: created and used on the main-loop thread; libsoup calls back
/// there, and so do the recorder's chunk notifications.
public final class ServerLink {
    public enum State: Equatable, CustomStringConvertible {
        case disconnected
        case connecting
        case connected(ServerAddress.Scheme)
        public var description: String {
            switch self {
            case .disconnected: return "disconnected"
            case .connecting: return "connecting"
            case .connected(let s): return "connected (\(s.rawValue))"
            }
        }
    }

    /// What uploads may do.
    public struct UploadOptions {
        public var maxBytes: Int64
        public var attempts: Int
        /// Wait before sending again after the server refused a chunk.
        public var retryDelay: Double
        /// An upload with no settled reply after `replyTimeout` seconds plus one second per
        /// `replyBytesPerSecond` of its size is taken for lost: the connection is renewed and
        /// the chunk sent again.
        public var replyTimeout: Double
        public var replyBytesPerSecond: Double
        public init(maxBytes: Int64 = 300 * 1_048_576, attempts: Int = 5, retryDelay: Double = 2,
                    replyTimeout: Double = 30, replyBytesPerSecond: Double = 1_000_000) {
            self.maxBytes = maxBytes
            self.attempts = attempts
            self.retryDelay = retryDelay
            self.replyTimeout = replyTimeout
            self.replyBytesPerSecond = replyBytesPerSecond
        }
    }

    /// The server connected to (or being tried); nil when there is none to use.
    public private(set) var address: ServerAddress?
    private let deviceName: String
    private let verifyTLS: Bool
    private let reconnectDelay: Double
    /// Seconds between keep-alive pings; a peer silent for three of them is taken for dead.
    private let keepAlive: Double
    private var lastHeard = Date()
    private var watchdog: MainLoop.Source?
    /// A file is going out: pings and pongs wait behind it, so silence proves nothing.
    private var streamingFile = false
    private let announceChunks: Bool
    private let settingsStore: ServerSettingsStore?
    private weak var recorder: RecorderControl?
    private let logger: Logger
    // Short enough that a wss attempt on a server that never answers the TLS hello gives way to ws soon.
    private let connector = WebSocketConnector(timeoutSeconds: 5)
    private var socket: WebSocket?
    private var reconnectTimer: MainLoop.Source?
    private var stopped = true
    /// Increases with every connection attempt, so callbacks of an abandoned attempt are ignored.
    private var attempt = 0
    /// Replies owed by the server on the current connection (none are owed on a new one).
    private var ledger = ReplyLedger<String>()
    private let uploads: UploadQueue?
    private let uploadOptions: UploadOptions
    /// What the server may ask of this box.
    private let bounds: ServerBounds
    /// Runs out when an upload in flight got no settled reply in time.
    private var replyTimer: MainLoop.Source?
    /// The ping sent after the upload in flight's file, and which file it follows.
    private var pendingBarrier: (payload: String, file: String)?
    private var barrierCount = 0
    /// `chunkSaved` messages held back while an upload is owed its replies, so that no other
    /// reply can come between the upload's (they are sent once it is settled).
    private var heldAnnouncements: [String] = []

    public private(set) var state: State = .disconnected {
        didSet { if state != oldValue { logger.notice("server \(address?.description ?? "(none)"): \(oldValue) → \(state)") } }
    }
    private var stateObservers: [(State) -> Void] = []
    /// Calls `observer` on every state change, after it is logged (any number of observers).
    public func onStateChange(_ observer: @escaping (State) -> Void) { stateObservers.append(observer) }
    /// Every URL a connection is attempted to (status displays, and tests that check there is no downgrade).
    public var onConnectAttempt: ((String) -> Void)?

    public init(address: ServerAddress?, deviceName: String, verifyTLS: Bool, reconnectDelay: Double,
                recorder: RecorderControl?, keepAliveSeconds: Double = 15,
                announceChunks: Bool = true, uploadOptions: UploadOptions = UploadOptions(),
                bounds: ServerBounds = ServerBounds(),
                settingsStore: ServerSettingsStore? = nil, logger: Logger = Logger(label: "allspark.server")) {
        self.address = address
        self.deviceName = deviceName
        self.verifyTLS = verifyTLS
        self.reconnectDelay = reconnectDelay
        keepAlive = keepAliveSeconds
        self.announceChunks = announceChunks
        self.settingsStore = settingsStore
        self.recorder = recorder
        self.logger = logger
        self.uploadOptions = uploadOptions
        self.bounds = bounds
        uploads = recorder.map {
            UploadQueue(catalog: $0.catalog, maxBytes: uploadOptions.maxBytes, maxAttempts: uploadOptions.attempts,
                        retryDelay: uploadOptions.retryDelay, logger: logger)
        }
        uploads?.transport = self
        if !verifyTLS {
            logger.warning("server.verify_tls = false: any TLS certificate is accepted, including self-signed ones")
        }
    }

    public func start() {
        stopped = false
        if let address { connect(address, candidates: address.candidates) }
    }

    public func stop() {
        stopped = true
        reconnectTimer?.cancel()
        attempt += 1
        dropSocket(code: 1001, reason: "recorder stopping")
        set(.disconnected)
    }

    /// Moves to another server (nil: none), dropping the current connection.
    public func connect(to newAddress: ServerAddress?) {
        guard newAddress != address else { return }
        logger.notice("server: switching from \(address?.description ?? "(none)") to \(newAddress?.description ?? "(none)")")
        reconnectTimer?.cancel()
        attempt += 1
        dropSocket(code: 1001, reason: "switching server")
        address = newAddress
        uploads?.serverChanged()
        set(.disconnected)
        if !stopped, let newAddress { connect(newAddress, candidates: newAddress.candidates) }
    }

    /// Each upload that ended: the chunk's file name and whether the server received it.
    public var onUploadFinished: ((String, Bool) -> Void)? {
        get { uploads?.onFinished }
        set { uploads?.onFinished = newValue }
    }

    /// Uploads the chunks overlapping `[start, end)` (a local user's request, like the server's uploadTimeRange).
    public func upload(from start: Double, to end: Double, reason: String) {
        requestUpload(from: start, to: end, reason: reason)
    }

    /// Chunks still to upload (waiting or being sent).
    public var pendingUploads: Int { (uploads?.waiting.count ?? 0) + (uploads?.inFlight == nil ? 0 : 1) }

    /// The recorder finished a chunk: announce it (`chunkSaved`) and upload
    /// it if a requested range is waiting for it.
    public func chunkFinished(_ chunk: ChunkRecord, fps: Double, width: Int, height: Int, camera: String) {
        if announceChunks, let socket, socket.isOpen {
            heldAnnouncements.append(ClientMessage.text(ClientMessage.ChunkSaved(startTime: chunk.start, endTime: chunk.end, camera: camera, size: chunk.size, format: chunk.format.rawValue, fps: fps,
                                                                                 width: width, height: height)))
            sendHeldAnnouncements()
        }
        uploads?.chunkFinished(chunk)
    }

    /// Sends the `chunkSaved` messages held back, unless an upload is still owed its replies.
    private func sendHeldAnnouncements() {
        guard let socket, socket.isOpen, !ledger.isWaitingForUpload else { return }
        for text in heldAnnouncements {
            socket.send(text: text)
            ledger.sent(.chunkSaved)
        }
        heldAnnouncements.removeAll()
    }

    /// The recorder stopped: ranges waiting for chunks will get no more.
    public func recordingEnded() { uploads?.recordingEnded() }

    private func set(_ new: State) {
        state = new
        for observer in stateObservers { observer(new) }
    }

    /// Ends the current connection from this side (callers log why first).
    private func dropSocket(code: Int, reason: String) {
        watchdog?.cancel()
        replyTimer?.cancel()
        replyTimer = nil
        pendingBarrier = nil
        // Half a streamed file is on the wire: a close frame cannot follow it, only an abrupt close.
        if streamingFile { socket?.abort(reason: reason) }
        socket?.close(code: code, reason: reason)   // nothing after an abort
        socket = nil
        ledger = ReplyLedger()
        uploads?.connectionLost()
    }

    /// The link can no longer trust this connection (replies that fit nothing, or none in time):
    /// says so, drops it, and reconnects; what was not confirmed is sent again on the new one.
    private func renewConnection(because reason: String) {
        guard socket != nil else { return }
        logger.warning("server \(address?.description ?? ""): \(reason); the recorder closes the connection (1002) and reconnects, and sends again everything the server did not confirm")
        dropSocket(code: 1002, reason: "replies out of step")
        scheduleReconnect()
    }

    private func connect(_ address: ServerAddress, candidates: [ServerAddress.Scheme]) {
        guard !stopped, let scheme = candidates.first else { return }
        set(.connecting)
        attempt += 1
        let thisAttempt = attempt
        let url = address.url(scheme)
        onConnectAttempt?(url)
        connector.connect(url: url, acceptAnyCertificate: !verifyTLS) { [weak self] result in
            guard let self, !self.stopped, thisAttempt == self.attempt else { return }
            switch result {
            case .success(let socket):
                self.connected(socket, scheme: scheme)
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

    private func connected(_ socket: WebSocket, scheme: ServerAddress.Scheme) {
        self.socket = socket
        ledger = ReplyLedger()
        socket.keepAlive(every: UInt32(max(1, keepAlive.rounded())))
        socket.setMaximumIncomingPayload(UInt64(maximumIncomingBytes))
        lastHeard = Date()
        socket.onPong { [weak self, weak socket] payload in
            guard let self, let socket, socket === self.socket else { return }
            self.lastHeard = Date()
            if let barrier = self.pendingBarrier, barrier.payload == payload {
                self.pendingBarrier = nil
                self.attribute(self.ledger.barrier(after: barrier.file), detail: "")
            }
        }
        // libsoup 3.2 keeps pinging a peer that has gone silent (a crashed host, a cut cable
        // with no RST); a TCP connection may take many minutes to notice. Three missed
        // pings mean the server is gone: drop the connection and reconnect.
        watchdog = MainLoop.every(keepAlive) { [weak self, weak socket] in
            guard let self, let socket, socket === self.socket else { return false }
            let silent = Date().timeIntervalSince(self.lastHeard)
            guard silent > 3 * self.keepAlive, !self.streamingFile else { return true }
            self.logger.warning("server \(self.address?.description ?? ""): no answer to keep-alive pings for \(Int(silent)) s; the recorder drops the connection")
            socket.abort(reason: "no answer to keep-alive pings")
            self.dropSocket(code: 1001, reason: "")
            self.scheduleReconnect()
            return false
        }
        socket.onEvents(message: { [weak self] message in
            self?.lastHeard = Date()
            self?.received(message)
        }, closed: { [weak self, weak socket] ending in
            // Connections this link ended itself were logged (with why) when it ended them.
            guard let self, let socket, socket === self.socket else { return }
            self.logger.warning("\(self.describe(ending))")
            self.dropSocket(code: 1000, reason: "")
            self.scheduleReconnect()
        })
        set(.connected(scheme))
        socket.send(text: ClientMessage.text(ClientMessage.ClientInfo(clientName: deviceName)))
        sendHeldAnnouncements()
        uploads?.pump()
    }

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
        reconnectTimer = MainLoop.after(reconnectDelay) { [weak self] in
            guard let self, !self.stopped, let address = self.address else { return }
            self.connect(address, candidates: address.candidates)
        }
    }

    private func received(_ message: WebSocket.Message) {
        guard case .text(let text) = message else {
            logger.warning("server sent a binary message; ignored")
            return
        }
        switch ServerMessage.parse(text) {
        case .failure(let rejection):
            logger.warning("server message ignored: \(rejection)")
        case .success(.clientConfig(let update)):
            apply(update)
        case .success(.uploadTimeRange(let start, let end, let message)):
            requestUpload(from: start, to: end,
                          reason: "uploadTimeRange [\(format(start)), \(format(end)))\(message.map { " \"\(loggable($0))\"" } ?? "")")
        case .success(.record(let message, let duration, let autoUpload)):
            record(message: message, duration: duration, autoUpload: autoUpload)
        case .success(.otherCommand(let name)):
            logger.notice("server command \"\(loggable(name))\" is not one this recorder knows; ignored")
        case .success(.status(let success, let message)):
            attribute(ledger.received(success: success, message: message),
                      detail: "\(success ? "success" : "error")\(message.map { ": \(loggable($0))" } ?? "")")
        }
    }

    /// Acts on what a reply (or the barrier after an upload) meant; `detail` is the reply, escaped, for the log.
    private func attribute(_ attribution: ReplyLedger<String>.Attribution, detail: String) {
        switch attribution {
        case .chunkSaved:
            // Old servers answer chunkSaved with "Unknown message type": expected, not a fault.
            logger.debug("server answered chunkSaved (\(detail))")
        case .upload(let file, let ok, let message):
            replyTimer?.cancel()
            replyTimer = nil
            uploads?.finished(file, success: ok, message: message.map { loggable($0) })
            sendHeldAnnouncements()
        case .noted(let file):
            logger.debug("server replied to the upload of \(file) (\(detail)); settled once nothing more can belong to it")
        case .tailOfFailedUpload(let file):
            logger.debug("server's second error for the refused upload of \(file) (\(detail))")
        case .nothing:
            break
        case .untrusted(let why):
            renewConnection(because: "the server's replies no longer fit what was sent: \(why)\(detail.isEmpty ? "" : " (last: \(detail))")")
        }
    }

    private func requestUpload(from start: Double, to end: Double, reason: String) {
        guard let uploads, let recorder else {
            logger.warning("\(reason): no recorder is attached to this link; nothing to upload")
            return
        }
        let now = Date().timeIntervalSince1970
        let (range, clamped) = bounds.clampRange(start: start, end: end, now: now)
        guard let range else {
            logger.warning("\(reason): begins more than \(format(bounds.maxRequestFutureSeconds)) s from now (server.max_request_future_s); ignored")
            return
        }
        if clamped {
            logger.warning("\(reason): reaches \(format(end - now)) s into the future; only the next \(format(bounds.maxRequestFutureSeconds)) s are taken (server.max_request_future_s)")
        }
        uploads.request(from: range.start, to: range.end, recording: recorder.isCapturing,
                        chunkDuration: Double(recorder.currentTuning.chunkDurationMs) / 1000, reason: reason)
    }

    private func record(message: String?, duration: Double?, autoUpload: Bool) {
        let text = message.map { ": \"\(loggable($0))\"" } ?? ""
        if recorder?.resumeIfWaiting() == true {
            logger.notice("record command from the server\(text); capture was waiting to retry and restarts now")
        } else {
            logger.notice("record command from the server\(text); the recorder is already recording")
        }
        if autoUpload, let asked = duration {
            let duration = bounds.clampRecordDuration(asked)
            if duration < asked {
                logger.warning("record command asks for \(format(asked)) s with autoUpload; only \(format(duration)) s are taken (server.max_record_duration_s)")
            }
            let now = Date().timeIntervalSince1970
            requestUpload(from: now, to: now + duration,
                          reason: "record command (autoUpload of the next \(format(duration)) s)")
        }
    }

    private func apply(_ update: ClientConfigUpdate) {
        for (field, reason) in update.rejected.sorted(by: { $0.key < $1.key }) {
            logger.warning("clientConfig: \(loggable(field)) rejected: \(reason)")
        }
        if !update.ignoredKeys.isEmpty {
            logger.debug("clientConfig: ignoring keys this recorder does not use: \(loggable(update.ignoredKeys.joined(separator: ", ")))")
        }
        guard let recorder else { return }
        var update = update
        if let asked = update.bufferMaxMB {
            let allowed = bounds.clampBuffer(asked)
            if allowed != asked {
                logger.warning("clientConfig: videoBufferMaxMB \(asked) is outside what this box allows (server.min_buffer_mb \(bounds.minBufferMB) … server.max_buffer_mb \(bounds.maxBufferMB)); using \(allowed)")
                update.bufferMaxMB = allowed
            }
        }
        let changes = recorder.retune(update.applied(to: recorder.currentTuning))
        logger.notice("clientConfig applied: \(changes.isEmpty ? "nothing changed" : changes.joined(separator: "; "))")
        guard update.videoFormat != nil || update.chunkDurationMs != nil || update.bufferMaxMB != nil,
              let settingsStore else { return }
        do {
            try settingsStore.save(recorder.currentTuning, server: address?.description ?? "")
        } catch {
            logger.error("cannot keep the server's settings in \(settingsStore.url.path) for the next start: \(error)")
        }
    }

    private func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }
}

extension ServerLink: UploadTransport {
    /// Connected, and the previous file is completely sent: the next upload's metadata must
    /// never overtake the previous file (the server would write that file under the new name).
    var canSend: Bool { socket?.isOpen == true && !streamingFile }

    func sendUpload(_ chunk: ChunkRecord, file: OpenedFile) throws {
        guard let socket, socket.isOpen else { throw WebSocketError(description: "not connected") }
        socket.send(text: ClientMessage.text(ClientMessage.UploadMetadata(filename: chunk.file, filesize: chunk.size, mimetype: chunk.format.mimeType)))
        ledger.sent(.upload(chunk.file))
        let bound = uploadOptions.replyTimeout + Double(chunk.size) / uploadOptions.replyBytesPerSecond
        replyTimer?.cancel()
        replyTimer = MainLoop.after(bound) { [weak self, weak socket] in
            guard let self, let socket, socket === self.socket else { return }
            self.replyTimer = nil
            self.renewConnection(because: "no reply to the upload of \(chunk.file) within \(self.format(bound)) s")
        }
        streamingFile = true
        socket.send(fileAt: file.reopenablePath) { [weak self, weak socket] result in
            withExtendedLifetime(file) {}   // the descriptor stays open until the file is sent
            guard let self else { return }
            self.streamingFile = false
            self.lastHeard = Date()
            guard let socket, socket === self.socket else {
                self.uploads?.pump()
                return
            }
            switch result {
            case .success:
                // The server's replies to the upload come before its pong to this ping (it answers in
                // order): that pong settles the upload (ReplyLedger).
                self.barrierCount += 1
                let payload = "allspark-upload-\(self.barrierCount)"
                if socket.ping(payload: payload) { self.pendingBarrier = (payload, chunk.file) }
                self.uploads?.pump()
            case .failure(let error):
                // Half a frame may be on the wire: the shim has cut the connection (no close frame can
                // follow half a frame). Only a fresh connection is in a known state; the chunk is sent
                // again after reconnecting (a bounded number of times).
                self.logger.warning("sending \(chunk.file) failed (\(loggable(error.description))); the recorder dropped the connection and reconnects")
                // (No close frame: none can follow half a frame, and 1011 is a server's code: libsoup
                // refuses it from a client with a CRITICAL.)
                socket.abort(reason: "sending \(chunk.file) failed")
                self.dropSocket(code: 1001, reason: "")
                self.scheduleReconnect()
            }
        }
    }
}

extension ClientConfigUpdate {
    /// The tuning after applying the accepted fields.
    func applied(to tuning: RecordingTuning) -> RecordingTuning {
        RecordingTuning(videoFormat: videoFormat.flatMap { RecorderCore.VideoFormat(rawValue: $0.rawValue) } ?? tuning.videoFormat,
                        chunkDurationMs: chunkDurationMs ?? tuning.chunkDurationMs,
                        bufferMaxMB: bufferMaxMB ?? tuning.bufferMaxMB)
    }
}
