import Foundation
import GLibSupport
import Logging
import RecorderCore
import SoupSupport

/// What the server may change on the running recorder.
public protocol RecorderControl: AnyObject {
    var currentTuning: RecordingTuning { get }
    @discardableResult func retune(_ tuning: RecordingTuning) -> [String]
}

/// The connection to one AllSpark server: connect (wss first, ws only when
/// the server does not speak TLS at all), introduce the device, apply
/// `clientConfig`, reconnect after a loss, forever.
///
/// Threading: created and used on the main-loop thread; libsoup calls back there.
///
/// Not yet here (issue "Server link"): uploads by time range, chunkSaved,
/// the record command's autoUpload, persisting the server's values.
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

    public let address: ServerAddress
    private let deviceName: String
    private let verifyTLS: Bool
    private let reconnectDelay: Double
    private weak var recorder: RecorderControl?
    private let logger: Logger
    // Short enough that a wss attempt on a server that never answers the TLS hello gives way to ws soon.
    private let connector = WebSocketConnector(timeoutSeconds: 5)
    private var socket: WebSocket?
    private var reconnectTimer: MainLoop.Source?
    private var stopped = true

    public private(set) var state: State = .disconnected {
        didSet { if state != oldValue { logger.notice("server \(address): \(oldValue) → \(state)") } }
    }
    /// Every state change, after it is logged.
    public var onStateChange: ((State) -> Void)?

    public init(address: ServerAddress, deviceName: String, verifyTLS: Bool, reconnectDelay: Double,
                recorder: RecorderControl?, logger: Logger = Logger(label: "allspark.server")) {
        self.address = address
        self.deviceName = deviceName
        self.verifyTLS = verifyTLS
        self.reconnectDelay = reconnectDelay
        self.recorder = recorder
        self.logger = logger
        if !verifyTLS {
            logger.warning("server.verify_tls = false: any TLS certificate is accepted, including self-signed ones")
        }
    }

    public func start() {
        stopped = false
        connect(candidates: address.candidates)
    }

    public func stop() {
        stopped = true
        reconnectTimer?.cancel()
        socket?.close(code: 1001, reason: "recorder stopping")
        socket = nil
        set(.disconnected)
    }

    private func set(_ new: State) {
        state = new
        onStateChange?(new)
    }

    private func connect(candidates: [ServerAddress.Scheme]) {
        guard !stopped, let scheme = candidates.first else { return }
        set(.connecting)
        let url = address.url(scheme)
        connector.connect(url: url, acceptAnyCertificate: !verifyTLS) { [weak self] result in
            guard let self, !self.stopped else { return }
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
                    self.connect(candidates: Array(candidates.dropFirst()))
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
        socket.keepAlive(every: 15)
        socket.setMaximumIncomingPayload(UInt64(ServerMessage.maximumTextBytes) * 4)
        socket.onEvents(message: { [weak self] message in
            self?.received(message)
        }, closed: { [weak self, weak socket] code, reason in
            guard let self, let socket, socket === self.socket else { return }
            self.logger.warning("server \(self.address) closed the connection (\(code)\(reason.map { ": \($0)" } ?? ""))")
            self.socket = nil
            self.set(.disconnected)
            self.scheduleReconnect()
        })
        set(.connected(scheme))
        socket.send(text: ClientMessage.text(ClientMessage.ClientInfo(clientName: deviceName)))
    }

    private func scheduleReconnect() {
        guard !stopped else { return }
        set(.disconnected)
        reconnectTimer?.cancel()
        reconnectTimer = MainLoop.after(reconnectDelay) { [weak self] in
            guard let self, !self.stopped else { return }
            self.connect(candidates: self.address.candidates)
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
        case .success(.uploadTimeRange(let start, let end, _)):
            logger.warning("uploadTimeRange [\(start), \(end)) received, but uploads are not implemented in this build yet")
        case .success(.record(let message, _, _)):
            logger.notice("record command from the server\(message.map { ": \($0)" } ?? ""); the recorder is already recording")
        case .success(.otherCommand(let name)):
            logger.notice("server command \"\(name)\" is not one this recorder knows; ignored")
        case .success(.status(let success, let message)):
            logger.debug("server status \(success ? "success" : "error")\(message.map { ": \($0)" } ?? "")")
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
    }
}
