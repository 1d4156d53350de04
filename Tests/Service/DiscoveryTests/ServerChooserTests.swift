import AllSparkProtocol
import GLibSupport
import XCTest
import RecorderCore
@testable import Discovery

/// The pure parts: folding Avahi's sightings into servers, address order,
/// and the auto-connect policy.
final class ServerTableTests: XCTestCase {
    func key(_ name: String, _ interface: Int32 = 2, ipv6: Bool = false) -> ServerTable.Key {
        ServerTable.Key(interface: interface, ipProtocol: ipv6 ? 1 : 0, name: name)
    }

    func testSightingsOnEachInterfaceAndProtocolFoldIntoOneServer() {
        var table = ServerTable()
        let v4 = ServiceResolution(host: "studio.local", address: "192.168.1.20", port: 8080, txt: ["path": "/"])
        let v6 = ServiceResolution(host: "studio.local", address: "fe80::1%eth0", port: 8080, txt: ["path": "/"])
        XCTAssertEqual(table.resolved(key("Studio", ipv6: true), v6),
                       .added(DiscoveredServer(name: "Studio", host: "studio.local", addresses: ["fe80::1%eth0"], port: 8080, txt: ["path": "/"])))
        XCTAssertEqual(table.resolved(key("Studio"), v4),
                       .updated(DiscoveredServer(name: "Studio", host: "studio.local", addresses: ["192.168.1.20", "fe80::1%eth0"], port: 8080, txt: ["path": "/"])),
                       "IPv4 before link-local IPv6")
        XCTAssertNil(table.resolved(key("Studio"), v4), "the same answer again is no change")
        XCTAssertEqual(table.servers.count, 1)

        XCTAssertEqual(table.removed(key("Studio", ipv6: true)),
                       .updated(DiscoveredServer(name: "Studio", host: "studio.local", addresses: ["192.168.1.20"], port: 8080, txt: ["path": "/"])))
        XCTAssertNil(table.removed(key("Studio", ipv6: true)), "unknown sightings change nothing")
        XCTAssertEqual(table.removed(key("Studio"))?.server.name, "Studio")
        XCTAssertEqual(table.removed(key("Studio")), nil)
        XCTAssertTrue(table.servers.isEmpty)
    }

    func testTheLatestAnnouncementNamesHostPortAndTXT() {
        var table = ServerTable()
        _ = table.resolved(key("S", 2), ServiceResolution(host: "a.local", address: "10.1.1.1", port: 1000, txt: ["v": "1"]))
        _ = table.resolved(key("S", 3), ServiceResolution(host: "a.local", address: "10.2.2.2", port: 1000, txt: ["v": "1"]))
        // Restarted on another port: the new port wins and the old sighting's address is not mixed in.
        let event = table.resolved(key("S", 3), ServiceResolution(host: "a.local", address: "10.2.2.2", port: 2000, txt: ["v": "2"]))
        XCTAssertEqual(event, .updated(DiscoveredServer(name: "S", host: "a.local", addresses: ["10.2.2.2"], port: 2000, txt: ["v": "2"])))
    }

    func testServersAreListedInTheOrderTheyWereFirstFoundAndRemoveAllWithdrawsEach() {
        var table = ServerTable()
        for name in ["Zulu", "Alpha", "Mike"] {
            _ = table.resolved(key(name), ServiceResolution(host: "\(name).local", address: "127.0.0.1", port: 1))
        }
        _ = table.resolved(key("Zulu", ipv6: true), ServiceResolution(host: "Zulu.local", address: "::1", port: 1))
        XCTAssertEqual(table.servers.map(\.name), ["Zulu", "Alpha", "Mike"])
        let gone = table.removeAll()
        XCTAssertEqual(gone.map(\.server.name), ["Zulu", "Alpha", "Mike"])
        XCTAssertTrue(gone.allSatisfy { if case .removed = $0 { return true } else { return false } })
        XCTAssertTrue(table.servers.isEmpty)
        _ = table.resolved(key("Mike"), ServiceResolution(host: "m.local", address: "127.0.0.1", port: 1))
        _ = table.resolved(key("Alpha"), ServiceResolution(host: "a.local", address: "127.0.0.1", port: 1))
        XCTAssertEqual(table.servers.map(\.name), ["Mike", "Alpha"], "found anew after the reset")
    }

    func testChangesBetweenTwoListsAreWhatTheLogShows() {
        let a = DiscoveredServer(name: "A", host: "a.local", addresses: ["10.0.0.1"], port: 1)
        let b = DiscoveredServer(name: "B", host: "b.local", addresses: ["10.0.0.2"], port: 2)
        var movedB = b
        movedB.port = 3
        let c = DiscoveredServer(name: "C", host: "c.local", addresses: ["10.0.0.3"], port: 4)
        XCTAssertEqual(DiscoveryEvent.changes(from: [a, b], to: [movedB, c]), [.updated(movedB), .added(c), .removed(a)])
        XCTAssertEqual(DiscoveryEvent.changes(from: [a], to: [a]), [])
        XCTAssertEqual(DiscoveryEvent.added(a).description, #"server found: "A" (a.local, 10.0.0.1, port 1)"#)
        XCTAssertEqual(DiscoveryEvent.removed(a).description, #"server withdrawn: "A""#)
    }

    func testAddressOrderAndTheAddressToConnectTo() throws {
        XCTAssertEqual(AddressRank.sorted(["fe80::2%eth0", "169.254.3.4", "2001:db8::5", "192.168.1.9", "10.0.0.1", "10.0.0.1"]),
                       ["10.0.0.1", "192.168.1.9", "2001:db8::5", "169.254.3.4", "fe80::2%eth0"])
        let linkLocalOnly = DiscoveredServer(name: "x", host: "x.local", addresses: ["fe80::2%eth0"], port: 8080)
        XCTAssertEqual(linkLocalOnly.serverAddress, ServerAddress(host: "fe80::2%eth0", port: 8080))
        let url = try XCTUnwrap(linkLocalOnly.serverAddress?.url(.ws))
        XCTAssertEqual(url, "ws://[fe80::2%25eth0]:8080/")
        // The URL libsoup gets must survive GLib's parser with its zone (a bare % does not).
        XCTAssertEqual(try GLibURI.host(of: url), "fe80::2%eth0")
        XCTAssertThrowsError(try GLibURI.host(of: "ws://[fe80::2%eth0]:8080/"), "why the zone is encoded")
        XCTAssertNil(DiscoveredServer(name: "x", host: "x.local", addresses: [], port: 1).serverAddress)
    }

    func testJSONHasTheFieldsDiscoverPrints() throws {
        let server = DiscoveredServer(name: "Studio", host: "studio.local", addresses: ["192.168.1.20"], port: 8080, txt: ["path": "/"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(server)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["name", "host", "addresses", "port", "txt"])
        XCTAssertEqual(try JSONDecoder().decode(DiscoveredServer.self, from: JSONEncoder().encode(server)), server)
    }
}

final class ServerChooserTests: XCTestCase {
    func server(_ name: String, _ address: String = "127.0.0.1", port: Int = 8080) -> DiscoveredServer {
        DiscoveredServer(name: name, host: "\(name.lowercased()).local", addresses: [address], port: port)
    }

    func assertConnects(_ decision: ServerChooser.Decision?, to name: String, _ address: String = "127.0.0.1", port: Int = 8080,
                        file: StaticString = #filePath, line: UInt = #line) {
        guard case .connect(let to, let chosen, _)? = decision else {
            return XCTFail("expected to connect to \(name), got \(String(describing: decision))", file: file, line: line)
        }
        XCTAssertEqual(chosen, name, file: file, line: line)
        XCTAssertEqual(to, ServerAddress(host: address, port: port), file: file, line: line)
    }

    func testAConfiguredHostIsNeverMoved() {
        var chooser = ServerChooser(configuredHost: true)
        XCTAssertNil(chooser.decide(servers: [server("A")], linkConnected: false))
        XCTAssertNil(chooser.decide(servers: [], linkConnected: false))
        XCTAssertNil(chooser.chosen)
    }

    func testConnectsToTheFirstServerFoundAndStaysWhileItIsAnnounced() {
        var chooser = ServerChooser(configuredHost: false)
        XCTAssertNil(chooser.decide(servers: [], linkConnected: false), "nothing announced: nothing to do")
        assertConnects(chooser.decide(servers: [server("A"), server("B", port: 9000)], linkConnected: false), to: "A")
        XCTAssertNil(chooser.decide(servers: [server("A"), server("B", port: 9000)], linkConnected: false),
                     "still announced, not connected yet: the link keeps trying it")
        XCTAssertNil(chooser.decide(servers: [server("B", port: 9000), server("A")], linkConnected: true))
    }

    func testWithdrawnWhileConnectedStaysThenMovesOnceTheLinkDrops() {
        var chooser = ServerChooser(configuredHost: false)
        assertConnects(chooser.decide(servers: [server("A")], linkConnected: false), to: "A")
        let others = [server("B", port: 9000), server("C", port: 9100)]
        guard case .stay(let reason)? = chooser.decide(servers: others, linkConnected: true) else {
            return XCTFail("a withdrawal while connected is worth a log line")
        }
        XCTAssertTrue(reason.contains("no longer announced; staying"), reason)
        XCTAssertNil(chooser.decide(servers: others, linkConnected: true), "said once")
        assertConnects(chooser.decide(servers: others, linkConnected: false), to: "B", port: 9000)
        XCTAssertEqual(chooser.chosen?.name, "B")
    }

    func testWithdrawnWithNoOtherServerKeepsTryingTheLastAddress() {
        var chooser = ServerChooser(configuredHost: false)
        assertConnects(chooser.decide(servers: [server("A")], linkConnected: false), to: "A")
        guard case .stay(let reason)? = chooser.decide(servers: [], linkConnected: false) else {
            return XCTFail("expected a note")
        }
        XCTAssertTrue(reason.contains("still trying 127.0.0.1:8080"), reason)
        XCTAssertNil(chooser.decide(servers: [], linkConnected: false), "said once")
        XCTAssertNil(chooser.decide(servers: [server("A")], linkConnected: false), "back on the same address: the link is already on it")
        assertConnects(chooser.decide(servers: [server("A", port: 8081)], linkConnected: false), to: "A", port: 8081)
    }

    func testAServerThatMovesIsFollowedWhenTheLinkIsNotConnected() {
        var chooser = ServerChooser(configuredHost: false)
        assertConnects(chooser.decide(servers: [server("A")], linkConnected: false), to: "A")
        guard case .stay? = chooser.decide(servers: [server("A", "127.0.0.2")], linkConnected: true) else {
            return XCTFail("connected: stays on the address that works, and says so")
        }
        assertConnects(chooser.decide(servers: [server("A", "127.0.0.2")], linkConnected: false), to: "A", "127.0.0.2")
    }

    func testServersWithoutAnAddressAreSkipped() {
        var chooser = ServerChooser(configuredHost: false)
        let unresolved = DiscoveredServer(name: "A", host: "a.local", addresses: [], port: 1)
        assertConnects(chooser.decide(servers: [unresolved, server("B")], linkConnected: false), to: "B")
    }
}
