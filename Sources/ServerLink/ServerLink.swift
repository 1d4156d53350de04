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
        public init(maxBytes: Int64 = 300 * 1_048_576, attempts: Int = 5, retryDelay: Double = 2) {
            self.maxBytes = maxBytes
            self.attempts = attempts
            self.retryDelay = retryDelay
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
            socket.send(text: ClientMessage.text(ClientMessage.ChunkSaved(chunk: chunk, camera: camera, fps: fps,
                                                                          width: width, height: height)))
            ledger.sent(.chunkSaved)
        }
        uploads?.chunkFinished(chunk)
    }

    /// The recorder stopped: ranges waiting for chunks will get no more.
    public func recordingEnded() { uploads?.recordingEnded() }

    private func set(_ new: State) {
        state = new
        for observer in stateObservers { observer(new) }
    }

    private func dropSocket(code: Int, reason: String) {
        watchdog?.cancel()
        // Half a streamed file is on the wire: a close frame cannot follow it, only an abrupt close.
        if streamingFile { socket?.abort() }
        socket?.close(code: code, reason: reason)
        socket = nil
        ledger = ReplyLedger()
        uploads?.connectionLost()
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
                if error.isCertificateError {
                    self.logger.error("\(url): the server's TLS certificate is not trusted (\(error)); not falling back to ws. For a self-signed server set server.verify_tls = false")
                } else if scheme == .wss, candidates.count > 1 {
                    // Not a certificate problem: the server may not speak TLS at all (no scheme was given).
                    // A certificate failure above never gets here: it is an error, not a reason to downgrade.
                    self.logger.info("\(url): \(error); trying \(candidates[1].rawValue)")
                    self.connect(address, candidates: Array(candidates.dropFirst()))
                    return
                } else {
                    self.logger.warning("\(url): \(error)")
                }
                self.scheduleReconnect()
            }
        }
    }

    private func connected(_ socket: WebSocket, scheme: ServerAddress.Scheme) {
        self.socket = socket
        ledger = ReplyLedger()
        socket.keepAlive(every: UInt32(max(1, keepAlive.rounded())))
        socket.setMaximumIncomingPayload(UInt64(ServerMessage.maximumTextBytes) * 4)
        lastHeard = Date()
        socket.onPong { [weak self] in self?.lastHeard = Date() }
        // libsoup 3.2 keeps pinging a peer that has gone silent (a crashed host, a cut cable
        // with no RST); a TCP connection may take many minutes to notice. Three missed
        // pings mean the server is gone: drop the connection and reconnect.
        watchdog = MainLoop.every(keepAlive) { [weak self, weak socket] in
            guard let self, let socket, socket === self.socket else { return false }
            let silent = Date().timeIntervalSince(self.lastHeard)
            guard silent > 3 * self.keepAlive, !self.streamingFile else { return true }
            self.logger.warning("server \(self.address?.description ?? ""): no answer to keep-alive pings for \(Int(silent)) s; dropping the connection")
            socket.abort()
            self.dropSocket(code: 1001, reason: "")
            self.scheduleReconnect()
            return false
        }
        socket.onEvents(message: { [weak self] message in
            self?.lastHeard = Date()
            self?.received(message)
        }, closed: { [weak self, weak socket] code, reason in
            guard let self, let socket, socket === self.socket else { return }
            self.logger.warning("server \(self.address?.description ?? "") closed the connection (\(code)\(reason.map { ": \($0)" } ?? ""))")
            self.dropSocket(code: 1000, reason: "")
            self.scheduleReconnect()
        })
        set(.connected(scheme))
        socket.send(text: ClientMessage.text(ClientMessage.ClientInfo(clientName: deviceName)))
        uploads?.pump()
    }

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
                          reason: "uploadTimeRange [\(format(start)), \(format(end)))\(message.map { " \"\($0)\"" } ?? "")")
        case .success(.record(let message, let duration, let autoUpload)):
            record(message: message, duration: duration, autoUpload: autoUpload)
        case .success(.otherCommand(let name)):
            logger.notice("server command \"\(name)\" is not one this recorder knows; ignored")
        case .success(.status(let success, let message)):
            attribute(success: success, message: message)
        }
    }

    private func attribute(success: Bool, message: String?) {
        let detail = message.map { ": \($0)" } ?? ""
        switch ledger.received(success: success, message: message) {
        case .chunkSaved(let ok):
            // Old servers answer chunkSaved with "Unknown message type": expected, not a fault.
            logger.debug("server answered chunkSaved (\(ok ? "success" : "error")\(detail))")
        case .upload(let file, let ok, let message):
            uploads?.finished(file, success: ok, message: message)
        case .tailOfFailedUpload(let file):
            logger.debug("server's second error for the refused upload of \(file)\(detail)")
        case .unexpected(let ok, _):
            logger.info("server sent a \(ok ? "success" : "error") reply nothing was waiting for\(detail)")
        }
    }

    private func requestUpload(from start: Double, to end: Double, reason: String) {
        guard let uploads, let recorder else {
            logger.warning("\(reason): no recorder is attached to this link; nothing to upload")
            return
        }
        uploads.request(from: start, to: end, recording: recorder.isCapturing,
                        chunkDuration: Double(recorder.currentTuning.chunkDurationMs) / 1000, reason: reason)
    }

    private func record(message: String?, duration: Double?, autoUpload: Bool) {
        let text = message.map { ": \"\($0)\"" } ?? ""
        if recorder?.resumeIfWaiting() == true {
            logger.notice("record command from the server\(text); capture was waiting to retry and restarts now")
        } else {
            logger.notice("record command from the server\(text); the recorder is already recording")
        }
        if autoUpload, let duration {
            let now = Date().timeIntervalSince1970
            requestUpload(from: now, to: now + duration,
                          reason: "record command (autoUpload of the next \(format(duration)) s)")
        }
    }

    private func apply(_ update: ClientConfigUpdate) {
        for (field, reason) in update.rejected.sorted(by: { $0.key < $1.key }) {
            logger.warning("clientConfig: \(field) rejected: \(reason)")
        }
        if !update.ignoredKeys.isEmpty {
            logger.debug("clientConfig: ignoring keys this recorder does not use: \(update.ignoredKeys.joined(separator: ", "))")
        }
        guard let recorder else { return }
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
        socket.send(text: ClientMessage.text(ClientMessage.UploadMetadata(chunk: chunk)))
        ledger.sent(.upload(chunk.file))
        streamingFile = true
        socket.send(fileAt: file.reopenablePath) { [weak self, weak socket] result in
            withExtendedLifetime(file) {}   // the descriptor stays open until the file is sent
            guard let self else { return }
            self.streamingFile = false
            self.lastHeard = Date()
            guard case .failure(let error) = result, let socket, socket === self.socket else {
                self.uploads?.pump()
                return
            }
            // The server holds our metadata and maybe half a frame: only a fresh connection is
            // in a known state. The chunk is sent again after reconnecting (a bounded number of times).
            self.logger.warning("sending \(chunk.file) failed (\(error)); reconnecting")
            socket.abort()
            self.dropSocket(code: 1011, reason: "")
            self.scheduleReconnect()
        }
    }
}
