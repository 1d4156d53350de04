import CRTSPServerShim
import Foundation
import GStreamerSupport

/// Why the RTSP server cannot serve.
public struct RTSPServerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// An RTSP server (gst-rtsp-server) with one mount, fed with H.264 frames
/// someone else encoded: every client shares one media (`appsrc ! h264parse !
/// rtph264pay`), so clients cost the feeder one buffer reference per frame.
///
/// Threads:
/// - The server, its clients, their sessions and the media run on a thread of
///   their own ("allspark-rtsp") with a GLib main context of its own, never on
///   the service's main loop: a client that stalls, a flood of connections or
///   the credential check (`check`, which may take PBKDF2's time) hold up only
///   that thread.
/// - `push` runs on whichever thread calls it (a recording streaming thread):
///   it takes one mutex and hands the frame on; a media that cannot take it
///   (its input holds more than 4 MiB) has it dropped, then restarts at the next keyframe.
/// - `init`, `stop`, `statistics` and `clients` may be called from any thread
///   (the service calls them on its main loop); `check` is called on the server's thread.
public final class RTSPStreamServer: @unchecked Sendable {
    public struct Options: Equatable, Sendable {
        public var host: String
        public var port: Int
        /// The mount: rtsp://host:port`path`.
        public var path: String
        /// At most this many clients at once, and from one address (0: no cap); more get 503.
        public var maxClients: Int
        public var maxClientsPerAddress: Int
        /// A session whose client stopped talking (no RTCP, no keep-alive) ends after this long.
        public var sessionTimeoutSeconds: Int
        /// A connection that started no session by then is closed.
        public var idleTimeoutSeconds: Int
        /// PEM files: with both, the server speaks RTSP over TLS only (rtsps://).
        public var certificate: String?
        public var key: String?

        public init(host: String, port: Int, path: String = "/live", maxClients: Int = 10, maxClientsPerAddress: Int = 4,
                    sessionTimeoutSeconds: Int = 20, idleTimeoutSeconds: Int = 10, certificate: String? = nil, key: String? = nil) {
            self.host = host
            self.port = port
            self.path = path
            self.maxClients = maxClients
            self.maxClientsPerAddress = maxClientsPerAddress
            self.sessionTimeoutSeconds = sessionTimeoutSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.certificate = certificate
            self.key = key
        }
    }

    /// What the credential check says about a request.
    public enum Verdict: Equatable, Sendable {
        case allowed
        /// 401 with `WWW-Authenticate: Basic`.
        case refused
        /// 503 with `Retry-After`.
        case throttled(retryAfterSeconds: Int)
    }

    /// Checks a request's `Authorization` header (nil: none) from an address, on the server's thread.
    public typealias Check = @Sendable (_ authorization: String?, _ address: String) -> Verdict

    public struct Statistics: Equatable, Sendable {
        public var clients = 0
        public var refused = 0
        public var frames = 0
        public var bytes = 0
        public var dropped = 0
        /// Players closed because they stopped reading for the session timeout.
        public var stalled = 0
        /// A media is being fed (someone plays the stream or is starting to).
        public var watched = false
        public init() {}
    }

    public struct Client: Equatable, Sendable {
        public var address: String
        public var connectedAt: Date
    }

    public let options: Options
    /// The port listened on (the one asked, or the one the system chose for 0).
    public let port: Int
    private let lock = NSLock()
    private var server: OpaquePointer?
    private let checkBox: Unmanaged<CheckBox>

    private final class CheckBox {
        let check: Check?
        init(_ check: Check?) { self.check = check }
    }

    /// Listens now. Throws when the address cannot be listened on or the TLS files cannot be read.
    /// - Parameter check: nil lets every request in (tests only).
    public init(options: Options, check: Check?) throws {
        GStreamer.initialize()
        self.options = options
        let box = Unmanaged.passRetained(CheckBox(check))
        checkBox = box
        var error: UnsafeMutablePointer<CChar>?
        let made = as_rtsp_server_new(options.host, UInt32(options.port), options.path, UInt32(max(0, options.maxClients)),
                                      UInt32(max(0, options.maxClientsPerAddress)), UInt32(max(0, options.sessionTimeoutSeconds)),
                                      UInt32(max(0, options.idleTimeoutSeconds)), options.certificate, options.key,
                                      check == nil ? nil : { authorization, address, retryAfter, data in
            let check = Unmanaged<CheckBox>.fromOpaque(data!).takeUnretainedValue().check!
            switch check(authorization.map { String(cString: $0) }, address.map { String(cString: $0) } ?? "?") {
            case .allowed: return AS_RTSP_AUTH_OK
            case .refused: return AS_RTSP_AUTH_WRONG
            case .throttled(let seconds):
                retryAfter?.pointee = Int32(clamping: seconds)
                return AS_RTSP_AUTH_THROTTLED
            }
        }, box.toOpaque(), &error)
        guard let made else {
            box.release()
            throw RTSPServerError("cannot use the TLS certificate: \(Self.take(error))")
        }
        let bound = as_rtsp_server_start(made, &error)
        guard bound != 0 else {
            as_rtsp_server_free(made)
            box.release()
            throw RTSPServerError("cannot listen on \(options.host):\(options.port): \(Self.take(error))")
        }
        server = made
        port = Int(bound)
    }

    deinit { stop() }

    private static func take(_ text: UnsafeMutablePointer<CChar>?) -> String {
        guard let text else { return "no reason given" }
        defer { as_rtsp_free_text(text) }
        return String(cString: text)
    }

    /// Closes every client, stops listening and ends the server's thread. Idempotent.
    public func stop() {
        let running: OpaquePointer? = lock.withLock {
            defer { server = nil }
            return server
        }
        guard let running else { return }
        as_rtsp_server_free(running)
        checkBox.release()
    }

    /// Hands one recorded H.264 frame to the stream (see the type's notes on threads).
    /// Frames pushed while nobody watches cost one lock.
    public func push(_ frame: PassingBuffer) {
        lock.lock()
        defer { lock.unlock() }
        guard let server, as_rtsp_is_watched(server) != 0 else { return }
        as_rtsp_push_video(server, frame.buffer, frame.pad)
    }

    public var statistics: Statistics {
        lock.withLock {
            guard let server else { return Statistics() }
            var raw = AsRtspStats()
            as_rtsp_stats(server, &raw)
            var statistics = Statistics()
            statistics.clients = Int(raw.clients)
            statistics.refused = Int(raw.refused)
            statistics.frames = Int(raw.frames)
            statistics.bytes = Int(raw.bytes)
            statistics.dropped = Int(raw.dropped)
            statistics.stalled = Int(raw.stalled)
            statistics.watched = raw.media > 0
            return statistics
        }
    }

    /// The clients connected now (not the refused ones).
    public var clients: [Client] {
        lock.withLock {
            guard let server else { return [] }
            var buffer = [AsRtspClientInfo](repeating: AsRtspClientInfo(), count: 64)
            let count = Int(as_rtsp_copy_clients(server, &buffer, UInt32(buffer.count)))
            return buffer.prefix(count).map { info in
                var copy = info
                let address = withUnsafeBytes(of: &copy.address) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                return Client(address: address, connectedAt: Date(timeIntervalSince1970: Double(info.connected_us) / 1e6))
            }
        }
    }
}
