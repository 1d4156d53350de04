import CSoup
import CSoupShim
import Foundation
import GLibSupport

// An HTTP server on libsoup's SoupServer, driven by the GLib main loop like
// everything else (no second event loop). Handlers are plain Swift: a
// request in, a response out; long answers (a multipart stream, a big file)
// are fed piece by piece with backpressure from libsoup's "wrote-chunk".
//
// Threading: main-loop thread only. Data produced on other threads (frames)
// reaches a stream through `MainLoop.post`.

/// An HTTP request as a handler sees it.
public struct HTTPRequest {
    public var method: String
    /// The decoded path, e.g. "/api/v1/chunks/chunk_1.mp4".
    public var path: String
    public var query: [String: String]
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: Data
    /// The peer's IP address.
    public var remoteAddress: String
    /// What the server's admission check said about this request (see `HTTPServer.admit`).
    public var admission: Any?

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: Data = Data(), remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }
}

/// What a handler answers.
public struct HTTPResponse {
    public enum Body {
        case data(Data)
        /// `length` bytes read piece by piece as the client takes them: `read(offset, count)`
        /// returns up to `count` bytes from `offset` of the answer (empty or nil: no more).
        case pieces(length: UInt64, read: (UInt64, Int) -> Data?)
        /// An endless or long answer the handler feeds through the stream (chunked encoding).
        case stream((HTTPStream) -> Void)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ text: String, type: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", type)], body: .data(Data(text.utf8)))
    }
}

/// A response being written piece by piece. `write` refuses (returns false)
/// while the client has not taken the previous pieces, so a slow client
/// makes its producer drop data rather than queue it without end.
public final class HTTPStream {
    private let message: OpaquePointer     // SoupServerMessage*, one reference owned
    private var handlers: [gulong] = []
    /// Pieces handed to libsoup and not yet written to the socket.
    private var pending = 0
    public let maximumPending: Int
    public private(set) var isClosed = false
    private var wroteAny = false
    /// When the client last took a piece (or the first was queued), in monotonic seconds.
    private var lastProgress = Double(g_get_monotonic_time()) / 1_000_000
    /// Called once, when the client goes away or the answer is finished.
    public var onClose: (() -> Void)?
    /// The server's own hook for the same moment: kept apart from `onClose`, which the
    /// handler sets (a handler that replaced the server's hook left every ended stream,
    /// its message and its connection's buffers in memory).
    fileprivate var released: (() -> Void)?
    /// Called (soon after, on the main loop) whenever the client took a piece and another may go out.
    public var onWritable: (() -> Void)?

    init(message: OpaquePointer, maximumPending: Int) {
        self.message = message
        self.maximumPending = maximumPending
        g_object_ref(UnsafeMutableRawPointer(message))
        let wrote: @convention(c) (OpaquePointer?, gpointer?) -> Void = { _, data in
            guard let data else { return }
            CallbackBox<() -> Void>.from(data)()
        }
        let onWrote: () -> Void = { [weak self] in
            guard let self else { return }
            self.pending = max(0, self.pending - 1)
            self.lastProgress = Double(g_get_monotonic_time()) / 1_000_000
            // Not from inside libsoup's signal: the callback may write again.
            if self.isReady, self.onWritable != nil { MainLoop.post { [weak self] in self?.onWritable?() } }
        }
        let onFinished: () -> Void = { [weak self] in self?.closed() }
        handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(message), "wrote-chunk", unsafeBitCast(wrote, to: GCallback.self),
                                              CallbackBox(onWrote).retainedPointer, { p, _ in CallbackBox<() -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
        // A client that goes away mid-answer may be reported as "disconnected" before (or
        // instead of) "finished"; after either, the message has no I/O left to unpause.
        for signal in ["finished", "disconnected"] {
            handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(message), signal, unsafeBitCast(wrote, to: GCallback.self),
                                                  CallbackBox(onFinished).retainedPointer, { p, _ in CallbackBox<() -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
        }
    }

    deinit {
        for handler in handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(message), handler) }
        g_object_unref(UnsafeMutableRawPointer(message))
    }

    /// True when pieces wait for a client that has taken none of them for `seconds`.
    func hasStalled(now: Double, after seconds: Double) -> Bool {
        !isClosed && pending > 0 && now - lastProgress > seconds
    }

    /// True when the client has taken what was sent and a new piece would go out now.
    public var isReady: Bool { !isClosed && pending < maximumPending }

    /// Queues `data`; false (and nothing queued) when the client is closed or still behind.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        MainLoop.preconditionOnLoop()
        guard isReady else { return false }
        let body = soup_server_message_get_response_body(message)
        data.withUnsafeBytes { raw in
            soup_message_body_append(body, SOUP_MEMORY_COPY, raw.baseAddress, gsize(raw.count))
        }
        if pending == 0 { lastProgress = Double(g_get_monotonic_time()) / 1_000_000 }
        pending += 1
        wroteAny = true
        soup_server_message_unpause(message)
        return true
    }

    /// Answers `status` with `body` (of `contentType`) instead, when nothing was
    /// written yet; otherwise ends the answer as it is.
    public func fail(status: Int, contentType: String, body: Data) {
        MainLoop.preconditionOnLoop()
        guard !isClosed, !wroteAny else { return finish() }
        soup_server_message_set_status(message, guint(status), nil)
        soup_message_headers_replace(soup_server_message_get_response_headers(message), "Content-Type", contentType)
        body.withUnsafeBytes { raw in
            soup_message_body_append(soup_server_message_get_response_body(message), SOUP_MEMORY_COPY, raw.baseAddress, gsize(raw.count))
        }
        finish()
    }

    /// Ends the answer.
    public func finish() {
        MainLoop.preconditionOnLoop()
        guard !isClosed else { return }
        soup_message_body_complete(soup_server_message_get_response_body(message))
        soup_server_message_unpause(message)
    }

    private func closed() {
        guard !isClosed else { return }
        isClosed = true
        onWritable = nil
        let callback = onClose
        onClose = nil
        callback?()
        let release = released
        released = nil
        release?()
    }
}

public struct HTTPServerError: Error, CustomStringConvertible {
    public var description: String
}

/// What the server lets a client hold, and for how long.
///
/// Every answer closes its connection (`Connection: close`): libsoup 3.2
/// (Debian 12) never notices that a client closed a connection that was
/// waiting for its next request, and keeps its file descriptor for good (one
/// leaked descriptor per browser request; fixed upstream in libsoup 3.3). A
/// console asks for little and seldom, so one connection per request costs
/// nothing that matters, and no connection is ever idle between requests.
public struct HTTPServerLimits {
    /// Connections open at once, from everyone; the next one is answered 503 and closed.
    public var maximumConnections = 128
    /// Connections open at once from one IP address (a browser opens up to 6 per site).
    public var maximumConnectionsPerAddress = 32
    /// From the connection to the end of the request's head (header lines).
    public var headerTimeout: Double = 10
    /// From the end of the head to the end of the body.
    public var bodyTimeout: Double = 20
    /// An answer that the client stops taking is cut after this long without progress.
    public var stallTimeout: Double = 60
    /// The body limit when the admission check sets none.
    public var defaultBodyLimit = 64 * 1024
    /// A refused client's request is read and dropped for at most this long and this much
    /// before the connection closes, so that it gets the answer rather than a reset.
    public var lingerSeconds: Double = 2
    public var lingerBytes = 1 << 20
    /// Refused connections lingering at once; past this a refused connection is closed at once.
    public var maximumLingering = 32

    public init() {}

    /// File descriptors the server can hold at most: its connections, the lingering refusals, its listener.
    public var maximumDescriptors: Int { maximumConnections + maximumLingering + 1 }
}

/// Whether a request may go on to its body, decided from its head alone.
public enum HTTPAdmission {
    /// Read a body of at most `bodyLimit` bytes (413 past it), then call the handler with
    /// `context` in `HTTPRequest.admission`.
    case proceed(bodyLimit: Int, context: Any? = nil)
    /// Answer this at once; the body is never read.
    case refuse(HTTPResponse)
}

/// Counters of what the server refused or cut, for metrics and tests.
public struct HTTPServerCounters {
    public var accepted = 0
    /// Refused at once because of `maximumConnections` / `maximumConnectionsPerAddress`.
    public var refusedBusy = 0
    /// Refused from the head (authentication, 413, 411).
    public var refusedAfterHead = 0
    /// Cut because a head, body or answer took too long.
    public var timedOut = 0
}

public final class HTTPServer {
    private let server: UnsafeMutablePointer<SoupServer>
    private var listener: UnsafeMutablePointer<GSocketService>?
    private let certificate: UnsafeMutablePointer<GTlsCertificate>?
    /// The port listened on (the one asked for, or the one the system chose for 0).
    public private(set) var port: Int = 0
    public let usesTLS: Bool
    public let limits: HTTPServerLimits
    public private(set) var counters = HTTPServerCounters()
    private var admit: ((HTTPRequest, @escaping (HTTPAdmission) -> Void) -> Void)?
    private var handler: ((HTTPRequest, @escaping (HTTPResponse) -> Void) -> Void)?
    /// Connections handed to libsoup, by the peer's "address:port", until they are closed.
    private var connections: [String: Connection] = [:]
    private var lingering = 0
    private var sweeper: MainLoop.Source?
    private let pieceBytes = 256 * 1024

    /// One client connection, owned here until closed (by libsoup, the client or a timeout).
    private final class Connection {
        let stream: OpaquePointer          // GSocketConnection*, one reference owned
        let address: String
        /// When the head (then the body) must be in; nil while answering.
        var deadline: Double?
        weak var answer: HTTPStream?
        /// What the admission check said about the request on this connection (one request per connection).
        var admission: Any?
        init(stream: OpaquePointer, address: String, deadline: Double) {
            self.stream = stream
            self.address = address
            self.deadline = deadline
            g_object_ref(UnsafeMutableRawPointer(stream))
        }
        /// Watches the socket while a long answer goes out (see `watchForHangup`).
        private var hangup: UnsafeMutablePointer<GSource>?
        deinit {
            if let hangup {
                g_source_destroy(hangup)
                g_source_unref(hangup)
            }
            g_object_unref(UnsafeMutableRawPointer(stream))
        }

        /// libsoup does not read while it answers, so a client that leaves a long answer
        /// (a live view waiting for its next picture, a stalled download) is only noticed at
        /// a later write. This notices the FIN or reset when it comes and ends the answer.
        func watchForHangup(_ left: @escaping () -> Void) {
            guard hangup == nil, let socket else { return }
            let source = g_socket_create_source(socket, GIOCondition(rawValue: G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue), nil)!
            let ready: @convention(c) (UnsafeMutablePointer<GSocket>?, GIOCondition, gpointer?) -> gboolean = { socket, _, data in
                guard let socket, let data else { return 0 }
                var byte: UInt8 = 0
                let n = recv(g_socket_get_fd(socket), &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                // The client sent more (or it is TLS talking): nothing to learn here any more.
                if n > 0 { return 0 }
                if n < 0, errno == EAGAIN || errno == EINTR { return 1 }
                // Gone (end or reset): the socket is shut, and the answer ends, so libsoup's
                // next write fails and it closes the connection.
                g_socket_shutdown(socket, 1, 1, nil)
                CallbackBox<() -> Void>.from(data)()
                return 0
            }
            g_source_set_callback(source, unsafeBitCast(ready, to: GSourceFunc.self), CallbackBox(left).retainedPointer,
                                  { CallbackBox<() -> Void>.release($0) })
            g_source_attach(source, nil)
            hangup = source
        }

        var socket: UnsafeMutablePointer<GSocket>? { g_socket_connection_get_socket(UnsafeMutablePointer(stream)) }
        var isClosed: Bool { g_io_stream_is_closed(UnsafeMutablePointer(stream)) != 0 }
        /// Ends the connection under libsoup: its reads see the end and it closes the connection itself.
        func cut() { g_socket_shutdown(socket, 1, 1, nil) }
    }

    /// Listens on `host` ("0.0.0.0", "127.0.0.1", "::") and `port` (0: any free one);
    /// with a PEM certificate and key, over TLS.
    public init(host: String, port requestedPort: Int, certificatePath: String? = nil, keyPath: String? = nil,
                serverHeader: String = "allspark-recorder", limits: HTTPServerLimits = HTTPServerLimits()) throws {
        MainLoop.preconditionOnLoop()
        self.limits = limits
        server = UnsafeMutableRawPointer(g_object_new_with_properties(soup_server_get_type(), 0, nil, nil)!).assumingMemoryBound(to: SoupServer.self)
        usesTLS = certificatePath != nil
        g_object_set_property_string(server, "server-header", serverHeader)
        if let certificatePath, let keyPath {
            var error: UnsafeMutablePointer<GError>?
            guard let certificate = g_tls_certificate_new_from_files(certificatePath, keyPath, &error) else {
                g_object_unref(UnsafeMutableRawPointer(server))
                throw HTTPServerError(description: "cannot load the TLS certificate \(certificatePath) / \(keyPath): \(takeError(error))")
            }
            self.certificate = certificate
        } else {
            certificate = nil
        }
        // The handlers live as long as the server, which this object owns: an unretained self is safe.
        let me = Unmanaged.passUnretained(self).toOpaque()
        soup_server_add_early_handler(server, nil, { _, message, _, _, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().headArrived(message)
        }, me, nil)
        soup_server_add_handler(server, nil, { _, message, _, _, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().serve(message)
        }, me, nil)
        var error: UnsafeMutablePointer<GError>?
        var bound: guint = 0
        let incoming: @convention(c) (UnsafeMutablePointer<GSocketConnection>?, gpointer?) -> Void = { connection, data in
            guard let connection, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().accept(OpaquePointer(connection))
        }
        guard let service = as_http_listen(host, guint(requestedPort), &bound, incoming, me, nil, &error) else {
            if let certificate { g_object_unref(UnsafeMutableRawPointer(certificate)) }
            g_object_unref(UnsafeMutableRawPointer(server))
            throw HTTPServerError(description: "cannot listen on \(host):\(requestedPort): \(takeError(error))")
        }
        listener = service
        port = Int(bound)
        sweeper = MainLoop.every(0.25) { [weak self] in self?.sweep(); return self != nil }
    }

    /// Decides from a request's head (`body` empty) whether its body is read: answer `decide`
    /// at once or later (on the main loop). Without it every request proceeds.
    public func admit(with check: @escaping (HTTPRequest, @escaping (HTTPAdmission) -> Void) -> Void) {
        admit = check
    }

    /// Every request goes to `handler`, on the main loop.
    public func serve(with handler: @escaping (HTTPRequest) -> HTTPResponse) {
        self.handler = { request, respond in respond(handler(request)) }
    }

    /// Every request goes to `handler`, on the main loop, which answers through `respond`
    /// at once or later (work done off the loop comes back with `MainLoop.post`).
    public func serveLater(with handler: @escaping (HTTPRequest, @escaping (HTTPResponse) -> Void) -> Void) {
        self.handler = handler
    }

    /// Streamed answers (streams, file pieces) still going out.
    public var answersInProgress: Int { streams.count }

    /// Connections open now (handed to libsoup and not closed yet).
    public var openConnections: Int {
        prune()
        return connections.count
    }

    public func stop() {
        MainLoop.preconditionOnLoop()
        sweeper?.cancel()
        sweeper = nil
        if let listener { as_http_listener_stop(listener) }
        listener = nil
        soup_server_disconnect(server)
        for connection in connections.values where !connection.isClosed { connection.cut() }
        connections.removeAll()
    }

    deinit {
        sweeper?.cancel()
        if let listener { as_http_listener_stop(listener) }
        soup_server_disconnect(server)
        for connection in connections.values where !connection.isClosed { connection.cut() }
        g_object_unref(UnsafeMutableRawPointer(server))
        if let certificate { g_object_unref(UnsafeMutableRawPointer(certificate)) }
    }

    // MARK: Connections

    private static func now() -> Double { Double(g_get_monotonic_time()) / 1_000_000 }

    private func prune() {
        connections = connections.filter { !$0.value.isClosed }
    }

    private func accept(_ connection: OpaquePointer) {
        MainLoop.preconditionOnLoop()
        prune()
        let socketConnection = UnsafeMutablePointer<GSocketConnection>(connection)
        guard let remote = g_socket_connection_get_remote_address(socketConnection, nil) else {
            g_io_stream_close(UnsafeMutablePointer(connection), nil, nil)
            return
        }
        defer { g_object_unref(UnsafeMutableRawPointer(remote)) }
        let (address, key) = Self.describe(remote)
        let fromAddress = connections.values.reduce(0) { $0 + ($1.address == address ? 1 : 0) }
        if connections.count >= limits.maximumConnections || fromAddress >= limits.maximumConnectionsPerAddress {
            counters.refusedBusy += 1
            let why = fromAddress >= limits.maximumConnectionsPerAddress
                ? "too many connections from \(address) (at most \(limits.maximumConnectionsPerAddress) at once); try again shortly"
                : "too many connections (at most \(limits.maximumConnections) at once); try again shortly"
            let body = Data(#"{"error":{"code":"busy","message":"\#(why)"}}"#.utf8)
            let answer = HTTPResponse(status: 503, headers: [("Content-Type", "application/json"), ("Retry-After", "5")], body: .data(body))
            guard let stream = tlsWrapped(connection) else { return }
            refuse(stream: stream, plain: usesTLS ? nil : g_socket_connection_get_socket(socketConnection), answer)
            g_object_unref(UnsafeMutableRawPointer(stream))
            return
        }
        guard let stream = tlsWrapped(connection), let local = g_socket_connection_get_local_address(socketConnection, nil) else {
            g_io_stream_close(UnsafeMutablePointer(connection), nil, nil)
            return
        }
        defer {
            g_object_unref(UnsafeMutableRawPointer(local))
            g_object_unref(UnsafeMutableRawPointer(stream))
        }
        counters.accepted += 1
        // Tracked before libsoup sees it: libsoup may read the head (and call back) at once.
        connections[key] = Connection(stream: connection, address: address, deadline: Self.now() + limits.headerTimeout)
        var error: UnsafeMutablePointer<GError>?
        if soup_server_accept_iostream(server, stream, local, remote, &error) == 0 {
            g_error_free(error)
            connections[key] = nil
            g_io_stream_close(UnsafeMutablePointer(connection), nil, nil)
        }
    }

    /// The stream to speak HTTP on: the connection itself, or TLS over it (a new reference either way).
    private func tlsWrapped(_ connection: OpaquePointer) -> UnsafeMutablePointer<GIOStream>? {
        guard let certificate else {
            g_object_ref(UnsafeMutableRawPointer(connection))
            return UnsafeMutablePointer(connection)
        }
        var error: UnsafeMutablePointer<GError>?
        guard let tls = g_tls_server_connection_new(UnsafeMutablePointer(connection), certificate, &error) else {
            g_error_free(error)
            g_io_stream_close(UnsafeMutablePointer(connection), nil, nil)
            return nil
        }
        return UnsafeMutablePointer(OpaquePointer(tls))
    }

    /// Cuts connections whose head, body or answer is overdue.
    private func sweep() {
        prune()
        let now = Self.now()
        for connection in connections.values {
            let overdue = connection.deadline.map { now > $0 } ?? false
            let stalled = connection.answer?.hasStalled(now: now, after: limits.stallTimeout) ?? false
            if overdue || stalled {
                counters.timedOut += 1
                connection.deadline = nil
                connection.cut()
            }
        }
    }

    private func refuse(stream: UnsafeMutablePointer<GIOStream>, plain socket: UnsafeMutablePointer<GSocket>?, _ answer: HTTPResponse) {
        guard lingering < limits.maximumLingering else {
            g_io_stream_close(stream, nil, nil)
            return
        }
        lingering += 1
        let bytes = Self.wire(answer, serverHeader: "allspark-recorder")
        let gbytes = bytes.withUnsafeBytes { g_bytes_new($0.baseAddress, gsize($0.count)) }
        let closed: @convention(c) (gpointer?) -> Void = { data in
            guard let data else { return }
            CallbackBox<() -> Void>.from(data)()
            CallbackBox<() -> Void>.release(data)
        }
        let done: () -> Void = { [weak self] in self?.lingering -= 1 }
        as_http_answer_and_close(stream, socket, gbytes, guint(limits.lingerSeconds * 1000), gsize(limits.lingerBytes),
                                 closed, CallbackBox(done).retainedPointer)
        g_bytes_unref(gbytes)
    }

    /// A whole HTTP/1.1 answer as bytes, for a connection libsoup no longer handles.
    private static func wire(_ answer: HTTPResponse, serverHeader: String) -> Data {
        var body = Data()
        if case .data(let data) = answer.body { body = data }
        let reason = soup_status_get_phrase(guint(answer.status)).map { String(cString: $0) } ?? "Error"
        var head = "HTTP/1.1 \(answer.status) \(reason)\r\nServer: \(serverHeader)\r\n"
        for (name, value) in answer.headers where !["content-length", "connection"].contains(name.lowercased()) {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Data(head.utf8) + body
    }

    private static func describe(_ address: UnsafeMutablePointer<GSocketAddress>) -> (address: String, key: String) {
        guard g_type_check_instance_is_a(UnsafeMutablePointer(OpaquePointer(address)), g_inet_socket_address_get_type()) != 0 else {
            return ("?", "?")
        }
        let inet = UnsafeMutablePointer<GInetSocketAddress>(OpaquePointer(address))
        let text = g_inet_address_to_string(g_inet_socket_address_get_address(inet))
        let ip = text.map { String(cString: $0) } ?? "?"
        g_free(text)
        return (ip, "\(ip)|\(g_inet_socket_address_get_port(inet))")
    }

    private func connection(of message: OpaquePointer) -> Connection? {
        guard let remote = soup_server_message_get_remote_address(message) else { return nil }
        return connections[Self.describe(remote).key]
    }

    // MARK: One request

    /// The head is in: decide, before a byte of the body is read, whether to read it.
    private func headArrived(_ message: OpaquePointer) {
        let connection = connection(of: message)
        connection?.deadline = Self.now() + limits.bodyTimeout
        guard let admit else {
            proceed(message, bodyLimit: limits.defaultBodyLimit, context: nil, on: connection)
            return
        }
        let head = Self.request(of: message, withBody: false)
        var decided: HTTPAdmission?
        var waiting: MessageWatch?
        admit(head) { [weak self] admission in
            guard let self else { return }
            guard let watch = waiting else { decided = admission; return }
            waiting = nil
            guard !watch.isGone else { return }
            // A refused message was taken from libsoup; only one still with it is resumed.
            if self.apply(admission, to: message, on: connection) { soup_server_message_unpause(message) }
        }
        if let decided {
            apply(decided, to: message, on: connection)
            return
        }
        waiting = MessageWatch(message)
        soup_server_message_pause(message)
    }

    /// True when the message is still libsoup's (it goes on to its body), false when it was refused.
    @discardableResult
    private func apply(_ admission: HTTPAdmission, to message: OpaquePointer, on connection: Connection?) -> Bool {
        switch admission {
        case .proceed(let limit, let context): return proceed(message, bodyLimit: limit, context: context, on: connection)
        case .refuse(let answer):
            refuse(message, answer, on: connection)
            return false
        }
    }

    @discardableResult
    private func proceed(_ message: OpaquePointer, bodyLimit: Int, context: Any?, on connection: Connection?) -> Bool {
        let headers = soup_server_message_get_request_headers(message)
        switch soup_message_headers_get_encoding(headers) {
        case SOUP_ENCODING_CONTENT_LENGTH where soup_message_headers_get_content_length(headers) > goffset(bodyLimit):
            refuse(message, Self.errorAnswer(413, "too_large", "the body is larger than this API takes (at most \(bodyLimit) bytes)"), on: connection)
            return false
        case SOUP_ENCODING_CHUNKED, SOUP_ENCODING_EOF:
            // The size must be known before reading: a chunked body could only be refused halfway.
            refuse(message, Self.errorAnswer(411, "length_required", "send the body with a Content-Length (at most \(bodyLimit) bytes)"), on: connection)
            return false
        default:
            connection?.admission = context
            return true
        }
    }

    private func refuse(_ message: OpaquePointer, _ answer: HTTPResponse, on connection: Connection?) {
        counters.refusedAfterHead += 1
        // Taken from libsoup, which would otherwise read the whole body before it answers.
        guard let stream = soup_server_message_steal_connection(message) else { return }
        refuse(stream: stream, plain: usesTLS ? nil : connection?.socket, answer)
        g_object_unref(UnsafeMutableRawPointer(stream))
    }

    static func errorAnswer(_ status: Int, _ code: String, _ message: String) -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: ["error": ["code": code, "message": message]])) ?? Data()
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .data(body))
    }

    private func serve(_ message: OpaquePointer) {
        let connection = connection(of: message)
        connection?.deadline = nil
        var request = Self.request(of: message, withBody: true)
        request.admission = connection?.admission
        guard let handler else {
            answer(message, .text(404, "not found\n"), on: connection)
            return
        }
        var answered: HTTPResponse?
        var waiting: MessageWatch?
        handler(request) { [weak self] response in
            guard let self else { return }
            guard let watch = waiting else { answered = response; return }
            waiting = nil
            guard !watch.isGone else { return }
            // A stream resumes the message itself, with its first piece.
            if !self.answer(message, response, on: connection, method: request.method) { soup_server_message_unpause(message) }
        }
        if let answered {
            answer(message, answered, on: connection, method: request.method)
            return
        }
        waiting = MessageWatch(message)
        soup_server_message_pause(message)
    }

    /// Sets the answer; true when a stream now feeds it (and the message waits for its pieces).
    @discardableResult
    private func answer(_ message: OpaquePointer, _ response: HTTPResponse, on connection: Connection?, method: String = "GET") -> Bool {
        soup_server_message_set_status(message, guint(response.status), nil)
        let headers = soup_server_message_get_response_headers(message)
        for (name, value) in response.headers {
            soup_message_headers_replace(headers, name, value)
        }
        // See HTTPServerLimits: no connection outlives its answer.
        soup_message_headers_replace(headers, "Connection", "close")
        switch response.body {
        case .data(let data):
            let type = response.headers.first { $0.0.lowercased() == "content-type" }?.1
            data.withUnsafeBytes { raw in
                soup_server_message_set_response(message, type, SOUP_MEMORY_COPY,
                                                 raw.baseAddress?.assumingMemoryBound(to: CChar.self), gsize(raw.count))
            }
        case .stream(let feed):
            soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED)
            soup_message_body_set_accumulate(soup_server_message_get_response_body(message), 0)
            let stream = keep(HTTPStream(message: message, maximumPending: 2), on: connection)
            soup_server_message_pause(message)
            feed(stream)
            return true
        case .pieces(let length, let read):
            soup_message_headers_set_content_length(headers, goffset(length))
            soup_message_body_set_accumulate(soup_server_message_get_response_body(message), 0)
            guard method != "HEAD" else { return false }
            let stream = keep(HTTPStream(message: message, maximumPending: 2), on: connection)
            soup_server_message_pause(message)
            feed(length: length, read: read, into: stream)
            return true
        }
        return false
    }

    /// Streams and file answers in progress, kept alive until their client is done.
    private var streams: [ObjectIdentifier: HTTPStream] = [:]

    private func keep(_ stream: HTTPStream, on connection: Connection?) -> HTTPStream {
        let id = ObjectIdentifier(stream)
        streams[id] = stream
        connection?.answer = stream
        connection?.watchForHangup { [weak stream] in stream?.finish() }
        stream.released = { [weak self] in
            // Let go after libsoup's signal handler has returned.
            MainLoop.post { self?.streams[id] = nil }
        }
        return stream
    }

    /// Sends an answer a piece at a time: the next piece is read only once
    /// the client took the last, so a slow download holds little memory.
    private func feed(length: UInt64, read: @escaping (UInt64, Int) -> Data?, into stream: HTTPStream) {
        var sent: UInt64 = 0
        let pump = { [pieceBytes] in
            while !stream.isClosed, sent < length, stream.isReady {
                // A source that ends early (a file that shrank) leaves the client a short answer.
                guard let piece = read(sent, Int(min(UInt64(pieceBytes), length - sent))), !piece.isEmpty else {
                    sent = length
                    break
                }
                stream.write(piece)
                sent += UInt64(piece.count)
            }
            if !stream.isClosed, sent >= length {
                stream.onWritable = nil
                stream.finish()
            }
        }
        stream.onWritable = pump
        pump()
    }

    private static func request(of message: OpaquePointer, withBody: Bool) -> HTTPRequest {
        let method = soup_server_message_get_method(message).map { String(cString: $0) } ?? "GET"
        let uri = soup_server_message_get_uri(message)
        let path = uri.flatMap { g_uri_get_path($0) }.map { String(cString: $0) } ?? "/"
        var query: [String: String] = [:]
        if let raw = uri.flatMap({ g_uri_get_query($0) }).map({ String(cString: $0) }) {
            for pair in raw.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ") }
                guard let name = parts.first?.removingPercentEncoding else { continue }
                query[name] = parts.count > 1 ? (parts[1].removingPercentEncoding ?? "") : ""
            }
        }
        var headers: [String: String] = [:]
        let collect: @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?, gpointer?) -> Void = { name, value, data in
            guard let name, let value, let data else { return }
            data.assumingMemoryBound(to: [String: String].self).pointee[String(cString: name).lowercased()] = String(cString: value)
        }
        withUnsafeMutablePointer(to: &headers) { pointer in
            soup_message_headers_foreach(soup_server_message_get_request_headers(message), collect, pointer)
        }
        var body = Data()
        if withBody, let bytes = soup_message_body_flatten(soup_server_message_get_request_body(message)) {
            var size: gsize = 0
            if let data = g_bytes_get_data(bytes, &size), size > 0 { body = Data(bytes: data, count: Int(size)) }
            g_bytes_unref(bytes)
        }
        let remote = soup_server_message_get_remote_host(message).map { String(cString: $0) } ?? ""
        return HTTPRequest(method: method, path: path, query: query, headers: headers, body: body, remoteAddress: remote)
    }
}

/// Knows whether libsoup is done with a message that waits for an answer
/// (the client went away): a message it is done with must not be resumed.
private final class MessageWatch {
    private let message: OpaquePointer
    private var handlers: [gulong] = []
    private(set) var isGone = false

    init(_ message: OpaquePointer) {
        self.message = message
        g_object_ref(UnsafeMutableRawPointer(message))
        let fired: @convention(c) (OpaquePointer?, gpointer?) -> Void = { _, data in
            guard let data else { return }
            CallbackBox<() -> Void>.from(data)()
        }
        let gone: () -> Void = { [weak self] in self?.isGone = true }
        for signal in ["finished", "disconnected"] {
            handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(message), signal, unsafeBitCast(fired, to: GCallback.self),
                                                  CallbackBox(gone).retainedPointer, { p, _ in CallbackBox<() -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
        }
    }

    deinit {
        for handler in handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(message), handler) }
        g_object_unref(UnsafeMutableRawPointer(message))
    }
}

/// Sets a string property of a GObject.
private func g_object_set_property_string(_ object: UnsafeMutableRawPointer, _ name: String, _ value: String) {
    var gvalue = GValue()
    g_value_init(&gvalue, GType(16 << 2))   // G_TYPE_STRING
    g_value_set_string(&gvalue, value)
    g_object_set_property(object.assumingMemoryBound(to: GObject.self), name, &gvalue)
    g_value_unset(&gvalue)
}
