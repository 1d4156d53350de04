import Foundation
import Logging
import Recorder
import RecorderCore
import RTSPServerSupport

/// The privacy-safe stream out (`stream.rtsp_listen`): an RTSP server at
/// rtsp://HOST:PORT/live that serves the recording's own H.264, taken where
/// it enters the chunks (`StreamTap`: after the privacy stage and the
/// encoder, no second encode, nothing from the capture side).
///
/// Clients never cost the recording anything: the tap hands each frame to
/// the server by reference (one lock), the server feeds one shared media on a
/// thread of its own, drops frames for a media that does not read (then waits
/// for a keyframe) and a client that does not read loses its own packets.
/// Clients are capped (`stream.max_clients`, `stream.max_clients_per_address`:
/// 503 beyond), sessions end `stream.session_timeout_s` after their client
/// goes quiet, and a new client starts at the next keyframe (within a
/// keyframe interval: one second with the shipped pipelines).
///
/// With `console.tls_certificate` set, the stream is RTSP over TLS only (rtsps://).
///
/// Threading: made, read and stopped on the main loop (the service's); the
/// server runs on its own thread (see `RTSPStreamServer`).
public final class RTSPStream {
    public let server: RTSPStreamServer
    /// rtsps when the console has a certificate.
    public let scheme: String
    private let tap: StreamTap
    private let logger: Logger

    init(config: RecorderConfig, tap: StreamTap, check: RTSPStreamServer.Check?, logger: Logger) throws {
        guard let host = config.stream.rtspHost else { throw RTSPServerError("stream.rtsp_listen is not set") }
        let options = RTSPStreamServer.Options(
            host: host, port: config.stream.rtspPort, path: RecorderConfig.Stream.path,
            maxClients: config.stream.maxClients, maxClientsPerAddress: config.stream.maxClientsPerAddress,
            sessionTimeoutSeconds: config.stream.sessionTimeoutSeconds, idleTimeoutSeconds: 10,
            certificate: config.console.tlsCertificate, key: config.console.tlsKey)
        server = try RTSPStreamServer(options: options, check: check)
        scheme = config.console.tlsCertificate == nil ? "rtsp" : "rtsps"
        self.tap = tap
        self.logger = logger
        tap.consumer = { [server] frame in server.push(frame) }
        logger.notice("stream: \(url(forHost: nil)) (user viewer; at most \(options.maxClients) clients, \(options.maxClientsPerAddress) from one address)")
    }

    /// The stream's address; `forHost` replaces a listen-everywhere address (what a client should use).
    public func url(forHost host: String?) -> String {
        var shown = server.options.host
        if let host, ["0.0.0.0", "::", ""].contains(shown) { shown = host }
        if shown.contains(":") { shown = "[\(shown)]" }
        return "\(scheme)://\(shown):\(server.port)\(server.options.path)"
    }

    public var statistics: RTSPStreamServer.Statistics { server.statistics }
    public var clients: [RTSPStreamServer.Client] { server.clients }

    /// Closes every client and stops listening; the recording goes on untouched.
    func stop() {
        tap.consumer = nil
        let statistics = server.statistics
        server.stop()
        logger.notice("stream: stopped (\(statistics.frames) frames, \(statistics.bytes / 1_048_576) MiB served, \(statistics.dropped) dropped for slow clients, \(statistics.refused) clients refused, \(statistics.stalled) closed for not reading)")
    }
}
