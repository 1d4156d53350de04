import Crypto
import Foundation
import SoupSupport

/// Who may use the console, and how they proved it.
///
/// - A browser logs in with the password (`POST /api/v1/login`) and gets a
///   session cookie (HttpOnly, SameSite=Strict) and a CSRF token that every
///   state-changing request must echo in `X-CSRF-Token`.
/// - A script sends HTTP Basic (`admin` and the password) or the session
///   token as `Authorization: Bearer …`.
/// - Failed attempts from an address are answered 429 for a growing time
///   after the third in a row, on top of PBKDF2's own cost.
/// - A state-changing request whose `Origin` is not this console is refused,
///   whatever proves it (a browser may send Basic credentials on its own).
///
/// Threading: main-loop thread only (the HTTP server's handlers run there).
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
    private var failures: [String: (count: Int, blockedUntil: Date)] = [:]
    private let now: () -> Date

    init(password: ConsolePassword, now: @escaping () -> Date = Date.init) {
        self.password = password
        self.now = now
    }

    enum Refusal: Error {
        /// No or wrong credentials: 401.
        case unauthenticated(String)
        /// Too many failures from this address: 429 with the seconds to wait.
        case throttled(seconds: Int)
        /// A cross-site or tokenless state change: 403.
        case forbidden(String)
    }

    // MARK: Logging in

    func login(password candidate: String, from address: String) -> Result<Session, Refusal> {
        if let wait = blockedSeconds(address) { return .failure(.throttled(seconds: wait)) }
        guard password.verify(candidate) else {
            failed(address)
            return .failure(.unauthenticated("wrong password"))
        }
        failures[address] = nil
        let session = Session(token: randomToken(), csrf: randomToken(), expires: now().addingTimeInterval(sessionLifetime))
        sessions[session.token] = session
        return .success(session)
    }

    /// Replaces the password when `old` is the current one (failures count as failed logins);
    /// every other session and every remembered Basic header stop working, `keeping` goes on.
    func changePassword(old: String, new: String, from address: String, keeping kept: Session?) -> Result<Void, Refusal> {
        if let wait = blockedSeconds(address) { return .failure(.throttled(seconds: wait)) }
        guard password.verify(old) else {
            failed(address)
            return .failure(.unauthenticated("the current password is wrong"))
        }
        do { try password.set(new) } catch { return .failure(.forbidden("\(error)")) }
        failures[address] = nil
        sessions = sessions.filter { $0.key == kept?.token }
        provenBasic = [:]
        return .success(())
    }

    func logout(_ request: HTTPRequest) {
        if let token = sessionToken(request) { sessions[token] = nil }
    }

    // MARK: Every request

    /// What proves `request` may be served, or why not.
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
            return checkBasic(authorization, from: request.remoteAddress)
        }
        guard let token = sessionToken(request), let session = liveSession(token) else {
            return .failure(.unauthenticated("log in first"))
        }
        if changesState, request.headers["x-csrf-token"] != session.csrf {
            return .failure(.forbidden("missing or wrong X-CSRF-Token"))
        }
        return .success(.session(session))
    }

    private func checkBasic(_ header: String, from address: String) -> Result<Proof, Refusal> {
        let digest = Data(SHA256.hash(data: Data(header.utf8)))
        if let until = provenBasic[digest], until > now() { return .success(.basic) }
        if let wait = blockedSeconds(address) { return .failure(.throttled(seconds: wait)) }
        guard let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
              text[..<colon] == ConsolePassword.user, password.verify(String(text[text.index(after: colon)...])) else {
            failed(address)
            return .failure(.unauthenticated("wrong user or password"))
        }
        failures[address] = nil
        provenBasic = provenBasic.filter { $0.value > now() }
        provenBasic[digest] = now().addingTimeInterval(300)
        return .success(.basic)
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
        guard let host, let url = URL(string: origin), let originHost = url.host else { return false }
        let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
        // Default ports are left out of both, so they compare as written.
        return originAuthority.lowercased() == host.lowercased()
    }

    // MARK: Slowing guessers down

    private func failed(_ address: String) {
        var entry = failures[address] ?? (0, .distantPast)
        entry.count += 1
        if entry.count >= 3 {
            let seconds = min(300, 1 << min(entry.count - 3, 9))
            entry.blockedUntil = now().addingTimeInterval(TimeInterval(seconds))
        }
        failures[address] = entry
    }

    private func blockedSeconds(_ address: String) -> Int? {
        guard let entry = failures[address], entry.blockedUntil > now() else { return nil }
        return max(1, Int(entry.blockedUntil.timeIntervalSince(now()).rounded(.up)))
    }

    func cookie(for session: Session, secure: Bool) -> String {
        "\(Self.cookieName)=\(session.token); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(Int(sessionLifetime))" + (secure ? "; Secure" : "")
    }
}
