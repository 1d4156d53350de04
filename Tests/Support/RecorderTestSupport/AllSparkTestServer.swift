import Foundation
import GLibSupport
import SoupSupport

/// An in-process AllSpark server on loopback (libsoup's SoupServer: HTTP and
/// WebSocket in one object) that behaves like the deployed servers described
/// in shared/DESIGN.md, not like whatever the client happens to expect:
///
/// - WebSocket at `/`; `clientConfig` sent right after connect (if set);
/// - `clientInfo` stores the name, no reply;
/// - `upload` metadata opens the file: no reply on success, an error if it
///   cannot be opened; the next binary message is written to it and earns
///   `{"status":"success","message":"Video uploaded successfully"}`; a binary
///   message with no open file earns "Metadata not received yet";
/// - `chunkSaved` earns "Unknown message type" from an `.old` server and
///   success from a `.new` one, which then asks for exactly that chunk with
///   `uploadTimeRange` (`autoUpload`, on by default as on servers since 0.5);
/// - uploads are filed as the servers file them:
///   `<UTC date>/video|image|data/<clientName>/<filename>`, the date from the
///   number after the last `_` of the name (milliseconds when larger than
///   9,999,999,999), the kind from the mimetype;
/// - any other JSON earns "Unknown message type", invalid JSON "Invalid JSON";
/// - messages above 300 MB are refused (libsoup closes the connection);
/// - `GET /api/health` and `GET /api/status` as the servers serve them.
///
/// Threading: main-loop thread only (SoupServer callbacks arrive there).
public final class AllSparkTestServer {
    public enum Generation { case old, new }

    public struct Upload: Equatable {
        public var filename: String
        public var declaredSize: Int
        public var mimetype: String
        public var bytes: Int
        /// Where it was filed, relative to `uploadDirectory`: `<UTC date>/<kind>/<clientName>/<filename>`.
        public var path: String = ""
    }

    public let generation: Generation
    /// Where uploaded files land (a fresh temporary folder).
    public let uploadDirectory: TemporaryDirectory
    public private(set) var port: Int
    public let certificate: (certificate: String, key: String)?
    /// Sent as `clientConfig` to each new connection when set.
    public var clientConfig: String?
    /// New servers only: answer each chunkSaved with an uploadTimeRange for exactly that chunk
    /// (on by default, as on servers since 0.5).
    public var autoUpload = true
    /// Refuse to open the upload file for these names (the "cannot open" error path).
    public var refuseFilenames: Set<String> = []
    /// Called with each upload's metadata as it arrives (tests kill the server here).
    public var onUploadMetadata: ((String) -> Void)?

    /// Ways a faulty or hostile server departs from the protocol (fault-injection tests).
    public struct Misbehaviour: OptionSet {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A `{"status":"success"}` after each upload metadata, which earns no reply on success.
        public static let extraSuccessAfterMetadata = Misbehaviour(rawValue: 1)
        /// Every file is refused ("Failed to write video data") and nothing is kept.
        public static let refuseEveryFile = Misbehaviour(rawValue: 2)
        /// Every file is swallowed: nothing kept, no reply at all.
        public static let neverAnswerFiles = Misbehaviour(rawValue: 4)
    }
    public var misbehaviour: Misbehaviour = []

    public private(set) var connections: [WebSocket] = []
    public private(set) var texts: [String] = []
    public private(set) var uploads: [Upload] = []
    public private(set) var clientNames: [String] = []
    public private(set) var binaryMessages = 0

    private var server: WebSocketServer?
    private var openUpload: (metadata: Upload, handle: FileHandle)?
    /// The clientName each connection introduced itself with.
    private var names: [ObjectIdentifier: String] = [:]

    public static let maximumMessageBytes: UInt64 = 314_572_800

    public init(generation: Generation = .new, port: Int = 0, certificate: (certificate: String, key: String)? = nil) throws {
        self.generation = generation
        self.certificate = certificate
        uploadDirectory = TemporaryDirectory()
        self.port = port
        try listen()
    }

    public var address: String { "127.0.0.1:\(port)" }
    public var isRunning: Bool { server != nil }

    /// The server dies: every connection drops without a close handshake, nothing more is accepted.
    public func kill() {
        for socket in connections { socket.abort() }
        connections.removeAll()
        openUpload = nil
        server?.stop()
        server = nil
    }

    /// Starts again on the same port after `kill`.
    public func restart() throws { try listen() }

    private func listen() throws {
        let server = try WebSocketServer(port: port, certificatePath: certificate?.certificate, keyPath: certificate?.key)
        server.maximumIncomingPayload = Self.maximumMessageBytes
        port = server.port
        let started = Date()
        server.handleJSON(path: "/api/health") { [unowned self] in
            #"{"status":"ok","timestamp":\#(Date().timeIntervalSince1970),"uptime":\#(Date().timeIntervalSince(started)),"protocols":["\#(certificate == nil ? "ws" : "wss")"],"address":"127.0.0.1","port":\#(port)}"#
        }
        server.handleJSON(path: "/api/status") { [unowned self] in
            let list = clientNames.enumerated().map { #"{"id":"c\#($0.offset)","clientName":"\#($0.element)"}"# }
            return #"{"totalConnections":\#(connections.count),"connections":[\#(list.joined(separator: ","))]}"#
        }
        server.onConnection = { [unowned self] socket in self.accept(socket) }
        self.server = server
    }

    private func accept(_ socket: WebSocket) {
        connections.append(socket)
        socket.onEvents(message: { [unowned self, weak socket] message in
            guard let socket else { return }
            switch message {
            case .text(let text): self.received(text, on: socket)
            case .binary(let data): self.received(data, on: socket)
            }
        }, closed: { [unowned self, weak socket] _ in
            self.connections.removeAll { $0 === socket }
            if let socket { self.names[ObjectIdentifier(socket)] = nil }
            self.openUpload = nil
        })
        if let clientConfig { socket.send(text: clientConfig) }
    }

    private func reply(_ socket: WebSocket, success: Bool, _ message: String) {
        socket.send(text: #"{"status":"\#(success ? "success" : "error")","message":"\#(message)"}"#)
    }

    private func received(_ text: String, on socket: WebSocket) {
        texts.append(text)
        guard let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            reply(socket, success: false, "Invalid JSON")
            return
        }
        switch json["type"] as? String {
        case "clientInfo":
            clientNames.append(json["clientName"] as? String ?? "")
            names[ObjectIdentifier(socket)] = json["clientName"] as? String ?? ""
        case "chunkSaved" where generation == .new:
            reply(socket, success: true, "Chunk saved info received")
            if autoUpload, let start = json["startTime"] as? Double, let end = json["endTime"] as? Double {
                socket.send(text: #"{"command":"uploadTimeRange","startTime":\#(start),"endTime":\#(end)}"#)
            }
        case "upload":
            guard let filename = json["filename"] as? String else {
                reply(socket, success: false, "Invalid upload metadata")
                return
            }
            onUploadMetadata?(filename)
            guard !connections.isEmpty else { return }   // killed from the hook
            let mimetype = json["mimetype"] as? String ?? ""
            let filed = Self.filedPath(filename: filename, mimetype: mimetype, clientName: names[ObjectIdentifier(socket)] ?? "")
            let metadata = Upload(filename: filename, declaredSize: json["filesize"] as? Int ?? -1,
                                  mimetype: mimetype, bytes: 0, path: filed)
            let url = uploadDirectory.url.appendingPathComponent(filed)
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let path = url.path
            guard !refuseFilenames.contains(filename), FileManager.default.createFile(atPath: path, contents: nil),
                  let handle = FileHandle(forWritingAtPath: path) else {
                openUpload = nil
                reply(socket, success: false, "Failed to write file")
                return
            }
            openUpload = (metadata, handle)
            if misbehaviour.contains(.extraSuccessAfterMetadata) { socket.send(text: #"{"status":"success"}"#) }
        default:
            if json["filename"] == nil { reply(socket, success: false, "Unknown message type") }
        }
    }

    private func received(_ data: Data, on socket: WebSocket) {
        binaryMessages += 1
        guard let (metadata0, handle) = openUpload else {
            reply(socket, success: false, "Metadata not received yet")
            return
        }
        openUpload = nil
        if !misbehaviour.isDisjoint(with: [.refuseEveryFile, .neverAnswerFiles]) {
            try? handle.close()
            try? FileManager.default.removeItem(at: uploadDirectory.url.appendingPathComponent(metadata0.path))
            if misbehaviour.contains(.refuseEveryFile) { reply(socket, success: false, "Failed to write video data") }
            return
        }
        handle.write(data)
        try? handle.close()
        var metadata = metadata0
        metadata.bytes = data.count
        uploads.append(metadata)
        reply(socket, success: true, "Video uploaded successfully")
    }

    /// The content of the last upload of `filename`, where it was filed.
    public func uploadedData(_ filename: String) -> Data? {
        guard let upload = uploads.last(where: { $0.filename == filename }) else { return nil }
        return try? Data(contentsOf: uploadDirectory.url.appendingPathComponent(upload.path))
    }

    /// `<UTC date>/video|image|data/<clientName>/<filename>` as servers file an upload. The
    /// servers do not sanitise names; this test server keeps to its folder all the same (last
    /// path component only), and a name without a time is filed under today.
    public static func filedPath(filename: String, mimetype: String, clientName: String, now: Date = Date()) -> String {
        let base = (filename as NSString).deletingPathExtension
        var time = now.timeIntervalSince1970
        if let underscore = base.lastIndex(of: "_"), let number = Double(base[base.index(after: underscore)...]) {
            time = number > 9_999_999_999 ? number / 1000 : number
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        let kind = mimetype.hasPrefix("video/") ? "video" : mimetype.hasPrefix("image/") ? "image" : "data"
        let safe = { (name: String) -> String in
            let last = (name as NSString).lastPathComponent
            return ["", ".", ".."].contains(last) ? "_" : last
        }
        return [formatter.string(from: Date(timeIntervalSince1970: time)), kind, safe(clientName), safe(filename)].joined(separator: "/")
    }
}

/// A self-signed certificate for 127.0.0.1 made by `openssl` in a temporary folder.
public func makeSelfSignedCertificate(in directory: TemporaryDirectory) throws -> (certificate: String, key: String) {
    let certificate = directory.url.appendingPathComponent("server.crt").path
    let key = directory.url.appendingPathComponent("server.key").path
    let result = try runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                                              "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                                              "-keyout", key, "-out", certificate])
    guard result.status == 0 else {
        throw NSError(domain: "openssl", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: result.output])
    }
    return (certificate, key)
}
