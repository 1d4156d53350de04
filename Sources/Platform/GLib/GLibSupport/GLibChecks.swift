import CGLib
import Foundation

/// GLib's URI parser (`g_uri_parse`, strict), the one libsoup reads URLs
/// with: to check that a URL handed to libsoup survives it.
public enum GLibURI {
    public struct ParseError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The host GLib reads from `uri` (a link-local IPv6 host with its zone: `fe80::1%eth0`).
    public static func host(of uri: String) throws -> String? {
        var error: UnsafeMutablePointer<GError>?
        guard let parsed = g_uri_parse(uri, G_URI_FLAGS_NONE, &error) else {
            defer { if let error { g_error_free(error) } }
            throw ParseError(description: error.map { String(cString: $0.pointee.message) } ?? "cannot parse \(uri)")
        }
        defer { g_uri_unref(parsed) }
        return g_uri_get_host(parsed).map { String(cString: $0) }
    }
}

/// Collects the GLib criticals and warnings logged (by any library on
/// GLib: libsoup's `g_return_if_fail` among them) while it is installed,
/// in place of GLib's default log handler. One at a time per process.
public final class GLibWarnings {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var collected: [String] = []
    private let previous: GLogFunc?

    public init() {
        Self.lock.withLock { Self.collected = [] }
        previous = g_log_set_default_handler({ domain, level, message, _ in
            let serious = level.rawValue & (G_LOG_LEVEL_CRITICAL.rawValue | G_LOG_LEVEL_WARNING.rawValue) != 0
            guard serious else { return }
            let text = "\(domain.map { String(cString: $0) } ?? ""): \(message.map { String(cString: $0) } ?? "")"
            GLibWarnings.lock.withLock { GLibWarnings.collected.append(text) }
        }, nil)
    }

    /// What was logged so far, `domain: message` each.
    public var messages: [String] { Self.lock.withLock { Self.collected } }

    /// Puts the previous handler back.
    public func stop() { g_log_set_default_handler(previous, nil) }
}
