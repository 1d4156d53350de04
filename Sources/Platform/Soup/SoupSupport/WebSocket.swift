import CSoup
import CSoupShim
import GLibSupport
import Foundation

// The libsoup side of the unsafe C boundary: a WebSocket client connection
// and a small WebSocket/HTTP server, as typed Swift. Objects here belong to
// the thread running the default GLib main context (see MainLoop); their
// callbacks arrive there.

public struct WebSocketError: Error, CustomStringConvertible {
    public var description: String
    /// The TLS certificate was refused (never a reason to fall back to plain ws).
    public var isCertificateError = false
    /// The peer does not speak TLS at all (the one reason to try ws).
    public var isNotTLS = false

    public init(description: String, isCertificateError: Bool = false, isNotTLS: Bool = false) {
        self.description = description
        self.isCertificateError = isCertificateError
        self.isNotTLS = isNotTLS
    }
}

/// Converts (and frees) a GError, noting the TLS failures the link decides on.
func takeError(_ error: UnsafeMutablePointer<GError>?) -> WebSocketError {
    defer { if let error { g_error_free(error) } }
    return describe(error)
}

/// Converts a GError (still owned by the caller), noting the TLS failures the link decides on.
func describe(_ error: UnsafeMutablePointer<GError>?) -> WebSocketError {
    guard let error else { return WebSocketError(description: "unknown error") }
    let message = String(cString: error.pointee.message)
    let isTLS = error.pointee.domain == g_tls_error_quark()
    let badCertificate = isTLS && error.pointee.code == Int32(G_TLS_ERROR_BAD_CERTIFICATE.rawValue)
    let notTLS = isTLS && error.pointee.code == Int32(G_TLS_ERROR_NOT_TLS.rawValue)
    return WebSocketError(description: message, isCertificateError: badCertificate, isNotTLS: notTLS)
}

/// An open WebSocket (client or server side).
public final class WebSocket {
    public enum Message { case text(String), binary(Data) }

    /// How a connection ended, and which side ended it.
    public enum Ending: Equatable {
        /// The peer sent a close frame (its code and reason; code 1005 when it gave none).
        case byPeer(code: Int, reason: String?)
        /// This side ended it: `close`/`abort` with a reason, or libsoup refused what the
        /// peer sent (a message over the size limit: 1009, an invalid frame: 1002 …).
        case byUs(code: Int, reason: String)
        /// No close frame: the connection failed or the peer vanished (its error, if any).
        case dropped(String?)
    }

    let connection: OpaquePointer   // SoupWebsocketConnection*, one reference owned
    private var handlers: [gulong] = []
    /// Why this side ended the connection, once it did (the first reason wins).
    private var ourEnding: (code: Int, reason: String)?
    /// The transport error libsoup reported, if the connection failed under it.
    private var transportError: String?
    /// `abort()` was called: libsoup still thinks the connection is open, but nothing may be written any more.
    public private(set) var isAborted = false

    init(retaining connection: OpaquePointer) {
        self.connection = connection
        g_object_ref(UnsafeMutableRawPointer(connection))
    }

    deinit {
        for id in handlers { g_signal_handler_disconnect(UnsafeMutableRawPointer(connection), id) }
        g_object_unref(UnsafeMutableRawPointer(connection))
    }

    public var isOpen: Bool { !isAborted && soup_websocket_connection_get_state(connection) == SOUP_WEBSOCKET_STATE_OPEN }

    /// How the connection ended, from what this side did, what libsoup reported and the peer's close frame.
    private func ending() -> Ending {
        if let ourEnding { return .byUs(code: ourEnding.code, reason: ourEnding.reason) }
        let code = Int(soup_websocket_connection_get_close_code(connection))
        if code != 0 {
            return .byPeer(code: code, reason: soup_websocket_connection_get_close_data(connection).map { String(cString: $0) })
        }
        return .dropped(transportError)
    }

    /// Receives messages and the end of the connection, on the main loop.
    public func onEvents(message: @escaping (Message) -> Void, closed: @escaping (Ending) -> Void) {
        let onMessage: @convention(c) (OpaquePointer?, Int32, OpaquePointer?, gpointer?) -> Void = { _, type, bytes, data in
            guard let bytes, let data else { return }
            var size: gsize = 0
            let raw = g_bytes_get_data(bytes, &size)
            let payload = raw.map { Data(bytes: $0, count: Int(size)) } ?? Data()
            let handler = CallbackBox<(Message) -> Void>.from(data)
            if type == Int32(SOUP_WEBSOCKET_DATA_TEXT.rawValue) {
                handler(.text(String(decoding: payload, as: UTF8.self)))
            } else {
                handler(.binary(payload))
            }
        }
        let onClosed: @convention(c) (OpaquePointer?, gpointer?) -> Void = { _, data in
            guard let data else { return }
            CallbackBox<() -> Void>.from(data)()
        }
        // libsoup says why it gave up on the connection before it closes it: a WebSocket error
        // means it refused what the peer sent (and closed the connection itself), anything else
        // is the transport failing under it.
        let onError: @convention(c) (OpaquePointer?, UnsafeMutablePointer<GError>?, gpointer?) -> Void = { _, error, data in
            guard let error, let data else { return }
            CallbackBox<(UnsafeMutablePointer<GError>) -> Void>.from(data)(error)
        }
        let noted: (UnsafeMutablePointer<GError>) -> Void = { [weak self] error in
            guard let self else { return }
            let text = String(cString: error.pointee.message)
            if error.pointee.domain == soup_websocket_error_quark() {
                if self.ourEnding == nil { self.ourEnding = (Int(error.pointee.code), text) }
            } else if self.transportError == nil {
                self.transportError = text
            }
        }
        let ended: () -> Void = { [weak self] in
            guard let self else { return }
            closed(self.ending())
        }
        handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(connection), "message", unsafeBitCast(onMessage, to: GCallback.self),
                                              CallbackBox(message).retainedPointer, { p, _ in CallbackBox<(Message) -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
        handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(connection), "error", unsafeBitCast(onError, to: GCallback.self),
                                              CallbackBox(noted).retainedPointer, { p, _ in CallbackBox<(UnsafeMutablePointer<GError>) -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
        handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(connection), "closed", unsafeBitCast(onClosed, to: GCallback.self),
                                              CallbackBox(ended).retainedPointer, { p, _ in CallbackBox<() -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
    }

    public func send(text: String) {
        guard isOpen else { return }
        soup_websocket_connection_send_text(connection, text)
    }

    /// Sends a whole file as one binary message; `completion` runs on the
    /// main loop once it is written (or could not be).
    ///
    /// On connections opened by `WebSocketConnector` the file is streamed
    /// 1 MiB at a time (memory stays flat whatever the file's size); a failure
    /// half-way closes the connection, since the frame cannot be finished.
    /// Elsewhere (server side) libsoup copies the file into one frame.
    public func send(fileAt path: String, completion: @escaping (Result<Void, WebSocketError>) -> Void) {
        guard as_websocket_can_stream(connection) != 0 else {
            var error: UnsafeMutablePointer<GError>?
            guard let mapped = g_mapped_file_new(path, 0, &error) else { return completion(.failure(takeError(error))) }
            let bytes = g_mapped_file_get_bytes(mapped)
            soup_websocket_connection_send_message(connection, SOUP_WEBSOCKET_DATA_BINARY, bytes)
            g_bytes_unref(bytes)
            g_mapped_file_unref(mapped)
            return completion(.success(()))
        }
        typealias Completion = (Result<Void, WebSocketError>) -> Void
        as_websocket_send_file(connection, path, { ok, message, data in
            guard let data else { return }
            let completion = CallbackBox<Completion>.from(data)
            CallbackBox<Completion>.release(data)
            completion(ok != 0 ? .success(()) : .failure(WebSocketError(description: message.map { String(cString: $0) } ?? "failed")))
        }, CallbackBox<Completion>(completion).retainedPointer)
    }

    public func send(binary: Data) {
        binary.withUnsafeBytes { raw in
            let bytes = g_bytes_new(raw.baseAddress, gsize(raw.count))
            soup_websocket_connection_send_message(connection, SOUP_WEBSOCKET_DATA_BINARY, bytes)
            g_bytes_unref(bytes)
        }
    }

    /// Drops the connection at once, without a close handshake: what the
    /// peer sees when this side crashes (tests use it to kill a server), and
    /// the only way out once half a frame is on the wire. libsoup notices at
    /// its next read and reports the connection closed.
    public func abort(reason: String = "connection dropped") {
        if ourEnding == nil { ourEnding = (1006, reason) }
        isAborted = true
        guard let stream = soup_websocket_connection_get_io_stream(connection) else { return }
        g_io_stream_close(stream, nil, nil)
    }

    /// Starts the close handshake (nothing after `abort`: no frame can be written any more).
    public func close(code: Int = 1000, reason: String? = nil) {
        guard isOpen, !isAborted else { return }
        if ourEnding == nil { ourEnding = (code, reason ?? "") }
        soup_websocket_connection_close(connection, gushort(code), reason)
    }

    /// Sends a ping every `seconds`. libsoup 3.2 does not notice a peer that
    /// stops answering them: watch `onPong` for that.
    public func keepAlive(every seconds: UInt32) {
        soup_websocket_connection_set_keepalive_interval(connection, seconds)
    }

    /// Each pong from the peer (the answer to a keep-alive ping or to `ping(payload:)`), with its payload as text, on the main loop.
    public func onPong(_ handler: @escaping (String) -> Void) {
        let onPong: @convention(c) (OpaquePointer?, gconstpointer?, gpointer?) -> Void = { _, payload, data in
            guard let data else { return }
            CallbackBox<(String) -> Void>.from(data)(as_websocket_pong_text(payload).map { String(cString: $0) } ?? "")
        }
        handlers.append(g_signal_connect_data(UnsafeMutableRawPointer(connection), "pong", unsafeBitCast(onPong, to: GCallback.self),
                                              CallbackBox(handler).retainedPointer, { p, _ in CallbackBox<(String) -> Void>.release(p) }, GConnectFlags(rawValue: 0)))
    }

    /// Sends a ping carrying `payload` (ASCII, at most 125 bytes) after everything sent
    /// before, including a file still streaming. Only on connections opened by
    /// `WebSocketConnector`; false elsewhere.
    @discardableResult
    public func ping(payload: String) -> Bool {
        let bytes = Array(payload.utf8)
        guard isOpen, bytes.count <= 125, as_websocket_can_stream(connection) != 0 else { return false }
        as_websocket_send_ping(connection, bytes, gsize(bytes.count))
        return true
    }

    /// Bytes of streamed files (and pings) the connection has taken so far: it grows while a
    /// file goes out to a peer that reads and stops when the peer stops reading (once the
    /// socket buffers are full). 0 on connections not opened by `WebSocketConnector`.
    public var streamedBytes: UInt64 { UInt64(as_websocket_streamed_bytes(connection)) }

    /// This side's IP address on the connection (which interface it goes out by); nil on
    /// connections not opened by `WebSocketConnector`.
    public var localAddress: String? {
        guard let text = as_websocket_local_address(connection) else { return nil }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// Largest message accepted from the peer (libsoup's default is 128 KiB).
    public func setMaximumIncomingPayload(_ bytes: UInt64) {
        soup_websocket_connection_set_max_incoming_payload_size(connection, guint64(bytes))
    }
}

/// Opens client WebSocket connections with one SoupSession.
public final class WebSocketConnector {
    private let timeoutSeconds: UInt32

    public init(timeoutSeconds: UInt32 = 10) {
        self.timeoutSeconds = timeoutSeconds
    }

    /// Connects to `url` (ws:// or wss://). With `acceptAnyCertificate`,
    /// self-signed certificates are accepted (verify_tls = false).
    ///
    /// The HTTP upgrade is done by the C shim over GIO rather than by
    /// SoupSession, and libsoup's SoupWebsocketConnection then runs the
    /// protocol: that is what lets `send(fileAt:)` stream a file instead of
    /// holding a copy of it (CSoupShim/include/soup_shim.h). No extension
    /// (permessage-deflate) is offered: the payload is compressed video.
    public func connect(url: String, acceptAnyCertificate: Bool,
                        completion: @escaping (Result<WebSocket, WebSocketError>) -> Void) {
        typealias Completion = (Result<WebSocket, WebSocketError>) -> Void
        as_websocket_connect_async(url, acceptAnyCertificate ? 1 : 0, timeoutSeconds, { connection, error, data in
            guard let data else { return }
            let completion = CallbackBox<Completion>.from(data)
            CallbackBox<Completion>.release(data)
            if let connection {
                let socket = WebSocket(retaining: connection)
                g_object_unref(UnsafeMutableRawPointer(connection))
                completion(.success(socket))
            } else {
                completion(.failure(describe(error)))
            }
        }, CallbackBox<Completion>(completion).retainedPointer)
    }
}

/// Accepts whatever certificate the peer of `message` presents (verify_tls = false).
func acceptAnyCertificateFor(_ message: OpaquePointer) {
    let accept: @convention(c) (OpaquePointer?, OpaquePointer?, GTlsCertificateFlags, gpointer?) -> gboolean = { _, _, _, _ in 1 }
    g_signal_connect_data(UnsafeMutableRawPointer(message), "accept-certificate", unsafeBitCast(accept, to: GCallback.self),
                          nil, nil, GConnectFlags(rawValue: 0))
}
