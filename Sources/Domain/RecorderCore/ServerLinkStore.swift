import Foundation
import Storage

/// The server host, `verify_tls` and `discovery` last chosen in the console, kept in the
/// storage folder (`server-link.json`) so that the choice outlives a
/// restart. Like `ServerSettingsStore`, the user's config file is never
/// rewritten: the saved values are laid over `[server]` at start and on SIGHUP.
///
/// An empty host means what an empty `server.host` means in the file:
/// with `server.discovery = true` the recorder uses the server discovery
/// picks, without it the recorder runs without a server.
public struct ServerLinkStore {
    public struct Saved: Codable, Equatable {
        public var host: String
        public var verifyTLS: Bool
        /// nil in a file kept before the console could switch discovery: the config's applies.
        public var discovery: Bool?
        /// Who set them (e.g. "the console from 192.168.1.20"), and when (epoch s), for the log.
        public var by: String
        public var savedAt: Double
    }

    public static let fileName = StorageLayout.serverLinkFileName
    private let file: KeptFile<Saved>
    public var url: URL { file.url }

    public init(storageDirectory: String) {
        file = KeptFile(storageDirectory: storageDirectory, name: Self.fileName)
    }

    /// The saved choice; nil when none was saved or the file is unreadable
    /// (a damaged file must not stop the recorder: the config file applies).
    public func load() -> Saved? { file.load() }

    public func save(host: String, verifyTLS: Bool, discovery: Bool, by: String, at time: Double = Date().timeIntervalSince1970) throws {
        try file.save(Saved(host: host, verifyTLS: verifyTLS, discovery: discovery, by: by, savedAt: time))
    }

    /// `config` with the saved host, verify_tls and discovery laid over its `[server]`.
    public func applied(to config: RecorderConfig) -> RecorderConfig {
        guard let saved = load() else { return config }
        var config = config
        config.server.host = saved.host
        config.server.verifyTLS = saved.verifyTLS
        if let discovery = saved.discovery { config.server.discovery = discovery }
        return config
    }
}
