import Crypto
import Foundation
import GLibSupport
import Logging
import SoupSupport

/// Who may use the console, and how they proved it.
///
/// - A browser logs in with the password (`POST /api/v1/login`) and gets a
///   session cookie (HttpOnly, SameSite=Strict) and a CSRF token that every
///   state-changing request must echo in `X-CSRF-Token`.
/// - A script sends HTTP Basic (`admin` and the password) or the session
///   token as `Authorization: Bearer …`.
/// - Failed attempts from an address are answered 429 for a growing time
///   after the third in a row, on top of PBKDF2's own cost; and past
///   `globalFailureLimit` failures in a minute from all addresses together
///   (many addresses are easy to come by), every password check waits until
///   the minute has passed. Sessions and credentials proven before keep working.
/// - A state-changing request whose `Origin` is not this console (scheme,
///   host and port) is refused, whatever proves it (a browser may send Basic
///   credentials on its own).
///
/// Threading: main-loop thread only (the HTTP server's handlers run there),
/// except PBKDF2, which runs on `verifier`, one check at a time, and answers
/// back on the main loop: a guesser never holds up the loop (health, preview).
final class ConsoleAuth {
    enum Proof { case session(Session), basic, bearer(Session) }

    struct Session {
        let token: String
        let csrf: String
        var expires: Date
    }

    static let cookieName = "allspark_session"
    /// A session lasts this long after its last use.
    let sessionLifetime: TimeInterval = 12 * 3600
    private let password: ConsolePassword
    private var sessions: [String: Session] = [:]
    /// Digests of Authorization headers proven recently, so a script polling with
    /// Basic does not pay PBKDF2 on every request.
    private var provenBasic: [Data: Date] = [:]
    private var attempts = FailedAttempts(what: "console")
    /// Failed password checks in `globalWindow`, from all addresses together, before every check waits.
    static let globalFailureLimit = FailedAttempts.globalFailureLimit
    static let globalWindow = FailedAttempts.globalWindow
    /// Password checks waiting for or running PBKDF2; past this, more are answered 429 at once.
    static let maximumVerifying = 8
    private var verifying = 0
    private let verifier = DispatchQueue(label: "allspark.console.password")
    private let now: () -> Date
    /// "https" or "http": what an Origin of this console starts with.
    private let scheme: String
    private let logger: Logger

    init(password: ConsolePassword, secure: Bool = false, logger: Logger = Logger(label: "allspark.console"),
         now: @escaping () -> Date = Date.init) {
        self.password = password
        self.scheme = secure ? "https" : "http"
        self.logger = logger
        self.now = now
    }

    enum Refusal: Error {
        /// No or wrong credentials: 401.
        case unauthenticated(String)
        /// Too many failures (or checks at once): 429 with the seconds to wait and why.
        case throttled(seconds: Int, why: String)
        /// A cross-site or tokenless state change: 403.
        case forbidden(String)
    }

    // MARK: Logging in

    /// Checks `candidate` off the main loop; `done` runs on the main loop.
    func login(password candidate: String, from address: String, done: @escaping (Result<Session, Refusal>) -> Void) {
        MainLoop.preconditionOnLoop()
        verify(candidate, from: address) { [weak self] refusal in
            guard let self else { return }
            if let refusal { return done(.failure(refusal)) }
            let session = Session(token: randomToken(), csrf: randomToken(), expires: self.now().addingTimeInterval(self.sessionLifetime))
            self.sessions[session.token] = session
            done(.success(session))
        }
    }

    /// Runs PBKDF2 for `candidate` on the verifier queue unless `address` (or everyone) must wait;
    /// `done` gets nil when it is the password, on the main loop.
    private func verify(_ candidate: String, from address: String, done: @escaping (Refusal?) -> Void) {
        if let refusal = throttled(address) { return done(refusal) }
        guard verifying < Self.maximumVerifying else {
            return done(.throttled(seconds: 1, why: "too many password checks at once; try again in 1 s"))
        }
        verifying += 1
        let password = self.password
        verifier.async {
            let ok = password.verify(candidate)
            MainLoop.post { [weak self] in
                guard let self else { return }
                self.verifying -= 1
                if ok {
                    self.attempts.succeeded(address)
                    done(nil)
                } else {
                    self.failed(address)
                    done(.unauthenticated("wrong user or password"))
                }
            }
        }
    }

    /// Replaces the password when `old` is the current one (a wrong one counts as a failed
    /// login); every other session and every remembered Basic header stop working, `keeping`
    /// goes on. Both PBKDF2 runs (checking `old`, hashing `new`) happen on the verifier queue;
    /// `done` runs on the main loop.
    func changePassword(old: String, new: String, from address: String, keeping kept: Session?,
                        done: @escaping (Result<Void, Refusal>) -> Void) {
        MainLoop.preconditionOnLoop()
        verify(old, from: address) { [weak self] refusal in
            guard let self else { return }
            if let refusal { return done(.failure(refusal)) }
            let password = self.password
            self.verifier.async {
                let stored = Result { try password.set(new) }
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    if case .failure(let error) = stored { return done(.failure(.forbidden("\(error)"))) }
                    self.sessions = self.sessions.filter { $0.key == kept?.token }
                    self.provenBasic = [:]
                    done(.success(()))
                }
            }
        }
    }

    func logout(_ request: HTTPRequest) {
        if let token = sessionToken(request) { sessions[token] = nil }
    }

    // MARK: Every request

    /// What proves `request` may be served, or why not: at once when no password
    /// must be checked, else after PBKDF2 (off the loop); `done` runs on the main loop.
    func check(_ request: HTTPRequest, done: @escaping (Result<Proof, Refusal>) -> Void) {
        let authorization = request.headers["authorization"] ?? ""
        guard authorization.lowercased().hasPrefix("basic "), !isCrossSite(request) || !changesState(request) else {
            return done(check(request))
        }
        let digest = Data(SHA256.hash(data: Data(authorization.utf8)))
        if let until = provenBasic[digest], until > now() {
            // Renewed on use: a script that keeps polling is never sent back to PBKDF2 (nor to a lockout).
            provenBasic[digest] = now().addingTimeInterval(300)
            return done(.success(.basic))
        }
        guard let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
              text[..<colon] == ConsolePassword.user else {
            if let refusal = throttled(request.remoteAddress) { return done(.failure(refusal)) }
            failed(request.remoteAddress)
            return done(.failure(.unauthenticated("wrong user or password")))
        }
        verify(String(text[text.index(after: colon)...]), from: request.remoteAddress) { [weak self] refusal in
            guard let self else { return }
            if let refusal { return done(.failure(refusal)) }
            self.provenBasic = self.provenBasic.filter { $0.value > self.now() }
            self.provenBasic[digest] = self.now().addingTimeInterval(300)
            done(.success(.basic))
        }
    }

    private func changesState(_ request: HTTPRequest) -> Bool { !["GET", "HEAD", "OPTIONS"].contains(request.method) }

    /// What proves `request` may be served, or why not, without checking a password:
    /// sessions, bearer tokens and Basic credentials proven recently.
    func check(_ request: HTTPRequest) -> Result<Proof, Refusal> {
        let changesState = !["GET", "HEAD", "OPTIONS"].contains(request.method)
        if changesState, isCrossSite(request) {
            return .failure(.forbidden("cross-site request refused (Origin \(request.headers["origin"] ?? ""))"))
        }
        let authorization = request.headers["authorization"] ?? ""
        if authorization.lowercased().hasPrefix("bearer ") {
            let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
            guard let session = liveSession(token) else { return .failure(.unauthenticated("unknown or expired token")) }
            return .success(.bearer(session))
        }
        if authorization.lowercased().hasPrefix("basic ") {
            let digest = Data(SHA256.hash(data: Data(authorization.utf8)))
            if let until = provenBasic[digest], until > now() {
                provenBasic[digest] = now().addingTimeInterval(300)
                return .success(.basic)
            }
            return .failure(.unauthenticated("wrong user or password"))
        }
        guard let token = sessionToken(request), let session = liveSession(token) else {
            return .failure(.unauthenticated("log in first"))
        }
        if changesState, request.headers["x-csrf-token"] != session.csrf {
            return .failure(.forbidden("missing or wrong X-CSRF-Token"))
        }
        return .success(.session(session))
    }

    private func liveSession(_ token: String) -> Session? {
        guard var session = sessions[token] else { return nil }
        guard session.expires > now() else {
            sessions[token] = nil
            return nil
        }
        session.expires = now().addingTimeInterval(sessionLifetime)
        sessions[token] = session
        return session
    }

    private func sessionToken(_ request: HTTPRequest) -> String? {
        guard let cookies = request.headers["cookie"] else { return nil }
        for part in cookies.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0] == Self.cookieName { return pair[1] }
        }
        return nil
    }

    /// True when a browser says the request comes from a page of another site.
    func isCrossSite(_ request: HTTPRequest) -> Bool {
        guard let origin = request.headers["origin"] else { return false }
        return !isSameOrigin(origin, host: request.headers["host"])
    }

    private func isSameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, let url = URL(string: origin), let originHost = url.host,
              url.scheme?.lowercased() == scheme else { return false }
        let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
        // Default ports are left out of both, so they compare as written.
        return originAuthority.lowercased() == host.lowercased()
    }

    // MARK: Slowing guessers down (FailedAttempts: the rules the RTSP stream shares)

    private func failed(_ address: String) { attempts.failed(address, now: now(), logger: logger) }

    /// Why a password from `address` may not be checked now, or nil.
    private func throttled(_ address: String) -> Refusal? {
        attempts.refusal(address, now: now(), logger: logger).map { .throttled(seconds: $0.seconds, why: $0.why) }
    }

    func cookie(for session: Session, secure: Bool) -> String {
        "\(Self.cookieName)=\(session.token); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(sessionLifetime))" + (secure ? "; Secure" : "")
    }
}
