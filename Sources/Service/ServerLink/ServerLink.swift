import AllSparkProtocol
import Foundation
import GLibSupport
import Logging
import RecorderCore

// Threading, for every type in this target: ServerLink and its parts
// (Connection, Session, the commands, UploadQueue) are owned by the
// main-loop thread. They are created and called there; the channel
// (libsoup) and the clock (GLib timers) call back there, and so do the
// recorder's chunk notifications. None of them locks, and none may be
// touched from another thread (post to the main loop with MainLoop.post).
//
// Who does what:
//   ServerLink   the public face: owns the parts below and wires them
//   Connection   socket lifecycle: wss/ws candidates, handshake deadline, reconnect, keep-alive watchdog
//   Session      one connected socket: dispatches what the server sends, keeps the reply ledger, sends uploads
//   Commands/    one file per server command (clientConfig, uploadTimeRange, record)
//   UploadQueue  an upload from request to the server's confirmed reply
//   LinkChannel, LinkClock  what the link runs over: libsoup and GLib timers, or ServerLinkTesting's in-memory ones

/// The connection to one AllSpark server: connect (wss first, ws only when
/// the server does not speak TLS at all), introduce the device, apply and
/// persist `clientConfig`, announce finished chunks, upload chunks by time
/// range, and reconnect after a loss, forever.
///
/// Threading: main-loop thread only (see the top of this file).
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
        /// The average upload rate cap (`server.max_upload_kbps`; nil: none).
        public var maxBytesPerSecond: Double?
        /// False: the server's automatic requests (autoUpload) are declined (`server.accept_auto_uploads`).
        public var acceptAutomaticRequests: Bool
        /// How the time in an uploaded file's name is written (`server.file_names`).
        public var fileNames: UploadFileNames
        public init(maxBytes: Int64 = 300 * 1_048_576, attempts: Int = 5, retryDelay: Double = 2,
                    replyTimeout: Double = 30, replyBytesPerSecond: Double = 1_000_000,
                    maxBytesPerSecond: Double? = nil, acceptAutomaticRequests: Bool = true,
                    fileNames: UploadFileNames = .milliseconds) {
            self.fileNames = fileNames
            self.maxBytes = maxBytes
            self.attempts = attempts
            self.retryDelay = retryDelay
            self.replyTimeout = replyTimeout
            self.replyBytesPerSecond = replyBytesPerSecond
            self.maxBytesPerSecond = maxBytesPerSecond
            self.acceptAutomaticRequests = acceptAutomaticRequests
        }

        /// `kbps` kilobits per second as bytes per second (nil for 0: no cap).
        public static func bytesPerSecond(kbps: Int) -> Double? { kbps > 0 ? Double(kbps) * 1000 / 8 : nil }
    }

    /// Seconds between keep-alive pings. A peer silent for three of them is dropped, so a
    /// server that stops reading (one shutting down does) is noticed within 15 s.
    public static let defaultKeepAliveSeconds: Double = 4

    private let connection: Connection
    private let uploads: UploadQueue?
    private let announcements = HeldAnnouncements()
    private let deviceName: String
    private let announceChunks: Bool
    private let uploadOptions: UploadOptions
    private let bounds: ServerBounds
    /// Where the server's clientConfig goes: the one settings path (nil: applied nowhere).
    private let settings: SettingsKeeper?
    private weak var recorder: RecorderControl?
    private let clock: LinkClock
    private let logger: Logger

    /// The server connected to (or being tried); nil when there is none to use.
    public var address: ServerAddress? { connection.address }
    public var state: State { connection.state }
    /// Calls `observer` on every state change, after it is logged (any number of observers).
    public func onStateChange(_ observer: @escaping (State) -> Void) { connection.stateObservers.append(observer) }
    /// Every URL a connection is attempted to (status displays, and tests that check there is no downgrade).
    public var onConnectAttempt: ((String) -> Void)? {
        get { connection.onConnectAttempt }
        set { connection.onConnectAttempt = newValue }
    }

    /// `connector` and `clock` are what the link runs over: libsoup and the GLib main loop unless
    /// a test gives ServerLinkTesting's in-memory channel and the clock it moves.
    public init(address: ServerAddress?, deviceName: String, verifyTLS: Bool, reconnectDelay: Double,
                recorder: RecorderControl?, keepAliveSeconds: Double = ServerLink.defaultKeepAliveSeconds,
                announceChunks: Bool = true, uploadOptions: UploadOptions = UploadOptions(),
                bounds: ServerBounds = ServerBounds(),
                settings: SettingsKeeper? = nil, logger: Logger = Logger(label: "allspark.server"),
                connector: LinkConnector = SoupConnector(), clock: LinkClock = MainLoopClock.shared) {
        self.deviceName = deviceName
        self.announceChunks = announceChunks
        self.settings = settings
        self.recorder = recorder
        self.logger = logger
        self.uploadOptions = uploadOptions
        self.bounds = bounds
        self.clock = clock
        connection = Connection(address: address, verifyTLS: verifyTLS, reconnectDelay: reconnectDelay,
                                keepAliveSeconds: keepAliveSeconds, fileNames: uploadOptions.fileNames,
                                connector: connector, clock: clock, logger: logger)
        uploads = recorder.map {
            UploadQueue(catalog: $0.catalog, maxBytes: uploadOptions.maxBytes, maxAttempts: uploadOptions.attempts,
                        retryDelay: uploadOptions.retryDelay, maxBytesPerSecond: uploadOptions.maxBytesPerSecond,
                        clock: clock, logger: logger)
        }
        uploads?.transport = connection
        connection.uploads = uploads
        connection.delegate = self
        if uploadOptions.fileNames == .seconds {
            logger.notice("server.file_names = \"seconds\": files are uploaded as <name>_<epoch s> for servers before 0.5 (the files on disk keep their millisecond names)")
        }
        if !verifyTLS {
            logger.warning("server.verify_tls = false: any TLS certificate is accepted, including self-signed ones")
        }
    }

    public func start() {
        MainLoop.preconditionOnLoop()
        connection.start()
    }

    public func stop() {
        MainLoop.preconditionOnLoop()
        connection.stop()
    }

    /// Moves to another server (nil: none), dropping the current connection.
    public func connect(to newAddress: ServerAddress?) {
        MainLoop.preconditionOnLoop()
        guard newAddress != address else { return }
        // Announcements were for the old server; the new one hears of chunks from now on.
        connection.switchServer(to: newAddress) { [uploads, announcements] in
            uploads?.serverChanged()
            announcements.texts.removeAll()
        }
    }

    /// The server's `communicationsPolicy`, each time its `clientConfig` holds one (on the main loop).
    public var onCommunicationsPolicy: ((CommunicationsPolicy) -> Void)? {
        get { connection.onCommunicationsPolicy }
        set { connection.onCommunicationsPolicy = newValue }
    }

    /// This side's IP address on the current connection (which interface the link uses), if connected.
    public var localAddress: String? { connection.session?.channel.localAddress }

    /// Each upload that ended: the chunk's file name and whether the server received it.
    public var onUploadFinished: ((String, Bool) -> Void)? {
        get { uploads?.onFinished }
        set { uploads?.onFinished = newValue }
    }

    /// Uploads the chunks overlapping `[start, end)` (a local user's request, like the server's uploadTimeRange).
    public func upload(from start: Double, to end: Double, reason: String) {
        MainLoop.preconditionOnLoop()
        UploadTimeRangeCommand(start: start, end: end, reason: reason).run(in: commandContext)
    }

    /// What the upload queue holds and what it did lately (empty when the link uploads nothing).
    public var uploadQueue: UploadQueueSnapshot { uploads?.snapshot ?? .empty }

    /// Chunks still to upload (waiting or being sent).
    public var pendingUploads: Int { (uploads?.waiting.count ?? 0) + (uploads?.inFlight == nil ? 0 : 1) }

    /// The recorder finished a chunk: announce it (`chunkSaved`) and upload
    /// it if a requested range is waiting for it. While there is a server but
    /// no connection to it the announcement waits for the next connection.
    public func chunkFinished(_ chunk: ChunkRecord, fps: Double, width: Int, height: Int, camera: String) {
        MainLoop.preconditionOnLoop()
        if announceChunks, address != nil {
            announcements.hold(ClientMessage.text(ClientMessage.ChunkSaved(
                startTime: chunk.start, endTime: chunk.end, camera: camera, size: chunk.size,
                format: chunk.format.rawValue, fps: fps, width: width, height: height)), logger: logger)
            connection.session?.sendHeldAnnouncements()
        }
        uploads?.chunkFinished(chunk)
    }

    /// The recorder stopped: ranges waiting for chunks will get no more.
    public func recordingEnded() { uploads?.recordingEnded() }

    /// `chunkSaved` messages not yet confirmed by the server (held back, or sent and
    /// unanswered), and uploads not yet done.
    public var outstanding: (announcements: Int, uploads: Int) {
        (announcements.texts.count + (connection.session?.ledger.unansweredAnnouncements.count ?? 0), pendingUploads)
    }

    /// What a command may touch, as things are now.
    private var commandContext: CommandContext {
        CommandContext(recorder: recorder, uploads: uploads, bounds: bounds, settings: settings,
                       acceptAutomaticUploads: uploadOptions.acceptAutomaticRequests,
                       server: address?.description ?? "", clock: clock, logger: logger)
    }
}

extension ServerLink: ConnectionDelegate {
    func makeSession(for channel: LinkChannel, of connection: Connection) -> Session {
        Session(channel: channel, connection: connection, uploads: uploads, announcements: announcements,
                options: uploadOptions, clock: clock, logger: logger, context: { [unowned self] in commandContext })
    }

    func opened(_ session: Session) {
        session.introduce(as: deviceName)
        uploads?.pump()
    }
}

/// `chunkSaved` messages held back, oldest first: while an upload is owed its replies (so
/// that no other reply can come between the upload's; sessions send them once it is
/// settled), while there is no connection, and those a connection ended without a reply
/// to (Session.end puts them back in front). They outlive a session: what one could not
/// send, the next one does.
final class HeldAnnouncements {
    var texts: [String] = []
    /// A server away for days must not make the list grow without end: beyond this many the
    /// oldest go (a chunk that old has likely been deleted by retention anyway).
    static let limit = 1000

    /// By each chunkSaved's startTime; the sort is stable, so equal times keep their order.
    func sortOldestFirst() {
        func start(_ text: String) -> Double {
            ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["startTime"] as? Double ?? 0
        }
        texts = texts.map { (start($0), $0) }.enumerated()
            .sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element.1)
    }

    func hold(_ text: String, logger: Logger) {
        texts.append(text)
        guard texts.count > Self.limit else { return }
        texts.removeFirst(texts.count - Self.limit)
        logger.warning("more than \(Self.limit) chunkSaved messages wait for the server; the oldest is dropped")
    }
}
