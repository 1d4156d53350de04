import XCTest
import Console
import Foundation
import RecorderTestSupport

/// `[console] tls_certificate` + `tls_key`: the console speaks HTTPS only,
/// with the box's certificate, and its session cookie is marked Secure.
final class ConsoleTLSTests: XCTestCase {
    func testWithACertificateTheConsoleIsHTTPSOnly() throws {
        let certificates = TemporaryDirectory()
        let (certificate, key) = try makeSelfSignedCertificate(in: certificates)
        let fixture = try ConsoleFixture(extraConfig: """
            tls_certificate = "\(certificate)"
            tls_key = "\(key)"
            """)
        defer { fixture.stop() }
        XCTAssertTrue(fixture.console.usesTLS)
        let port = fixture.console.port
        let https = try runWhileServing("/usr/bin/curl", ["-s", "--cacert", certificate, "-o", "/dev/null", "-w", "%{http_code}",
                                                          "-u", "admin:\(fixture.password)", "https://127.0.0.1:\(port)/api/v1/status"])
        XCTAssertEqual(https.output, "200", "verified against the box's own certificate")
        let login = try runWhileServing("/usr/bin/curl", ["-s", "--cacert", certificate, "-D", "-", "-o", "/dev/null", "-X", "POST",
                                                          "--data", #"{"password":"\#(fixture.password)"}"#,
                                                          "https://127.0.0.1:\(port)/api/v1/login"])
        XCTAssertTrue(login.output.contains("; Secure"), "the cookie only travels over HTTPS: \(login.output)")
        let plain = try runWhileServing("/usr/bin/curl", ["-s", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
                                                          "http://127.0.0.1:\(port)/healthz"])
        XCTAssertNotEqual(plain.output, "200", "no plain HTTP on the TLS port")
    }

    func testACertificateWithoutItsKeyIsAClearConfigError() throws {
        XCTAssertThrowsError(try ConsoleFixture(extraConfig: "tls_certificate = \"/nonexistent/cert.pem\"")) { error in
            XCTAssertTrue("\(error)".contains("console.tls_key"), "\(error)")
        }
    }

    func testTLSConnectionsAreClosedLikePlainOnes() throws {
        let certificates = TemporaryDirectory()
        let (certificate, key) = try makeSelfSignedCertificate(in: certificates)
        let fixture = try ConsoleFixture(extraConfig: """
            tls_certificate = "\(certificate)"
            tls_key = "\(key)"
            """)
        defer { fixture.stop() }
        let url = "https://127.0.0.1:\(fixture.console.port)/healthz"
        // Recording before counting answers: on a loaded machine the first frames come late and
        // /healthz says 503 until they do (what is measured here is files, not start-up time).
        let recording = Date().addingTimeInterval(20)
        while try runWhileServing("/usr/bin/curl", ["-s", "--cacert", certificate, "-o", "/dev/null", "-w", "%{http_code}", url]).output != "200",
              Date() < recording {
            waitOnMainLoop(0.2) { false }
        }
        let before = openFiles()
        // 100 answers over TLS, then 20 clients that speak plain HTTP to it, each on its own connection.
        let tls = try runWhileServing("/usr/bin/curl", ["-s", "--cacert", certificate, "-w", "%{http_code} "]
                                      + Array(repeating: ["-o", "/dev/null", url], count: 100).flatMap { $0 })
        XCTAssertEqual(tls.output.split(separator: " ").filter { $0 == "200" }.count, 100, tls.output)
        _ = try runWhileServing("/usr/bin/curl", ["-s", "--max-time", "5"]
                                + Array(repeating: ["-o", "/dev/null", "http://127.0.0.1:\(fixture.console.port)/healthz"], count: 20).flatMap { $0 })
        waitOnMainLoop(15) { openFiles() <= before + 4 }
        XCTAssertLessThanOrEqual(openFiles(), before + 4, "TLS connections left files open")
    }
}
