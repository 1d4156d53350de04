import AllSparkProtocol
import Foundation
@_exported import ClockTesting
import Logging
import RecorderCore
import ServerLink
import SoupSupport

/// An AllSpark server in memory, speaking the protocol of shared/DESIGN.md as
/// `AllSparkTestServer` does over real libsoup: `clientConfig` first, replies
/// in order (to `chunkSaved`, to each upload), pongs after the replies before
/// them, `autoUpload` of announced chunks. It is also the link's connector:
/// give it to `ServerLink(…, connector: server, clock: server.clock)`.
///
/// Threading: the test's thread only; everything happens as the test runs `clock`.
public final class InMemoryAllSparkServer: LinkConnector, InMemoryPeer {
    public enum Generation { case old, new }

    public struct Upload: Equatable {
        public var filename: String
        public var declaredSize: Int
        public var mimetype: String
        public var data: Data
    }

    public let clock: TestClock
    public let generation: Generation
    /// Sent first on every connection, when set.
    public var clientConfig: String?
    /// New servers' autoUpload: every announced chunk is asked for at once.
    public var autoUpload = false
    /// Uploads of these names are refused ("Failed to write file").
    public var refuseFilenames: Set<String> = []
    /// Pongs to pings (false: a peer gone deaf, as a server in its SIGTERM window).
    public var answersPings = true
    /// False: files are swallowed without a reply (a server that lost them).
    public var answersFiles = true
    /// False: no handshake ever completes; the attempt fails at the link's deadline, on the clock, as the shim's does.
    public var completesHandshakes = true
    /// Schemes it accepts a connection on (a plain server: ws only).
    public var schemes: Set<String> = ["ws", "wss"]
    /// False: connection attempts are refused, as on a port nobody listens on.
    public private(set) var isRunning = true
    /// Upload metadata arrived (the file follows).
    public var onUploadMetadata: ((String) -> Void)?

    public private(set) var attempts: [String] = []
    public private(set) var connections: [InMemoryChannel] = []
    public private(set) var texts: [String] = []
    public private(set) var clientNames: [String] = []
    public private(set) var uploads: [Upload] = []
    public private(set) var binaryMessages = 0
    private var openUpload: (channel: InMemoryChannel, metadata: Upload)?

    public init(clock: TestClock = TestClock(), generation: Generation = .new) {
        self.clock = clock
        self.generation = generation
    }

    /// The connection the link has open now.
    public var connection: InMemoryChannel? { connections.last { $0.isOpen } }

    /// Sends `text` on the open connection.
    public func send(text: String) { connection?.deliver(text: text) }

    /// The server dies: every connection drops without a close, nothing more is accepted.
    public func kill() {
        isRunning = false
        openUpload = nil
        for channel in connections { channel.dropByPeer() }
    }

    public func restart() { isRunning = true }

    public func uploadedData(_ filename: String) -> Data? { uploads.last { $0.filename == filename }?.data }

    // MARK: LinkConnector

    public func connect(url: String, acceptAnyCertificate: Bool, deadlineSeconds: UInt32,
                        completion: @escaping (Result<LinkChannel, WebSocketError>) -> Void) {
        attempts.append(url)
        let scheme = String(url.prefix { $0 != ":" })
        guard completesHandshakes else {
            _ = clock.after(Double(deadlineSeconds)) {
                completion(.failure(WebSocketError(description: "no WebSocket connection within \(deadlineSeconds) s (connect, TLS and HTTP upgrade together)")))
            }
            return
        }
        clock.post { [self] in
            guard isRunning else { return completion(.failure(WebSocketError(description: "Could not connect: Connection refused"))) }
            guard schemes.contains(scheme) else {
                return completion(.failure(WebSocketError(description: "not a TLS server", isNotTLS: scheme == "wss")))
            }
            let channel = InMemoryChannel(clock: clock, peer: self)
            connections.append(channel)
            completion(.success(channel))
            if let clientConfig { channel.deliver(text: clientConfig) }
        }
    }

    // MARK: InMemoryPeer

    private func reply(_ channel: InMemoryChannel, success: Bool, _ message: String) {
        channel.deliver(text: #"{"status":"\#(success ? "success" : "error")","message":"\#(message)"}"#)
    }

    public func received(text: String, on channel: InMemoryChannel) {
        texts.append(text)
        guard let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            return reply(channel, success: false, "Invalid JSON")
        }
        switch json["type"] as? String {
        case "clientInfo":
            clientNames.append(json["clientName"] as? String ?? "")
        case "chunkSaved" where generation == .new:
            reply(channel, success: true, "Chunk saved info received")
            if autoUpload, let start = json["startTime"] as? Double, let end = json["endTime"] as? Double {
                channel.deliver(text: #"{"command":"uploadTimeRange","startTime":\#(start),"endTime":\#(end)}"#)
            }
        case "upload":
            guard let filename = json["filename"] as? String else { return reply(channel, success: false, "Invalid upload metadata") }
            onUploadMetadata?(filename)
            guard channel.isOpen, isRunning else { return }   // killed from the hook
            guard !refuseFilenames.contains(filename) else {
                openUpload = nil
                return reply(channel, success: false, "Failed to write file")
            }
            openUpload = (channel, Upload(filename: filename, declaredSize: json["filesize"] as? Int ?? -1,
                                          mimetype: json["mimetype"] as? String ?? "", data: Data()))
        default:
            reply(channel, success: false, "Unknown message type")
        }
    }

    public func received(binary: Data, on channel: InMemoryChannel) {
        binaryMessages += 1
        guard let (opened, metadata) = openUpload, opened === channel else {
            return reply(channel, success: false, "Metadata not received yet")
        }
        openUpload = nil
        guard answersFiles else { return }
        var upload = metadata
        upload.data = binary
        uploads.append(upload)
        reply(channel, success: true, "Video uploaded successfully")
    }

    public func receivedPing(_ payload: String, on channel: InMemoryChannel) {
        if answersPings { channel.pong(payload) }
    }

    public func linkEnded(_ channel: InMemoryChannel) {
        if openUpload?.channel === channel { openUpload = nil }
    }
}

extension InMemoryAllSparkServer {
    /// A link to this server over the in-memory channel, on this server's clock. A `StoredChunks`
    /// recorder takes the server's clientConfig through a `SettingsKeeper` of its own (`store`: kept there).
    public func makeLink(recorder: RecorderControl?, deviceName: String = "Door (x86)", reconnectDelay: Double = 0.3,
                         keepAliveSeconds: Double = 15, announce: Bool = true,
                         upload: ServerLink.UploadOptions = .init(attempts: 3, retryDelay: 0.2),
                         bounds: ServerBounds = ServerBounds(minBufferMB: 100, maxBufferMB: 200),
                         store: ServerSettingsStore? = nil, logger: Logger = Logger(label: "allspark.server")) -> ServerLink {
        ServerLink(address: ServerAddress(host: "allspark.test", port: 9080, explicitScheme: .ws), deviceName: deviceName,
                   verifyTLS: true, reconnectDelay: reconnectDelay, recorder: recorder, keepAliveSeconds: keepAliveSeconds,
                   announceChunks: announce, uploadOptions: upload, bounds: bounds,
                   settings: (recorder as? StoredChunks)?.settingsKeeper(bounds: bounds, store: store, logger: logger), logger: logger,
                   connector: self, clock: clock)
    }
}
