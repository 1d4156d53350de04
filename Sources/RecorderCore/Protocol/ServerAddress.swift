import Foundation

/// Where the AllSpark server is, parsed from `server.host` the way the iOS
/// app reads it: `host:port`, `[v6addr]:port`, with or without `http://`,
/// `https://`, `ws://`, `wss://` and a path. Without a scheme the client
/// tries `wss` first and falls back to `ws` (only when the server does not
/// speak TLS at all).
public struct ServerAddress: Equatable, Sendable, CustomStringConvertible {
    public enum Scheme: String, Sendable { case ws, wss }

    public var host: String
    public var port: Int
    public var path: String
    /// The scheme the user wrote (http → ws, https → wss), nil when none.
    public var explicitScheme: Scheme?

    /// Schemes to try, in order.
    public var candidates: [Scheme] { explicitScheme.map { [$0] } ?? [.wss, .ws] }

    public func url(_ scheme: Scheme) -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme.rawValue)://\(h):\(port)\(path)"
    }

    /// The same server over HTTP(S), for `GET /api/health`.
    public func httpURL(_ scheme: Scheme, path: String) -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "\(scheme == .wss ? "https" : "http")://\(h):\(port)\(path)"
    }

    public var description: String { "\(explicitScheme.map { "\($0.rawValue)://" } ?? "")\(host.contains(":") ? "[\(host)]" : host):\(port)\(path)" }

    public init(host: String, port: Int, path: String = "/", explicitScheme: Scheme? = nil) {
        self.host = host
        self.port = port
        self.path = path
        self.explicitScheme = explicitScheme
    }

    /// Parses `server.host`; errors say what was expected.
    public init(parsing text: String) throws {
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard !rest.isEmpty else { throw ConfigError("server.host is empty (use discovery, or give host:port)") }
        var scheme: Scheme?
        var defaultPort: Int?
        for (prefix, s, port) in [("https://", Scheme.wss, 443), ("wss://", .wss, 443), ("http://", .ws, 80), ("ws://", .ws, 80)]
        where rest.lowercased().hasPrefix(prefix) {
            scheme = s
            defaultPort = port
            rest = rest.dropFirst(prefix.count)
            break
        }
        if scheme == nil, let range = rest.range(of: "://") {
            throw ConfigError("server.host \"\(text)\": unknown scheme \"\(rest[..<range.lowerBound])\"; use http, https, ws or wss (or none)")
        }
        var path = "/"
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw ConfigError("server.host \"\(text)\": an IPv6 address needs a closing ']', e.g. [fe80::1]:8080")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ConfigError("server.host \"\(text)\": unexpected \"\(after)\" after the IPv6 address")
            }
        } else if rest.filter({ $0 == ":" }).count > 1 {
            throw ConfigError("server.host \"\(text)\": write an IPv6 address in brackets, e.g. [\(rest)]:8080")
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw ConfigError("server.host \"\(text)\": no host name") }
        let port: Int
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw ConfigError("server.host \"\(text)\": \"\(portText)\" is not a port (1…65535)")
            }
            port = p
        } else if let defaultPort {
            port = defaultPort
        } else {
            throw ConfigError("server.host \"\(text)\": give the port, e.g. \(host):8080")
        }
        self.init(host: String(host), port: port, path: path, explicitScheme: scheme)
    }
}
