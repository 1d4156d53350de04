/// One resolution of a service instance as Avahi reports it: a service is
/// seen once per interface and protocol (IPv4, IPv6), and each of those
/// resolves to one address.
public struct ServiceResolution: Equatable, Sendable {
    public var host: String
    /// With the interface for link-local IPv6: `fe80::1%eth0`.
    public var address: String
    public var port: Int
    public var txt: [String: String]

    public init(host: String, address: String, port: Int, txt: [String: String] = [:]) {
        self.host = host
        self.address = address
        self.port = port
        self.txt = txt
    }
}

/// A change in the set of announced servers.
public enum DiscoveryEvent: Equatable, Sendable, CustomStringConvertible {
    case added(DiscoveredServer)
    case updated(DiscoveredServer)
    case removed(DiscoveredServer)

    public var server: DiscoveredServer {
        switch self {
        case .added(let s), .updated(let s), .removed(let s): return s
        }
    }

    /// What changed from one list of servers to another (by name): additions
    /// and changes in the order of `new`, then withdrawals in the order of `old`.
    public static func changes(from old: [DiscoveredServer], to new: [DiscoveredServer]) -> [DiscoveryEvent] {
        let before = Dictionary(old.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let names = Set(new.map(\.name))
        let addedOrChanged: [DiscoveryEvent] = new.compactMap { server in
            guard let previous = before[server.name] else { return .added(server) }
            return previous == server ? nil : .updated(server)
        }
        return addedOrChanged + old.filter { !names.contains($0.name) }.map { .removed($0) }
    }

    public var description: String {
        switch self {
        case .added(let s): return "server found: \(s)"
        case .updated(let s): return "server changed: \(s)"
        case .removed(let s): return "server withdrawn: \"\(s.name)\""
        }
    }
}

/// Folds the per-interface, per-protocol resolutions Avahi reports into one
/// `DiscoveredServer` per service name, and says what changed. Pure Swift:
/// the Avahi browser feeds it, the tests drive it directly.
public struct ServerTable {
    /// Identifies one sighting of a service: Avahi's interface index and protocol, and the name.
    public struct Key: Hashable, Sendable {
        public var interface: Int32
        public var ipProtocol: Int32
        public var name: String
        public init(interface: Int32, ipProtocol: Int32, name: String) {
            self.interface = interface
            self.ipProtocol = ipProtocol
            self.name = name
        }
    }

    private var resolutions: [Key: (resolution: ServiceResolution, sequence: Int)] = [:]
    /// When each name was first resolved: "the first server found" is the lowest.
    private var firstSeen: [String: Int] = [:]
    private var sequence = 0
    private var current: [String: DiscoveredServer] = [:]

    public init() {}

    /// Announced servers with at least one resolved address, in the order they were first found.
    public var servers: [DiscoveredServer] {
        current.values.sorted { (firstSeen[$0.name] ?? .max, $0.name) < (firstSeen[$1.name] ?? .max, $1.name) }
    }

    public func server(named name: String) -> DiscoveredServer? { current[name] }

    /// A sighting resolved (again).
    public mutating func resolved(_ key: Key, _ resolution: ServiceResolution) -> DiscoveryEvent? {
        sequence += 1
        resolutions[key] = (resolution, sequence)
        if firstSeen[key.name] == nil { firstSeen[key.name] = sequence }
        return refresh(key.name)
    }

    /// A sighting went away (withdrawn on that interface/protocol, or its resolution failed).
    public mutating func removed(_ key: Key) -> DiscoveryEvent? {
        guard resolutions.removeValue(forKey: key) != nil else { return nil }
        return refresh(key.name)
    }

    /// Everything is forgotten (the daemon went away); one `.removed` per server.
    public mutating func removeAll() -> [DiscoveryEvent] {
        let gone = servers.map { DiscoveryEvent.removed($0) }
        self = ServerTable()
        return gone
    }

    private mutating func refresh(_ name: String) -> DiscoveryEvent? {
        let sightings = resolutions.filter { $0.key.name == name }.map(\.value)
        guard let latest = sightings.max(by: { $0.sequence < $1.sequence })?.resolution else {
            firstSeen[name] = nil
            return current.removeValue(forKey: name).map { .removed($0) }
        }
        // The latest announcement names host, port and TXT (a restarted server may have moved);
        // addresses gather every sighting of that host and port.
        let addresses = sightings.map(\.resolution)
            .filter { $0.host == latest.host && $0.port == latest.port }
            .map(\.address)
        let server = DiscoveredServer(name: name, host: latest.host, addresses: AddressRank.sorted(addresses),
                                      port: latest.port, txt: latest.txt)
        let previous = current.updateValue(server, forKey: name)
        if previous == nil { return .added(server) }
        return previous == server ? nil : .updated(server)
    }
}
