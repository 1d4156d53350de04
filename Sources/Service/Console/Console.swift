import Foundation
import AllSparkProtocol
import GLibSupport
import Logging
import Recorder
import RecorderCore
import RecorderService
import ServerLink
import SoupSupport

/// The local web console and REST API: one more front end of the service
/// core, served by libsoup on the service's main loop.
///
/// Threading: main-loop thread only, like the service it shows.
public final class Console {
    let service: RecorderService
    private let settings: RecorderConfig.Console
    let server: HTTPServer
    let auth: ConsoleAuth
    let logger: Logger
    let startedAt = Date()
    /// Live preview streams answered since the console started (metrics, and tests that a layout change never reloads it).
    var previewStreamsServed = 0
    /// Thumbnails and downloads of recorded ranges (see Console+Playback).
    let media = MediaWork()
    /// The log records the log view shows (the app fills the shared ring).
    let logs: RecentLogs

    /// The address the console answers on (the port the system chose, when 0 was asked for).
    public var port: Int { server.port }
    public var usesTLS: Bool { server.usesTLS }
    /// The host to put in a URL: the listening address, or "localhost" when it listens on every interface.
    public var displayHost: String {
        switch settings.host {
        case "0.0.0.0", "::": return "localhost"
        case let host where host.contains(":"): return "[\(host)]"
        default: return settings.host
        }
    }

    /// Where to watch it, said as it is: the listening address, or, when it listens on every
    /// interface, that any address of this box will do (localhost among them).
    public var whereToWatch: String {
        let scheme = usesTLS ? "https" : "http"
        switch settings.host {
        case "0.0.0.0", "::":
            return "\(scheme)://<any address of this box>:\(port)/ (on this box: \(scheme)://localhost:\(port)/)"
        default:
            return "\(scheme)://\(displayHost):\(port)/"
        }
    }

    /// The console's connection limits (see HTTPServerLimits and docs/operations-network.md).
    public static let limits = HTTPServerLimits()
    /// The largest JSON body an endpoint takes; every other request has no body.
    static let jsonBodyLimit = 16 * 1024

    /// Listens as `[console]` says. A password is generated (and logged once)
    /// when none was set with `set-password`.
    public init(service: RecorderService, logger: Logger = Logger(label: "allspark.console"), logs: RecentLogs = .shared) throws {
        MainLoop.preconditionOnLoop()
        self.service = service
        self.logger = logger
        self.logs = logs
        let config = service.configuration
        settings = config.console
        let password = ConsolePassword(storageDirectory: config.recording.storageDirectory)
        if let generated = try password.generateIfMissing() {
            logger.notice("console: no password was set, so one was made: user \(ConsolePassword.user), password \(generated) (change it with: allspark-recorder set-password --config \(config.sourceFile))")
        }
        auth = ConsoleAuth(password: password, secure: settings.tlsCertificate != nil, logger: logger)
        MediaWork.removeLeftovers(in: config.recording.storageDirectory)
        server = try HTTPServer(host: settings.host, port: settings.port,
                                certificatePath: settings.tlsCertificate, keyPath: settings.tlsKey, limits: Self.limits)
        server.admit { [unowned self] head, decide in self.admit(head, decide) }
        server.serveLater { [unowned self] request, respond in self.respond(to: request, respond) }
        logger.notice("console: \(whereToWatch) (user \(ConsolePassword.user))")
    }

    /// Streamed answers still held (see HTTPServer.answersInProgress).
    public var answersInProgress: Int { server.answersInProgress }
    /// Connections the console holds now (see HTTPServer.openConnections).
    public var openConnections: Int { server.openConnections }

    public func stop() {
        MainLoop.preconditionOnLoop()
        server.stop()
    }

    // MARK: Routing

    /// Requests that need no password (the page, health, logging in).
    private static func isOpen(_ request: HTTPRequest) -> Bool {
        switch (request.method, request.path) {
        case (_, "/healthz"), ("POST", "/api/v1/login"), ("GET", "/"), ("GET", "/index.html"),
             ("GET", "/favicon.ico"), ("GET", "/favicon.svg"): return true
        default: return false
        }
    }

    /// From the head alone, before any body is read: who asks (a password is checked off
    /// the main loop), and how large a body the endpoint takes.
    func admit(_ head: HTTPRequest, _ decide: @escaping (HTTPAdmission) -> Void) {
        let bodyLimit = ["POST", "PATCH", "PUT"].contains(head.method) ? Self.jsonBodyLimit : 0
        if Self.isOpen(head) { return decide(.proceed(bodyLimit: bodyLimit)) }
        auth.check(head) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let proof): decide(.proceed(bodyLimit: bodyLimit, context: proof))
            case .failure(let refusal):
                // The page's own requests say so: a Basic challenge would make the browser
                // hold them behind its password dialog instead of letting the page ask.
                decide(.refuse(self.answer(refusal, challenge: head.headers["x-requested-with"] == nil)))
            }
        }
    }

    /// Answers `request` (admitted by `admit`): at once, or for a login once its password is checked.
    func respond(to request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) {
        if request.path == "/api/v1/login", request.method == "POST" { return login(request, respond) }
        // Checking the old password and hashing the new one take PBKDF2 twice: off the loop, answered later.
        if request.path == "/api/v1/password", request.method == "POST", let proof = request.admission as? ConsoleAuth.Proof {
            return changePassword(request, proof: proof, respond)
        }
        respond(self.respond(to: request))
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        let path = request.path
        if path == "/healthz" { return health() }
        if path == "/favicon.ico" || path == "/favicon.svg", request.method == "GET" {
            // Asked for by every browser before any login: an icon, not a 401 in the console's log.
            return HTTPResponse(status: 200, headers: [("Content-Type", "image/svg+xml"), ("Cache-Control", "public, max-age=86400")],
                                body: .data(ConsoleResources.icon))
        }
        if path == "/" || path == "/index.html", request.method == "GET" {
            // The page itself holds nothing private; it asks for the password and then uses the API.
            return HTTPResponse(status: 200, headers: pageHeaders, body: .data(ConsoleResources.page))
        }
        let proof: ConsoleAuth.Proof
        // Proven from the head (admit); a request that did not pass there has only what needs no password.
        switch (request.admission as? ConsoleAuth.Proof).map({ Result<ConsoleAuth.Proof, ConsoleAuth.Refusal>.success($0) }) ?? auth.check(request) {
        case .success(let p): proof = p
        case .failure(let refusal):
            return answer(refusal, challenge: request.headers["x-requested-with"] == nil)
        }
        switch (request.method, path) {
        case ("POST", "/api/v1/logout"):
            auth.logout(request)
            return HTTPResponse(status: 204, headers: [("Set-Cookie", "\(ConsoleAuth.cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")])
        case ("GET", "/api/v1/session"):
            // A reloaded page has its cookie but not its CSRF token; another site cannot read this answer.
            if case .session(let session) = proof { return json(200, SessionAnswer(user: ConsolePassword.user, csrfToken: session.csrf)) }
            return json(200, SessionAnswer(user: ConsolePassword.user, csrfToken: nil))
        case ("GET", "/api/v1/status"): return json(200, status(requestHost: request.headers["host"]))
        case ("GET", "/api/v1/chunks"): return chunks(request)
        case ("GET", "/api/v1/settings"), ("HEAD", "/api/v1/settings"): return currentSettings()
        case ("PATCH", "/api/v1/settings"): return patchSettings(request)
        case ("POST", "/api/v1/uploads"): return requestUploads(request)
        case ("GET", "/api/v1/uploads"): return uploadQueue()
        case ("GET", "/api/v1/openapi.json"): return openAPIDocument()
        case ("GET", "/api/v1/servers"): return servers()
        case ("GET", "/api/v1/server"): return json(200, serverLink())
        case ("PATCH", "/api/v1/server"): return patchServerLink(request)
        case ("GET", "/metrics"): return metrics()
        case ("GET", "/api/v1/preview.mjpeg"): return previewStream()
        case ("GET", "/api/v1/snapshot.jpg"): return snapshot()
        case ("GET", "/api/v1/thumbnail.jpg"): return thumbnail(request)
        case ("GET", "/api/v1/export.mp4"): return export(request)
        case ("GET", "/api/v1/logs"): return recentLogs(request)
        case ("GET", "/api/v1/pipeline"): return pipelineView()
        case ("GET", _) where path.hasPrefix("/api/v1/chunks/"), ("HEAD", _) where path.hasPrefix("/api/v1/chunks/"):
            return download(String(path.dropFirst("/api/v1/chunks/".count)), request: request)
        default:
            return error(404, "not_found", "no such page or API: \(request.method) \(loggable(path))")
        }
    }

    private var pageHeaders: [(String, String)] {
        [("Content-Type", "text/html; charset=utf-8"),
         ("Cache-Control", "no-store"),
         ("X-Frame-Options", "DENY"),
         ("Content-Security-Policy", "default-src 'self'; img-src 'self' blob:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; frame-ancestors 'none'")]
    }

    // MARK: Answers

    func json<T: Encodable>(_ status: Int, _ value: T, headers: [(String, String)] = []) -> HTTPResponse {
        let data = (try? ConsoleJSON.encoder.encode(value)) ?? Data("{}".utf8)
        return HTTPResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")] + headers,
                            body: .data(data))
    }

    func error(_ status: Int, _ code: String, _ message: String, field: String? = nil, allowed: [String]? = nil,
               headers: [(String, String)] = []) -> HTTPResponse {
        json(status, ErrorAnswer(error: .init(code: code, message: message, field: field, allowed: allowed)), headers: headers)
    }

    /// The one error shape, `{"error":{"code","message","field"?,"allowed"?}}`, as JSON
    /// (also for an answer that turns into an error after it started, the snapshot's).
    static func errorBody(_ code: String, _ message: String, field: String? = nil, allowed: [String]? = nil) -> Data {
        (try? ConsoleJSON.encoder.encode(ErrorAnswer(error: .init(code: code, message: message, field: field, allowed: allowed))))
            ?? Data("{}".utf8)
    }

    func answer(_ refusal: ConsoleAuth.Refusal, challenge: Bool) -> HTTPResponse {
        switch refusal {
        case .unauthenticated(let why):
            let header: [(String, String)] = challenge ? [("WWW-Authenticate", "Basic realm=\"allspark-recorder\", charset=\"UTF-8\"")] : []
            return error(401, "unauthorized", why, headers: header)
        case .throttled(let seconds, let why):
            return error(429, "too_many_attempts", why, headers: [("Retry-After", "\(seconds)")])
        case .forbidden(let why):
            return error(403, "forbidden", why)
        }
    }

    private func login(_ request: HTTPRequest, _ respond: @escaping (HTTPResponse) -> Void) {
        struct Login: Decodable { var password: String }
        guard let body = try? ConsoleJSON.decoder.decode(Login.self, from: request.body) else {
            return respond(error(400, "bad_request", "expected {\"password\": \"…\"}"))
        }
        if auth.isCrossSite(request) {
            return respond(error(403, "forbidden", "cross-site login refused"))
        }
        auth.login(password: body.password, from: request.remoteAddress) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let session):
                self.logger.info("console: \(ConsolePassword.user) logged in from \(request.remoteAddress)")
                respond(self.json(200, LoginAnswer(token: session.token, csrfToken: session.csrf, user: ConsolePassword.user),
                                  headers: [("Set-Cookie", self.auth.cookie(for: session, secure: self.server.usesTLS))]))
            case .failure(let refusal):
                // A wrong password, not a throttled attempt: under attack the lockout is logged once instead.
                if case .unauthenticated = refusal { self.logger.warning("console: failed login from \(request.remoteAddress)") }
                respond(self.answer(refusal, challenge: false))
            }
        }
    }

    /// 200 `ok`, 200 `degraded` (still recording, so a liveness probe must not
    /// restart it: a restart cures neither an overloaded CPU nor a slow
    /// detector; alert on the body), 503 `not_recording`.
    private func health() -> HTTPResponse {
        struct Health: Encodable {
            var status: String; var recording: String; var reason: String?; var degraded: [String]?; var server: String
            /// The same numbers as /api/v1/status (frame rate, privacy stage, CPU, temperature).
            var health: StatusAnswer.Health
        }
        let state = service.recorder?.state
        let server = service.link.map { "\($0.state)" } ?? "none"
        // Recording means frames reach the chunks now (the recorder leaves that state when they stop).
        let recording = state == .recording
        let reason = recording ? nil : (service.recorder?.lastProblem ?? "the recorder is \(state.map { "\($0)" } ?? "stopped")")
        let details = healthAnswer()
        let problems = recording ? details.problems : []
        return json(recording ? 200 : 503, Health(status: !recording ? "not_recording" : problems.isEmpty ? "ok" : "degraded",
                                                  recording: state.map { "\($0)" } ?? "stopped",
                                                  reason: reason, degraded: problems.isEmpty ? nil : problems, server: server,
                                                  health: details))
    }
}
