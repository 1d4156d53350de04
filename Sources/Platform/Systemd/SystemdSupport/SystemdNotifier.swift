#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// sd_notify(3): tells systemd how a `Type=notify` service is (`READY=1`,
/// `WATCHDOG=1`, `STATUS=…`, `STOPPING=1`).
///
/// The protocol is one datagram of `KEY=value` lines to the unix socket
/// named by `NOTIFY_SOCKET`, so it is written here directly with a few
/// socket calls instead of linking libsystemd: no C module, no runtime
/// dependency of the package on libsystemd0, and nothing to do at all when
/// the service does not run under systemd (no `NOTIFY_SOCKET`).
///
/// Threading: used from the main loop only (the service that owns it).
public final class SystemdNotifier {
    /// Seconds within which systemd expects `WATCHDOG=1` (`WATCHDOG_USEC`);
    /// nil when the unit has no `WatchdogSec=` or the watchdog is meant for another process.
    public let watchdogTimeout: Double?
    /// The socket path as given in `NOTIFY_SOCKET` (for messages).
    public let socketPath: String
    private let fd: Int32
    private var address = sockaddr_un()
    private let addressLength: socklen_t

    public struct Unusable: Error, CustomStringConvertible {
        public let description: String
    }

    /// The notifier systemd asked for in `environment`; nil when not run by
    /// systemd as a notify service, or (logged by the caller through the
    /// error) when the socket cannot be used.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SystemdNotifier? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        var watchdog: Double?
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            // WATCHDOG_PID names the process the watchdog is for; another process's is not ours.
            let pid = environment["WATCHDOG_PID"].flatMap(Int32.init)
            if pid == nil || pid == getpid() { watchdog = Double(usec) / 1_000_000 }
        }
        return try SystemdNotifier(socketPath: path, watchdogTimeout: watchdog)
    }

    public init(socketPath: String, watchdogTimeout: Double?) throws {
        self.socketPath = socketPath
        self.watchdogTimeout = watchdogTimeout
        // A leading "@" names a socket in the abstract namespace (a leading NUL byte).
        var bytes = Array(socketPath.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity, socketPath.hasPrefix("/") || abstract else {
            throw Unusable(description: "NOTIFY_SOCKET=\(socketPath) is not an absolute socket path or @name")
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: bytes)
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        addressLength = socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1))
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw Unusable(description: "cannot open a socket for NOTIFY_SOCKET: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    /// Sends `fields` as one message (`READY=1`, `STATUS=…`); false if
    /// systemd could not be told (errno says why; the caller decides whether that matters).
    /// Never blocks: the socket's queue is short (ten datagrams by default), and a main loop
    /// waiting on a busy systemd would stop recording; a message with no room is dropped.
    @discardableResult
    public func notify(_ fields: [String]) -> Bool {
        // A STATUS line must not carry a newline: it would start another field.
        let message = fields.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n")
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), socketAddress, addressLength)
            }
        }
        return sent == bytes.count
    }
}
