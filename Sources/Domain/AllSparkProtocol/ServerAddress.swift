import Foundation

/// Where the AllSpark server is, parsed from `server.host` the way the iOS
/// app reads it: `host:port`, `[v6addr]:port`, with or without `http://`,
/// `https://`, `ws://`, `wss://` and a path. Without a scheme the client
/// tries `wss` first and falls back to `ws` (only when the server does not
/// speak TLS at all).
///
/// A link-local IPv6 address needs its interface (zone), written as `ping`
/// takes it: `[fe80::1%eth0]:8080`. `host` keeps that form; URLs carry the
/// zone as `%25eth0` (RFC 6874), the only form GLib's URI parser, and so
/// libsoup, accepts.
/// Why `server.host` (or a scanned pairing code) is not a server address.
public struct ServerAddressError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

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
        "\(scheme.rawValue)://\(urlHost):\(port)\(path)"
    }

    /// The same server over HTTP(S), for `GET /api/health`.
    public func httpURL(_ scheme: Scheme, path: String) -> String {
        "\(scheme == .wss ? "https" : "http")://\(urlHost):\(port)\(path)"
    }

    /// The host as a URL writes it: IPv6 in brackets, a zone's `%` as `%25`.
    private var urlHost: String {
        guard host.contains(":") else { return host }
        return "[\(host.replacingOccurrences(of: "%", with: "%25"))]"
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
        guard !rest.isEmpty else { throw ServerAddressError("server.host is empty (use discovery, or give host:port)") }
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
            throw ServerAddressError("server.host \"\(text)\": unknown scheme \"\(rest[..<range.lowerBound])\"; use http, https, ws or wss (or none)")
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
                throw ServerAddressError("server.host \"\(text)\": an IPv6 address needs a closing ']', e.g. [fe80::1]:8080")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            if let percent = host.firstIndex(of: "%") {
                var zone = host[host.index(after: percent)...]
                // In a URL (a scheme was given) the zone separator is written %25 (RFC 6874).
                if scheme != nil, zone.hasPrefix("25"), zone.count > 2 { zone = zone.dropFirst(2) }
                guard !zone.isEmpty, !zone.contains(where: { $0 == "%" || $0.isWhitespace }) else {
                    throw ServerAddressError("server.host \"\(text)\": after '%' give the interface of a link-local address, e.g. [fe80::1%eth0]:8080")
                }
                host = host[..<percent] + "%" + zone
            }
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ServerAddressError("server.host \"\(text)\": unexpected \"\(after)\" after the IPv6 address")
            }
        } else if rest.filter({ $0 == ":" }).count > 1 {
            throw ServerAddressError("server.host \"\(text)\": write an IPv6 address in brackets, e.g. [\(rest)]:8080")
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw ServerAddressError("server.host \"\(text)\": no host name") }
        let port: Int
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw ServerAddressError("server.host \"\(text)\": \"\(portText)\" is not a port (1…65535)")
            }
            port = p
        } else if let defaultPort {
            port = defaultPort
        } else {
            throw ServerAddressError("server.host \"\(text)\": give the port, e.g. \(host):8080")
        }
        self.init(host: String(host), port: port, path: path, explicitScheme: scheme)
    }
}
