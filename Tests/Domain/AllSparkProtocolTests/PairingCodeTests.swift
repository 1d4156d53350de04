import XCTest
import AllSparkProtocol

/// What a pairing QR code may say: the server page's `<address>:<port>`, with an optional scheme and `/`.
final class PairingCodeTests: XCTestCase {
    func testTheServerPagesCodesAreAccepted() throws {
        let cases: [(String, String, ServerAddress)] = [
            ("192.168.1.20:9080", "192.168.1.20:9080", ServerAddress(host: "192.168.1.20", port: 9080)),
            ("192.168.1.20:9080/", "192.168.1.20:9080", ServerAddress(host: "192.168.1.20", port: 9080)),
            ("ws://192.168.1.20:9080", "ws://192.168.1.20:9080", ServerAddress(host: "192.168.1.20", port: 9080, explicitScheme: .ws)),
            ("WSS://allspark.local:8443/", "wss://allspark.local:8443", ServerAddress(host: "allspark.local", port: 8443, explicitScheme: .wss)),
            ("http://edge-server:8080", "ws://edge-server:8080", ServerAddress(host: "edge-server", port: 8080, explicitScheme: .ws)),
            ("https://edge-server:8080\n", "wss://edge-server:8080", ServerAddress(host: "edge-server", port: 8080, explicitScheme: .wss)),
            ("[fe80::1%eth0]:9080", "[fe80::1%eth0]:9080", ServerAddress(host: "fe80::1%eth0", port: 9080)),
        ]
        for (text, host, address) in cases {
            let code = try PairingCode(text)
            XCTAssertEqual(code.host, host, text)
            XCTAssertEqual(code.address, address, text)
            XCTAssertEqual(try ServerAddress(parsing: code.host), address, "the stored host reads back as the same server: \(text)")
        }
        XCTAssertEqual(try PairingCode("192.168.1.20:9080").host(with: .ws), "ws://192.168.1.20:9080")
        XCTAssertEqual(try PairingCode("[::1]:9080/").host(with: .wss), "wss://[::1]:9080")
    }

    /// As the iOS app pairs: the code's scheme is a hint. Servers show ws:// even when they run TLS,
    /// so ws://, http:// and bare codes try wss first, then ws; only a wss/https code is held to TLS.
    func testACodesSchemeIsAHintExceptThatTLSIsNeverDowngraded() throws {
        for text in ["192.168.1.20:9080", "ws://192.168.1.20:9080", "http://192.168.1.20:9080/"] {
            XCTAssertEqual(try PairingCode(text).schemesToTry, [.wss, .ws], text)
        }
        for text in ["wss://192.168.1.20:9080", "https://192.168.1.20:9080"] {
            XCTAssertEqual(try PairingCode(text).schemesToTry, [.wss], text)
        }
    }

    func testAnythingElseIsRefused() {
        let bad = [
            "", "   ", "allspark.local",                    // no port
            "ws://allspark.local",                            // a scheme would default the port; a code names it
            "allspark.local:0", "allspark.local:70000", "host:port",
            "ftp://allspark.local:21", "javascript://x:1",
            "ws://allspark.local:9080/path", "allspark.local:9080/?x=1", "allspark.local:9080#frag",
            "user@allspark.local:9080", "ws://user:pw@allspark.local:9080",
            "all spark:9080", "allspark.local :9080", "-bad.local:9080", "a..b:9080",
            "bad_host:9080", "allspärk.local:9080", "fe80::1:9080", "[fe80::1:9080",
            "WIFI:S:home;T:WPA;P:secret;;",                  // another kind of QR code
            "evil:9080\nFAKE LOG LINE", "evil\u{1B}[31m:9080", "evil\u{202E}:9080",
            String(repeating: "a", count: 400) + ":9080",
        ]
        for text in bad {
            XCTAssertThrowsError(try PairingCode(text), "refused: \(loggable(text))") { error in
                XCTAssertFalse("\(error)".contains("\n"), "the reason is one line")
            }
        }
    }

    func testHostileTextIsEscapedForTheLog() {
        let hostile = "evil:9080\n2026-01-01 critical: FAKE\u{1B}[2J\u{202E}"
        let logged = loggable(hostile)
        XCTAssertFalse(logged.contains("\n"))
        XCTAssertFalse(logged.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" })
        XCTAssertTrue(logged.contains("\\n") && logged.contains("\\u{1B}") && logged.contains("\\u{202E}"), logged)
    }

    func testHealthAnswers() {
        XCTAssertTrue(PairingCode.healthSaysOK(#"{"status":"ok","timestamp":1,"uptime":2,"protocols":["ws"],"address":"x","port":9080}"#))
        XCTAssertFalse(PairingCode.healthSaysOK(#"{"status":"error"}"#))
        XCTAssertFalse(PairingCode.healthSaysOK(#"["ok"]"#))
        XCTAssertFalse(PairingCode.healthSaysOK("<html>ok</html>"))
        XCTAssertFalse(PairingCode.healthSaysOK(""))
    }
}
