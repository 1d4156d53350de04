import AllSparkProtocol
import RecorderCore

/// An AllSpark server announced on the network (`_allspark._tcp`), as
/// `discover --json` prints it and the auto-connect policy sees it.
public struct DiscoveredServer: Codable, Equatable, Sendable, CustomStringConvertible {
    /// The service instance name, e.g. "AllSpark Server"; unique on the network.
    public var name: String
    /// The host name the service points at, e.g. "studio.local".
    public var host: String
    /// Every address it was resolved to, best first (see `AddressRank`);
    /// a link-local IPv6 address carries its interface: `fe80::1%eth0`.
    public var addresses: [String]
    public var port: Int
    /// TXT records: `key=value` pairs (a key without `=` maps to "").
    public var txt: [String: String]

    public init(name: String, host: String, addresses: [String], port: Int, txt: [String: String] = [:]) {
        self.name = name
        self.host = host
        self.addresses = addresses
        self.port = port
        self.txt = txt
    }

    /// Where to connect: the best address and the port, no scheme (so
    /// `wss` is tried before `ws`). Nil when it has no address.
    public var serverAddress: ServerAddress? {
        addresses.first.map { ServerAddress(host: $0, port: port) }
    }

    public var description: String {
        "\"\(name)\" (\(host), \(addresses.isEmpty ? "no address" : addresses.joined(separator: ", ")), port \(port))"
    }
}

/// The order addresses are tried in: routable IPv4 first (what AllSpark
/// servers are most often reached on), then routable IPv6, then link-local
/// IPv4 and IPv6 (which only work on the interface they were seen on).
public enum AddressRank: Int, Comparable {
    case ipv4 = 0, ipv6, linkLocalIPv4, linkLocalIPv6

    public init(_ address: String) {
        let lower = address.lowercased()
        if !lower.contains(":") {
            self = lower.hasPrefix("169.254.") ? .linkLocalIPv4 : .ipv4
        } else if ["fe8", "fe9", "fea", "feb"].contains(where: lower.hasPrefix) {
            self = .linkLocalIPv6
        } else {
            self = .ipv6
        }
    }

    public static func < (a: AddressRank, b: AddressRank) -> Bool { a.rawValue < b.rawValue }

    /// Addresses without duplicates, best first, ties in text order (stable output).
    public static func sorted(_ addresses: some Sequence<String>) -> [String] {
        Set(addresses).sorted { (AddressRank($0), $0) < (AddressRank($1), $1) }
    }
}
