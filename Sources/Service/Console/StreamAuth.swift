import Crypto
import Foundation
import Logging
import RecorderService
import RTSPServerSupport

/// Who may pull the RTSP stream: RTSP Basic authentication with user `viewer`
/// and the stream's own password (`ConsolePassword.stream`, a salted PBKDF2
/// hash in the storage folder; why not the console's: see `ConsolePassword`).
///
/// - A request without credentials is answered 401 (clients such as ffmpeg
///   and VLC ask first without, then with them); that is not a failed attempt.
/// - Wrong credentials are failed attempts, throttled by the console's rules
///   (`FailedAttempts`): an address that must wait, or everyone after a flood
///   of failures, is answered 503 with `Retry-After`.
/// - Credentials proven once are remembered (by digest) for 5 minutes, renewed
///   on use: a client sends them with every request, PBKDF2 runs once.
///
/// Threading: `check` runs on the RTSP server's thread (never the main loop),
/// where PBKDF2's time holds up only RTSP requests; `lock` guards the state,
/// never held during PBKDF2.
public final class StreamAuth: @unchecked Sendable {
    private let password: ConsolePassword
    private let lock = NSLock()
    private var attempts = FailedAttempts(what: "stream")
    private var proven: [Data: Date] = [:]
    private let now: @Sendable () -> Date
    private let logger: Logger

    public init(password: ConsolePassword, logger: Logger = Logger(label: "allspark.stream"),
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.password = password
        self.logger = logger
        self.now = now
    }

    /// Makes the stream's password when none is set (logged once, like the console's) and
    /// gives `service` the check its RTSP server asks; call before `service.start()`.
    @discardableResult
    public static func install(on service: RecorderService, logger: Logger = Logger(label: "allspark.stream")) throws -> StreamAuth? {
        let config = service.configuration
        guard config.stream.isEnabled else { return nil }
        let password = ConsolePassword.stream(storageDirectory: config.recording.storageDirectory)
        if let generated = try password.generateIfMissing() {
            logger.notice("stream: no stream password was set, so one was made: user \(ConsolePassword.streamUser), password \(generated) (change it with: allspark-recorder set-password --stream --config \(config.sourceFile))")
        }
        let auth = StreamAuth(password: password, logger: logger)
        service.streamCheck = { authorization, address in auth.check(authorization: authorization, from: address) }
        return auth
    }

    /// The verdict on one request's `Authorization` header (nil: none).
    public func check(authorization: String?, from address: String) -> RTSPStreamServer.Verdict {
        guard let authorization, authorization.lowercased().hasPrefix("basic ") else { return .refused }
        let digest = Data(SHA256.hash(data: Data(authorization.utf8)))
        let start = now()
        let known: Bool = lock.withLock {
            guard let until = proven[digest], until > start else { return false }
            proven[digest] = start.addingTimeInterval(300)
            return true
        }
        if known { return .allowed }
        if let wait = lock.withLock({ attempts.refusal(address, now: start, logger: logger) }) {
            logger.info("stream: refused \(address) for \(wait.seconds) s: \(wait.why)")
            return .throttled(retryAfterSeconds: wait.seconds)
        }
        let encoded = String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)
        var ok = false
        if let decoded = Data(base64Encoded: encoded), let text = String(data: decoded, encoding: .utf8),
           let colon = text.firstIndex(of: ":"), text[..<colon] == ConsolePassword.streamUser {
            ok = password.verify(String(text[text.index(after: colon)...]))
        }
        let end = now()
        lock.withLock {
            if ok {
                attempts.succeeded(address)
                proven = proven.filter { $0.value > end }
                proven[digest] = end.addingTimeInterval(300)
            } else {
                attempts.failed(address, now: end, logger: logger)
            }
        }
        if !ok { logger.info("stream: wrong user or password from \(address)") }
        return ok ? .allowed : .refused
    }
}
