import AllSparkProtocol
import ArgumentParser
import Foundation
import GLibSupport
import RecorderCore
import SoupSupport

struct CheckServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-server",
        abstract: "Check an AllSpark server: its health answer, which of wss/ws works, and its TLS certificate.",
        discussion: """
            HOST is written as in server.host: host:port, [v6addr]:port, with or without
            http://, https://, ws://, wss://. Without a scheme both wss and ws are tried.
              allspark-recorder check-server 192.168.1.20:8080
              allspark-recorder check-server wss://allspark.local:8443 --no-verify-tls
            Exits 0 when the recorder could connect with these settings, 1 otherwise.
            """)

    @Argument(help: "The server, as in server.host.")
    var host: String

    @Flag(name: .customLong("no-verify-tls"), help: "Accept self-signed certificates, like server.verify_tls = false.")
    var noVerifyTLS = false

    @Option(help: "Seconds to wait for each answer.")
    var timeout: UInt32 = 5

    @OptionGroup var common: CommonOptions

    /// What one scheme gave.
    enum Verdict {
        case works
        case untrustedCertificate(String)
        case failed(String)
    }

    func run() throws {
        common.bootstrapLogging()
        let address: ServerAddress
        do { address = try ServerAddress(parsing: host) } catch { fail("\(host): \(error)") }
        let verify = !noVerifyTLS
        var usable: [ServerAddress.Scheme] = []
        for scheme in address.candidates {
            print("\(scheme.rawValue)://")  // user-facing
            // Health first: it tells a server that is up but refuses WebSockets from one that is down.
            switch health(address.httpURL(scheme, path: "/api/health"), acceptAnyCertificate: !verify) {
            case .success(let response):
                print("  GET /api/health: HTTP \(response.status) \(response.body.trimmingCharacters(in: .whitespacesAndNewlines))")  // user-facing
            case .failure(let error):
                print("  GET /api/health: \(error)")  // user-facing
            }
            switch webSocket(address.url(scheme), acceptAnyCertificate: !verify) {
            case .works:
                usable.append(scheme)
                let certificate = scheme == .wss ? (verify ? " (certificate trusted)" : " (certificate not checked: --no-verify-tls)") : ""
                print("  WebSocket \(address.url(scheme)): works\(certificate)")  // user-facing
            case .untrustedCertificate(let reason):
                // Would it work if the certificate were accepted? Say which case it is.
                let relaxed = webSocket(address.url(scheme), acceptAnyCertificate: true)
                let hint = if case .works = relaxed { "the server works with server.verify_tls = false (self-signed or unknown issuer)" } else { "it does not work either with verification off" }
                print("  WebSocket \(address.url(scheme)): certificate NOT trusted (\(reason)); \(hint)")  // user-facing
            case .failed(let reason):
                print("  WebSocket \(address.url(scheme)): \(reason)")  // user-facing
            }
        }
        guard let first = usable.first else {
            fail("the recorder could not connect to \(address) with these settings (see above)")
        }
        print("the recorder would connect with \(first.rawValue)")  // user-facing
    }

    private func health(_ url: String, acceptAnyCertificate: Bool) -> Result<HTTPClient.Response, WebSocketError> {
        let client = HTTPClient(timeoutSeconds: timeout)
        var result: Result<HTTPClient.Response, WebSocketError>?
        let loop = MainLoop()
        client.get(url, acceptAnyCertificate: acceptAnyCertificate) { result = $0; loop.quit() }
        if result == nil { loop.run(forAtMost: Double(timeout) + 2) }
        return result ?? .failure(WebSocketError(description: "no answer within \(timeout) s"))
    }

    private func webSocket(_ url: String, acceptAnyCertificate: Bool) -> Verdict {
        let connector = WebSocketConnector(timeoutSeconds: timeout)
        var verdict: Verdict?
        let loop = MainLoop()
        connector.connect(url: url, acceptAnyCertificate: acceptAnyCertificate) { result in
            switch result {
            case .success(let socket):
                socket.close(code: 1000, reason: "check-server")
                verdict = .works
            case .failure(let error) where error.isCertificateError:
                verdict = .untrustedCertificate(error.description)
            case .failure(let error):
                verdict = .failed(error.isNotTLS ? "the server does not speak TLS (\(error))" : error.description)
            }
            loop.quit()
        }
        if verdict == nil { loop.run(forAtMost: Double(timeout) + 2) }
        return verdict ?? .failed("no answer within \(timeout) s")
    }
}
