import AllSparkProtocol
import RecorderCore

/// Which discovered server the recorder talks to. Pure policy: it is told
/// the announced servers (first found first) and whether the link is
/// connected, and answers what to do; the caller does it and logs it.
///
/// - A configured `server.host` wins: the chooser never moves the link.
/// - Otherwise the first server found is used.
/// - The chosen server stays while it is announced; if it comes back on a
///   new address or port, the link follows when it is not connected.
/// - When it is withdrawn, the link stays while still connected (the
///   server may just be restarting its announcement); once the link is not
///   connected, the chooser moves to the first other announced server, or,
///   with none, keeps the link trying the last known address.
public struct ServerChooser {
    public enum Decision: Equatable, CustomStringConvertible {
        /// Point the link at this server.
        case connect(ServerAddress, name: String, reason: String)
        /// Nothing to do, but worth one log line (said once per situation).
        case stay(reason: String)

        public var description: String {
            switch self {
            case .connect(let address, let name, let reason): return "connecting to \"\(name)\" at \(address): \(reason)"
            case .stay(let reason): return reason
            }
        }
    }

    /// The name and address of the server the link was pointed at; nil before the first.
    public private(set) var chosen: (name: String, address: ServerAddress)?
    private let configured: Bool
    private var lastNote: String?

    /// `configuredHost`: true when `server.host` is set (discovery then only reports).
    public init(configuredHost: Bool) {
        configured = configuredHost
    }

    public mutating func decide(servers: [DiscoveredServer], linkConnected: Bool) -> Decision? {
        guard !configured else { return nil }
        let usable = servers.compactMap { server in server.serverAddress.map { (server.name, $0) } }
        guard let chosen else {
            guard let (name, address) = usable.first else { return nil }
            return choose(name, address, reason: "the first AllSpark server found")
        }
        if let (_, address) = usable.first(where: { $0.0 == chosen.name }) {
            guard address != chosen.address else { return note(nil) }
            if linkConnected {
                return note("\"\(chosen.name)\" now announces \(address); staying on \(chosen.address) while it is connected")
            }
            return choose(chosen.name, address, reason: "it now announces this address")
        }
        if linkConnected {
            return note("\"\(chosen.name)\" is no longer announced; staying while its connection lasts")
        }
        if let (name, address) = usable.first {
            return choose(name, address, reason: "\"\(chosen.name)\" is no longer announced and not reachable")
        }
        return note("\"\(chosen.name)\" is no longer announced and no other server is; still trying \(chosen.address)")
    }

    private mutating func choose(_ name: String, _ address: ServerAddress, reason: String) -> Decision {
        chosen = (name, address)
        lastNote = nil
        return .connect(address, name: name, reason: reason)
    }

    /// Says a situation once, not on every call while it lasts.
    private mutating func note(_ text: String?) -> Decision? {
        defer { lastNote = text }
        guard let text, text != lastNote else { return nil }
        return .stay(reason: text)
    }
}
