import XCTest
import AllSparkProtocol
import RecorderService
import RecorderTestSupport

/// The server's communicationsPolicy as the service enforces it: always logged with the radios
/// it forbids, and with server.enforce_communications_policy enforced with rfkill. The rfkill
/// and network trees are fake sysfs trees in a temporary folder (a test box may have no
/// radios, and a test must never switch the real ones).
final class CommunicationsPolicyEnforcerTests: XCTestCase {
    static let shipped = #"{"type":"clientConfig","config":{"videoFormat":"mp4","communicationsPolicy":{"wifi":true,"cellular":true,"ethernet":true,"usb":true,"bluetooth":false,"airdrop":false,"nfc":false,"uwb":false,"satellite":false}}}"#

    /// rfkill0 wlan, rfkill1 bluetooth, rfkill2 nfc, rfkill3 gps; all on unless `blocked`.
    func fakeRfkill(blocked: Set<String> = []) throws -> TemporaryDirectory {
        let root = TemporaryDirectory()
        for (id, type, name) in [("rfkill0", "wlan", "phy0"), ("rfkill1", "bluetooth", "hci0"), ("rfkill2", "nfc", "nfc0"), ("rfkill3", "gps", "gps0")] {
            let folder = root.url.appendingPathComponent(id)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try "\(type)\n".write(to: folder.appendingPathComponent("type"), atomically: true, encoding: .utf8)
            try "\(name)\n".write(to: folder.appendingPathComponent("name"), atomically: true, encoding: .utf8)
            try (blocked.contains(id) ? "1\n" : "0\n").write(to: folder.appendingPathComponent("soft"), atomically: true, encoding: .utf8)
        }
        return root
    }

    func soft(_ root: TemporaryDirectory, _ id: String) -> String? {
        (try? String(contentsOf: root.url.appendingPathComponent(id).appendingPathComponent("soft"), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testWithoutEnforcementThePolicyAndTheForbiddenRadiosAreLoggedAndNothingIsSwitched() throws {
        let root = try fakeRfkill()
        let log = LogCapture()
        let enforcer = CommunicationsPolicyEnforcer(enforce: false, rfkillRoot: root.path, logger: log.logger) { .ethernet }
        enforcer.apply(try XCTUnwrap(CommunicationsPolicy.fromClientConfig(Self.shipped)))
        XCTAssertEqual(["rfkill0", "rfkill1", "rfkill2", "rfkill3"].map { soft(root, $0) }, ["0", "0", "0", "0"], "nothing switched")
        XCTAssertTrue(log.contains("communications policy from the server: airdrop forbidden, bluetooth forbidden, cellular allowed"), log.text)
        XCTAssertTrue(log.contains("forbids bluetooth radio hci0 (rfkill1, bluetooth), present and on; not enforced (server.enforce_communications_policy = false)"), log.text)
        XCTAssertTrue(log.contains("forbids nfc radio nfc0 (rfkill2, nfc)"), log.text)
        XCTAssertFalse(log.contains("phy0"), "wifi is allowed: not listed")
    }

    func testEnforcementBlocksTheForbiddenRadiosAndUnblocksOnlyItsOwnWhenAllowedAgain() throws {
        let root = try fakeRfkill(blocked: ["rfkill2"])   // nfc switched off by someone else
        let log = LogCapture()
        let enforcer = CommunicationsPolicyEnforcer(enforce: true, rfkillRoot: root.path, logger: log.logger) { .ethernet }
        enforcer.apply(try XCTUnwrap(CommunicationsPolicy.fromClientConfig(Self.shipped)))
        XCTAssertEqual(soft(root, "rfkill1"), "1", "bluetooth blocked")
        XCTAssertEqual(soft(root, "rfkill0"), "0", "wifi allowed: left on")
        XCTAssertEqual(soft(root, "rfkill3"), "0", "gps: the policy does not name it")
        XCTAssertTrue(log.contains("communications policy: blocked bluetooth radio hci0"), log.text)
        XCTAssertTrue(log.contains("forbids satellite: Linux has no rfkill switch for it; not enforced"), log.text)

        let allowAll = #"{"type":"clientConfig","config":{"communicationsPolicy":{"bluetooth":true,"nfc":true}}}"#
        enforcer.apply(try XCTUnwrap(CommunicationsPolicy.fromClientConfig(allowAll)))
        XCTAssertEqual(soft(root, "rfkill1"), "0", "what the recorder blocked it unblocks when allowed again")
        XCTAssertEqual(soft(root, "rfkill2"), "1", "what someone else blocked stays blocked")
    }

    func testTheRadioTheServerConnectionUsesIsNeverBlocked() throws {
        let root = try fakeRfkill()
        let log = LogCapture()
        let enforcer = CommunicationsPolicyEnforcer(enforce: true, rfkillRoot: root.path, logger: log.logger) { .wifi }
        enforcer.apply(try XCTUnwrap(CommunicationsPolicy.fromClientConfig(
            #"{"type":"clientConfig","config":{"communicationsPolicy":{"wifi":false,"bluetooth":false}}}"#)))
        XCTAssertEqual(soft(root, "rfkill0"), "0", "the server link goes out by wifi: not blocked")
        XCTAssertEqual(soft(root, "rfkill1"), "1")
        XCTAssertTrue(log.lines.contains { $0.hasPrefix("warning") && $0.contains("forbids wifi radio phy0") && $0.contains("not blocked") }, log.text)
    }

    func testNetworkInterfacesAreClassifiedFromAFakeSysfsTree() throws {
        let net = TemporaryDirectory()
        for (name, entries) in [("wlan0", ["wireless/"]), ("wwan0", ["uevent:DEVTYPE=wwan\nINTERFACE=wwan0"]),
                                ("bnep0", ["uevent:DEVTYPE=bluetooth"]), ("eth0", ["uevent:INTERFACE=eth0"])] {
            let folder = net.url.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for entry in entries {
                if entry.hasSuffix("/") {
                    try FileManager.default.createDirectory(at: folder.appendingPathComponent(String(entry.dropLast())), withIntermediateDirectories: true)
                } else {
                    let parts = entry.split(separator: ":", maxSplits: 1).map(String.init)
                    try parts[1].write(to: folder.appendingPathComponent(parts[0]), atomically: true, encoding: .utf8)
                }
            }
        }
        XCTAssertEqual(NetworkMedium.of(interface: "wlan0", netRoot: net.path), .wifi)
        XCTAssertEqual(NetworkMedium.of(interface: "wwan0", netRoot: net.path), .cellular)
        XCTAssertEqual(NetworkMedium.of(interface: "bnep0", netRoot: net.path), .bluetooth)
        XCTAssertEqual(NetworkMedium.of(interface: "eth0", netRoot: net.path), .ethernet)
        XCTAssertNil(NetworkMedium.of(interface: "lo", netRoot: net.path))
        XCTAssertEqual(NetworkMedium.interface(holding: "127.0.0.1"), "lo")
    }
}
