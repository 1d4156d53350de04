import XCTest
import AllSparkProtocol
import RecorderTestSupport
import ServerLinkTesting
@testable import ServerLink

/// The server's communicationsPolicy as the link reads it: parsed from clientConfig and handed
/// on (the service enforces it: RecorderServiceTests/CommunicationsPolicyEnforcerTests).
final class CommunicationsPolicyTests: XCTestCase {
    static let shipped = #"{"type":"clientConfig","config":{"videoFormat":"mp4","communicationsPolicy":{"wifi":true,"cellular":true,"ethernet":true,"usb":true,"bluetooth":false,"airdrop":false,"nfc":false,"uwb":false,"satellite":false}}}"#

    func testThePolicyIsParsedStrictly() throws {
        let policy = try XCTUnwrap(CommunicationsPolicy.fromClientConfig(Self.shipped))
        XCTAssertEqual(policy.forbidden, [.airdrop, .bluetooth, .nfc, .satellite, .uwb])
        XCTAssertEqual(policy.allowed[.wifi], true)
        let odd = try XCTUnwrap(CommunicationsPolicy.fromClientConfig(
            #"{"type":"clientConfig","config":{"communicationsPolicy":{"wifi":0,"bluetooth":"no","laser":false,"nfc":false}}}"#))
        XCTAssertEqual(odd.allowed, [.nfc: false], "only JSON booleans count")
        XCTAssertEqual(Set(odd.rejected.keys), ["wifi", "bluetooth"])
        XCTAssertEqual(odd.ignoredKeys, ["laser"])
        XCTAssertNil(CommunicationsPolicy.fromClientConfig(#"{"type":"clientConfig","config":{"communicationsPolicy":[true]}}"#))
        XCTAssertNil(CommunicationsPolicy.fromClientConfig(#"{"type":"clientConfig","config":{"fps":30}}"#))
    }

    func testTheLinkHandsOnThePolicyFromClientConfigAndKnowsItsLocalAddress() throws {
        let server = try AllSparkTestServer()
        server.clientConfig = Self.shipped
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: nil)
        var policies: [CommunicationsPolicy] = []
        var local: String?
        link.onCommunicationsPolicy = { [unowned link] in
            policies.append($0)
            local = link.localAddress
        }
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { !policies.isEmpty })
        link.stop()
        XCTAssertEqual(policies.first?.forbidden, [.airdrop, .bluetooth, .nfc, .satellite, .uwb])
        XCTAssertEqual(local, "127.0.0.1", "the address the connection goes out from (which interface the link uses)")
        XCTAssertNil(link.localAddress, "stopped: no connection")
    }
}
