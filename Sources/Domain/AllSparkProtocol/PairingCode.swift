import Foundation

/// The text of a pairing QR code, read the way the iOS app reads it: the
/// server's page shows `<address>:<port>`, some pages `ws://<address>:<port>`;
/// a scheme (`ws`, `wss`, `http`, `https`) and one trailing `/` are allowed,
/// anything else is refused. Anyone can hold a code up to a camera, so the
/// text is treated as hostile: only a plain host name, IPv4 address or
/// bracketed IPv6 address with a port passes.
public struct PairingCode: Equatable, Sendable {
    /// The server, as parsed.
    public let address: ServerAddress
    /// What to store as `server.host`: `host:port`, with the code's scheme
    /// kept when it named one (so the link tries only that scheme).
    public let host: String

    /// The schemes to try, in order, as the iOS app does: a code's scheme is a hint, not a rule.
    /// Servers show `ws://` even when they run TLS, so `ws://`, `http://` and bare codes try wss
    /// first and ws second; a `wss://` or `https://` code tries only wss (never a downgrade).
    public var schemesToTry: [ServerAddress.Scheme] { address.explicitScheme == .wss ? [.wss] : [.wss, .ws] }

    /// Longest text considered (a host name is at most 253 characters).
    static let maximumLength = 300

    /// Validates `text`; the error says what was wrong (without repeating the text).
    public init(_ text: String) throws {
        guard text.unicodeScalars.count <= Self.maximumLength else {
            throw ServerAddressError("the code is too long to be a server address")
        }
        // A code may end with a newline (some generators add one); nothing else around it.
        var rest = Substring(text)
        while let last = rest.last, last == "\n" || last == "\r" || last == " " { rest = rest.dropLast() }
        guard !rest.isEmpty else { throw ServerAddressError("the code is empty") }
        guard rest.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ServerAddressError("the code holds spaces, control or non-ASCII characters")
        }
        var scheme = ""
        if let range = rest.range(of: "://") {
            scheme = rest[..<range.upperBound].lowercased()
            guard ["ws://", "wss://", "http://", "https://"].contains(scheme) else {
                throw ServerAddressError("the code names a scheme other than ws, wss, http or https")
            }
            rest = rest[range.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains(where: { "/?#@\\".contains($0) }) else {
            throw ServerAddressError("the code holds a path, query or user name, not just host:port")
        }
        // The host part (before the port) must be a host name, IPv4 or bracketed IPv6 address.
        let hostPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw ServerAddressError("the code's IPv6 address has no closing ']'") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            guard !hostPart.isEmpty, hostPart.allSatisfy({ $0.isHexDigit || ":.%-_".contains($0) || $0.isLetter || $0.isNumber }) else {
                throw ServerAddressError("the code's IPv6 address holds characters an address cannot")
            }
        } else {
            hostPart = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let labels = hostPart.split(separator: ".", omittingEmptySubsequences: false)
            guard !hostPart.isEmpty, hostPart.count <= 253,
                  labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && !$0.hasPrefix("-") && !$0.hasSuffix("-")
                                      && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }) else {
                throw ServerAddressError("the code's host is not a host name or IP address")
            }
        }
        let address: ServerAddress
        do {
            address = try ServerAddress(parsing: scheme + rest)
        } catch {
            throw ServerAddressError("the code is not host:port")
        }
        // Without a scheme ServerAddress insists on a port; with one it would default it: a pairing code always names it.
        guard rest.last?.isNumber == true, rest.contains(":") else { throw ServerAddressError("the code gives no port") }
        self.address = address
        self.host = Self.host(address, scheme: address.explicitScheme)
    }

    /// `server.host` for this server with `scheme` (the one its health check answered on), so the
    /// link goes straight to it and never tries plain ws with a server that has TLS.
    public func host(with scheme: ServerAddress.Scheme) -> String { Self.host(address, scheme: scheme) }

    private static func host(_ address: ServerAddress, scheme: ServerAddress.Scheme?) -> String {
        let hostText = address.host.contains(":") ? "[\(address.host)]" : address.host
        return "\(scheme.map { "\($0.rawValue)://" } ?? "")\(hostText):\(address.port)"
    }
}

extension PairingCode {
    /// True when a `GET /api/health` body is the server's "all is well":
    /// a JSON object whose `status` is "ok" (other keys vary by version).
    public static func healthSaysOK(_ body: String) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return false }
        return object["status"] as? String == "ok"
    }
}
