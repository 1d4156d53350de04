import CSoup
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
    /// Called once, when the client goes away or the answer is finished.
    public var onClose: (() -> Void)?
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
    }
}

public struct HTTPServerError: Error, CustomStringConvertible {
    public var description: String
}

public final class HTTPServer {
    private let server: UnsafeMutablePointer<SoupServer>
    /// The port listened on (the one asked for, or the one the system chose for 0).
    public private(set) var port: Int = 0
    public let usesTLS: Bool
    private var handler: ((HTTPRequest) -> HTTPResponse)?
    /// Streams and file answers in progress, kept alive until their client is done.
    private var streams: [ObjectIdentifier: HTTPStream] = [:]
    private let pieceBytes = 256 * 1024

    /// Listens on `host` ("0.0.0.0", "127.0.0.1", "::") and `port` (0: any free one);
    /// with a PEM certificate and key, over TLS.
    public init(host: String, port requestedPort: Int, certificatePath: String? = nil, keyPath: String? = nil,
                serverHeader: String = "allspark-recorder") throws {
        server = UnsafeMutableRawPointer(g_object_new_with_properties(soup_server_get_type(), 0, nil, nil)!).assumingMemoryBound(to: SoupServer.self)
        usesTLS = certificatePath != nil
        g_object_set_property_string(server, "server-header", serverHeader)
        if let certificatePath, let keyPath {
            var error: UnsafeMutablePointer<GError>?
            guard let certificate = g_tls_certificate_new_from_files(certificatePath, keyPath, &error) else {
                throw HTTPServerError(description: "cannot load the TLS certificate \(certificatePath) / \(keyPath): \(takeError(error))")
            }
            soup_server_set_tls_certificate(server, certificate)
            g_object_unref(UnsafeMutableRawPointer(certificate))
        }
        // The handler lives as long as the server, which this object owns: an unretained self is safe.
        soup_server_add_handler(server, nil, { _, message, _, _, data in
            guard let message, let data else { return }
            Unmanaged<HTTPServer>.fromOpaque(data).takeUnretainedValue().serve(message)
        }, Unmanaged.passUnretained(self).toOpaque(), nil)
        guard let address = g_inet_socket_address_new_from_string(host, guint(requestedPort)) else {
            throw HTTPServerError(description: "\"\(host)\" is not an IP address to listen on")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(address)) }
        var error: UnsafeMutablePointer<GError>?
        let options = usesTLS ? SOUP_SERVER_LISTEN_HTTPS : SoupServerListenOptions(rawValue: 0)
        guard soup_server_listen(server, UnsafeMutablePointer(OpaquePointer(address)), options, &error) != 0 else {
            throw HTTPServerError(description: "cannot listen on \(host):\(requestedPort): \(takeError(error))")
        }
        if let uris = soup_server_get_uris(server) {
            if let first = uris.pointee.data { port = Int(g_uri_get_port(OpaquePointer(first))) }
            g_slist_free_full(uris, { g_uri_unref(OpaquePointer($0)) })
        }
    }

    /// Every request goes to `handler`, on the main loop.
    public func serve(with handler: @escaping (HTTPRequest) -> HTTPResponse) {
        self.handler = handler
    }

    public func stop() {
        soup_server_disconnect(server)
        streams.removeAll()
    }

    deinit {
        soup_server_disconnect(server)
        g_object_unref(UnsafeMutableRawPointer(server))
    }

    // MARK: One request

    private func serve(_ message: OpaquePointer) {
        let request = Self.request(of: message)
        let response = handler?(request) ?? .text(404, "not found\n")
        soup_server_message_set_status(message, guint(response.status), nil)
        let headers = soup_server_message_get_response_headers(message)
        for (name, value) in response.headers {
            soup_message_headers_replace(headers, name, value)
        }
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
            let stream = keep(HTTPStream(message: message, maximumPending: 2))
            soup_server_message_pause(message)
            feed(stream)
        case .pieces(let length, let read):
            soup_message_headers_set_content_length(headers, goffset(length))
            soup_message_body_set_accumulate(soup_server_message_get_response_body(message), 0)
            guard request.method != "HEAD" else { return }
            let stream = keep(HTTPStream(message: message, maximumPending: 2))
            soup_server_message_pause(message)
            feed(length: length, read: read, into: stream)
        }
    }

    private func keep(_ stream: HTTPStream) -> HTTPStream {
        let id = ObjectIdentifier(stream)
        streams[id] = stream
        stream.onClose = { [weak self] in
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

    private static func request(of message: OpaquePointer) -> HTTPRequest {
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
        if let bytes = soup_message_body_flatten(soup_server_message_get_request_body(message)) {
            var size: gsize = 0
            if let data = g_bytes_get_data(bytes, &size), size > 0 { body = Data(bytes: data, count: Int(size)) }
            g_bytes_unref(bytes)
        }
        let remote = soup_server_message_get_remote_host(message).map { String(cString: $0) } ?? ""
        return HTTPRequest(method: method, path: path, query: query, headers: headers, body: body, remoteAddress: remote)
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
