import CSoup
import GLibSupport
import Foundation

/// A small HTTP + WebSocket server on loopback, built on libsoup's
/// SoupServer (one object serves both). The project uses it as a faithful
/// in-process AllSpark server in tests.
public final class WebSocketServer {
    private let server: UnsafeMutablePointer<SoupServer>
    public private(set) var port: Int = 0
    public let usesTLS: Bool

    /// Each new WebSocket connection, on the main loop.
    public var onConnection: ((WebSocket) -> Void)?

    /// Listens on 127.0.0.1, on `port` or (0) a free one; with a certificate
    /// and key (PEM files), over TLS.
    public init(port requestedPort: Int = 0, certificatePath: String? = nil, keyPath: String? = nil) throws {
        server = UnsafeMutableRawPointer(g_object_new_with_properties(soup_server_get_type(), 0, nil, nil)!).assumingMemoryBound(to: SoupServer.self)
        usesTLS = certificatePath != nil
        if let certificatePath, let keyPath {
            var error: UnsafeMutablePointer<GError>?
            guard let certificate = g_tls_certificate_new_from_files(certificatePath, keyPath, &error) else {
                defer { g_error_free(error) }
                throw WebSocketError(description: "cannot load \(certificatePath): \(error.map { String(cString: $0.pointee.message) } ?? "?")")
            }
            soup_server_set_tls_certificate(server, certificate)
            g_object_unref(UnsafeMutableRawPointer(certificate))
        }
        // The handler lives as long as the server, which this object owns: an unretained self is safe.
        soup_server_add_websocket_handler(server, "/", nil, nil, { _, _, _, connection, data in
            guard let connection, let data else { return }
            let owner = Unmanaged<WebSocketServer>.fromOpaque(data).takeUnretainedValue()
            let socket = WebSocket(retaining: connection)
            socket.setMaximumIncomingPayload(owner.maximumIncomingPayload)
            owner.onConnection?(socket)
        }, Unmanaged.passUnretained(self).toOpaque(), nil)
        var error: UnsafeMutablePointer<GError>?
        let options = usesTLS ? SOUP_SERVER_LISTEN_HTTPS : SoupServerListenOptions(rawValue: 0)
        guard soup_server_listen_local(server, guint(requestedPort), SoupServerListenOptions(rawValue: options.rawValue | SOUP_SERVER_LISTEN_IPV4_ONLY.rawValue), &error) != 0 else {
            throw takeError(error)
        }
        if let uris = soup_server_get_uris(server) {
            if let first = uris.pointee.data { port = Int(g_uri_get_port(OpaquePointer(first))) }
            g_slist_free_full(uris, { g_uri_unref(OpaquePointer($0)) })
        }
    }

    /// Largest message a WebSocket handled here accepts from its peer.
    public var maximumIncomingPayload: UInt64 = 128 * 1024

    /// Answers GET `path` with the JSON `body()` returns.
    public func handleJSON(path: String, _ body: @escaping () -> String) {
        soup_server_add_handler(server, path, { _, message, _, _, data in
            guard let message, let data else { return }
            let text = CallbackBox<() -> String>.from(data)()
            soup_server_message_set_status(message, 200, nil)
            soup_server_message_set_response(message, "application/json", SOUP_MEMORY_COPY, text, gsize(text.utf8.count))
        }, CallbackBox(body).retainedPointer, { CallbackBox<() -> String>.release($0) })
    }

    public func stop() { soup_server_disconnect(server) }

    deinit {
        soup_server_disconnect(server)
        g_object_unref(UnsafeMutableRawPointer(server))
    }
}
