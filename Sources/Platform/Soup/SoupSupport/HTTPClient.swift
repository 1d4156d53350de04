import CSoup
import Foundation
import GLibSupport

/// One-shot HTTP GET requests (the server's `/api/health`), on the main loop.
public final class HTTPClient {
    public struct Response {
        public var status: Int
        public var body: String
    }

    private let session: UnsafeMutablePointer<SoupSession>

    public init(timeoutSeconds: UInt32 = 5) {
        session = soup_session_new()!
        soup_session_set_timeout(session, timeoutSeconds)
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(session)) }

    private struct Pending {
        let message: OpaquePointer
        let completion: (Result<Response, WebSocketError>) -> Void
    }

    /// GETs `url`; with `acceptAnyCertificate`, self-signed certificates are accepted.
    public func get(_ url: String, acceptAnyCertificate: Bool, completion: @escaping (Result<Response, WebSocketError>) -> Void) {
        guard let message = soup_message_new("GET", url) else {
            completion(.failure(WebSocketError(description: "\(url) is not a valid URL")))
            return
        }
        if acceptAnyCertificate { acceptAnyCertificateFor(message) }
        let pending = CallbackBox(Pending(message: message, completion: completion))
        soup_session_send_and_read_async(session, message, G_PRIORITY_DEFAULT, nil, { source, result, data in
            guard let data else { return }
            let pending = CallbackBox<Pending>.from(data)
            defer {
                g_object_unref(UnsafeMutableRawPointer(pending.message))
                CallbackBox<Pending>.release(data)
            }
            var error: UnsafeMutablePointer<GError>?
            let session = UnsafeMutableRawPointer(source)?.assumingMemoryBound(to: SoupSession.self)
            guard let bytes = soup_session_send_and_read_finish(session, result, &error) else {
                pending.completion(.failure(takeError(error)))
                return
            }
            defer { g_bytes_unref(bytes) }
            var size: gsize = 0
            let raw = g_bytes_get_data(bytes, &size)
            let body = raw.map { String(decoding: Data(bytes: $0, count: Int(size)), as: UTF8.self) } ?? ""
            pending.completion(.success(Response(status: Int(soup_message_get_status(pending.message).rawValue), body: body)))
        }, pending.retainedPointer)
    }
}
