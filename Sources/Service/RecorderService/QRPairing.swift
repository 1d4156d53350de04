import Foundation
import AllSparkProtocol
import GLibSupport
import Logging
import Recorder
import SoupSupport

/// Pairing by showing the camera the server page's QR code: reads codes
/// from the recorder's `QRScanner`, refuses what is not `host:port` (with an
/// optional scheme), checks that a server answers `GET /api/health` with
/// `"status":"ok"` there, and hands the first one that does to `accept`
/// (the service stores it as the server host and connects). Then it stops
/// scanning.
///
/// Threading: main loop only (scanner codes and HTTP answers arrive there).
final class QRPairing {
    private let scanner: QRScanner
    private let verifyTLS: Bool
    private let logger: Logger
    /// Takes the `server.host` of a checked code (with the scheme its server answered on);
    /// throwing means it could not be used (logged, scanning goes on).
    private let accept: (String) throws -> Void
    /// A server on the local network answers at once; a plain HTTP server stays silent at a TLS hello until this.
    private let http = HTTPClient(timeoutSeconds: 3)
    /// The code whose server is being checked; other codes wait until it is answered.
    private var checking: String?
    /// Codes refused or whose server did not answer, and until when they are not tried again:
    /// a code in view is read at every scanned frame.
    private var quiet: [String: Date] = [:]
    private var finished = false
    /// How long a refused code is ignored.
    static let retryAfterSeconds = 10.0

    init(scanner: QRScanner, verifyTLS: Bool, logger: Logger, accept: @escaping (String) throws -> Void) {
        self.scanner = scanner
        self.verifyTLS = verifyTLS
        self.logger = logger
        self.accept = accept
    }

    func start() throws {
        MainLoop.preconditionOnLoop()
        scanner.onCode = { [weak self] in self?.read($0) }
        try scanner.start()
        logger.notice("pairing: show the camera the QR code on the AllSpark server's page")
    }

    func stop() {
        MainLoop.preconditionOnLoop()
        finished = true
        scanner.onCode = nil
        scanner.stop()
    }

    private func read(_ text: String) {
        guard !finished, checking == nil else { return }
        let now = Date()
        if let until = quiet[text], until > now { return }
        // Bounded: a stream of different hostile codes cannot grow it.
        quiet = quiet.filter { $0.value > now }
        if quiet.count > 32 { quiet.removeAll() }
        let code: PairingCode
        do {
            code = try PairingCode(text)
        } catch {
            logger.warning("pairing: ignoring a QR code that is not a server address (\(error)): \"\(loggable(text))\"")
            quiet[text] = now.addingTimeInterval(Self.retryAfterSeconds)
            return
        }
        checking = text
        logger.info("pairing: QR code names \(code.host); asking it for /api/health")
        checkHealth(code.address, schemes: code.schemesToTry) { [weak self] result in
            guard let self else { return }
            self.checking = nil
            guard !self.finished else { return }
            let scheme: ServerAddress.Scheme
            switch result {
            case .success(let answered): scheme = answered
            case .failure(let failure):
                self.logger.warning("pairing: not pairing with \(code.host): \(failure.reason); still looking")
                self.quiet[text] = Date().addingTimeInterval(Self.retryAfterSeconds)
                return
            }
            do {
                try self.accept(code.host(with: scheme))
                self.stop()
            } catch {
                self.logger.error("pairing: cannot use \(code.host): \(error); still looking")
                self.quiet[text] = Date().addingTimeInterval(Self.retryAfterSeconds)
            }
        }
    }

    struct HealthFailure: Error { let reason: String }

    /// Asks each scheme in turn (wss before ws without a scheme, as the link
    /// does); calls `done` with the scheme that answered "ok", else with why
    /// not. Like the link, it falls back to ws after any failure but a
    /// certificate failure (a server without TLS may just not answer).
    private func checkHealth(_ address: ServerAddress, schemes: [ServerAddress.Scheme], done: @escaping (Result<ServerAddress.Scheme, HealthFailure>) -> Void) {
        guard let scheme = schemes.first else { return done(.failure(HealthFailure(reason: "no scheme to try"))) }
        let url = address.httpURL(scheme, path: "/api/health")
        http.get(url, acceptAnyCertificate: !verifyTLS) { [weak self] result in
            switch result {
            case .success(let response) where response.status == 200 && PairingCode.healthSaysOK(response.body):
                done(.success(scheme))
            case .success(let response):
                done(.failure(HealthFailure(reason: "GET \(url) answered HTTP \(response.status) \"\(loggable(response.body, limit: 120))\", not {\"status\":\"ok\"}")))
            case .failure(let error) where error.isCertificateError:
                done(.failure(HealthFailure(reason: "its certificate is not trusted (\(loggable(error.description))); pair with server.verify_tls = false for a self-signed server")))
            case .failure(let error) where schemes.count > 1:
                // As the link does: a server that does not speak TLS may not even answer a TLS hello.
                self?.logger.info("pairing: GET \(url): \(loggable(error.description)); trying \(schemes[1].rawValue)")
                self?.checkHealth(address, schemes: Array(schemes.dropFirst()), done: done)
            case .failure(let error):
                done(.failure(HealthFailure(reason: "GET \(url): \(loggable(error.description))")))
            }
        }
    }
}
