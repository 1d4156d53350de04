import AllSparkProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging

/// The server's communications policy, acted on where Linux can: the iOS
/// app can only warn, a Linux box can switch radios off with rfkill.
///
/// `apply(_:)` always logs the policy and which radios present on the box it
/// forbids. With `enforce` (`server.enforce_communications_policy`, off by
/// default) it soft-blocks them (writes 1 to `rfkillN/soft`), except a radio
/// of the kind the server connection itself goes out by: cutting the link
/// that carries the policy would leave the box unreachable, so that is a
/// warning instead. A radio it blocked is unblocked when a later policy
/// allows it again; radios someone else blocked are never unblocked.
/// Ethernet, USB, AirDrop and satellite have no rfkill switch: a policy
/// forbidding them is logged as not enforceable.
///
/// The rfkill tree (`/sys/class/rfkill/rfkillN/{type,name,soft}`) and the
/// network tree (`/sys/class/net`) are parameters: tests point them at fake
/// trees in a temporary folder.
///
/// Threading: main-loop thread (sysfs reads and writes are immediate).
public final class CommunicationsPolicyEnforcer {
    public typealias Medium = CommunicationsPolicy.Medium

    /// One rfkill switch.
    public struct Radio: Equatable {
        /// The switch's folder name, e.g. "rfkill0".
        public var id: String
        /// The kernel's type: wlan, bluetooth, wwan, nfc, ultrawideband, wimax, gps, fm …
        public var type: String
        public var name: String
        public var softBlocked: Bool
        /// What the policy calls it (nil: a kind the policy does not name, e.g. gps).
        public var medium: Medium? { Self.media[type] }

        static let media: [String: Medium] = [
            "wlan": .wifi, "bluetooth": .bluetooth, "wwan": .cellular, "wimax": .cellular,
            "nfc": .nfc, "uwb": .uwb, "ultrawideband": .uwb,
        ]
    }

    private let enforce: Bool
    private let rfkillRoot: URL
    private let logger: Logger
    /// The medium the server connection goes out by now (nil: unknown, or loopback).
    private let serverMedium: () -> Medium?
    /// Switches this recorder blocked (only these are ever unblocked).
    private(set) var blockedByUs: Set<String> = []

    public init(enforce: Bool, rfkillRoot: String = "/sys/class/rfkill", logger: Logger,
                serverMedium: @escaping () -> Medium?) {
        self.enforce = enforce
        self.rfkillRoot = URL(fileURLWithPath: rfkillRoot)
        self.logger = logger
        self.serverMedium = serverMedium
    }

    /// The rfkill switches present, in name order (none when there is no rfkill tree).
    public func radios() -> [Radio] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: rfkillRoot.path)) ?? []
        return names.filter { $0.hasPrefix("rfkill") }.sorted().compactMap { id in
            let folder = rfkillRoot.appendingPathComponent(id)
            guard let type = read(folder, "type") else { return nil }
            return Radio(id: id, type: type, name: read(folder, "name") ?? "", softBlocked: read(folder, "soft") == "1")
        }
    }

    /// Logs `policy`, what it forbids that is present, and (with `enforce`) blocks it.
    public func apply(_ policy: CommunicationsPolicy) {
        logger.notice("communications policy from the server: \(policy.summary.isEmpty ? "nothing stated" : policy.summary)")
        let radios = radios()
        let forbidden = Set(policy.forbidden)
        let inUse = serverMedium()
        for medium in policy.forbidden where !Radio.media.values.contains(medium) {
            logger.notice("communications policy forbids \(medium.rawValue): Linux has no rfkill switch for it; not enforced")
        }
        for radio in radios {
            guard let medium = radio.medium else { continue }
            let label = "\(medium.rawValue) radio \(loggable(radio.name)) (\(radio.id), \(loggable(radio.type)))"
            if forbidden.contains(medium) {
                if radio.softBlocked {
                    logger.notice("communications policy forbids \(label): already blocked")
                } else if !enforce {
                    logger.notice("communications policy forbids \(label), present and on; not enforced (server.enforce_communications_policy = false)")
                } else if medium == inUse {
                    logger.warning("communications policy forbids \(label), but the server connection goes out by \(medium.rawValue): not blocked (blocking it would cut the link)")
                } else if write("1", to: radio) {
                    blockedByUs.insert(radio.id)
                    logger.notice("communications policy: blocked \(label)")
                }
            } else if policy.allowed[medium] == true, radio.softBlocked, blockedByUs.contains(radio.id), enforce {
                if write("0", to: radio) {
                    blockedByUs.remove(radio.id)
                    logger.notice("communications policy allows \(label) again: unblocked")
                }
            }
        }
    }

    private func read(_ folder: URL, _ name: String) -> String? {
        (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func write(_ value: String, to radio: Radio) -> Bool {
        let path = rfkillRoot.appendingPathComponent(radio.id).appendingPathComponent("soft").path
        // sysfs attributes are written in place (no temporary file, no rename).
        guard let handle = FileHandle(forWritingAtPath: path) else {
            logger.warning("communications policy: cannot write \(path) (\(String(cString: strerror(errno)))); \(radio.id) left as it is")
            return false
        }
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data(value.utf8))
            return true
        } catch {
            logger.warning("communications policy: cannot write \(path) (\(error)); \(radio.id) left as it is")
            return false
        }
    }
}

/// Which medium a network interface is, from its sysfs entry.
public enum NetworkMedium {
    /// The interface that holds `address` (this side's address on a connection), if any.
    public static func interface(holding address: String) -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            guard let socketAddress = current.pointee.ifa_addr else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            let length = socklen_t(socketAddress.pointee.sa_family == sa_family_t(AF_INET6)
                                   ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
            guard [sa_family_t(AF_INET), sa_family_t(AF_INET6)].contains(socketAddress.pointee.sa_family),
                  getnameinfo(socketAddress, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            // IPv6 link-local addresses come with "%interface".
            let text = String(cString: host).split(separator: "%").first.map(String.init) ?? ""
            if text == address.split(separator: "%").first.map(String.init) {
                return String(cString: current.pointee.ifa_name)
            }
        }
        return nil
    }

    /// wifi for a wireless interface, cellular for a WWAN one, bluetooth for a Bluetooth PAN,
    /// nil for loopback, ethernet otherwise.
    public static func of(interface name: String, netRoot: String = "/sys/class/net") -> CommunicationsPolicy.Medium? {
        let folder = URL(fileURLWithPath: netRoot).appendingPathComponent(name)
        let manager = FileManager.default
        if name == "lo" { return nil }
        if manager.fileExists(atPath: folder.appendingPathComponent("wireless").path)
            || manager.fileExists(atPath: folder.appendingPathComponent("phy80211").path) { return .wifi }
        let uevent = (try? String(contentsOf: folder.appendingPathComponent("uevent"), encoding: .utf8)) ?? ""
        let type = uevent.split(separator: "\n").first { $0.hasPrefix("DEVTYPE=") }.map { String($0.dropFirst(8)) }
        switch type {
        case "wwan": return .cellular
        case "bluetooth": return .bluetooth
        default: return name.hasPrefix("ww") ? .cellular : .ethernet
        }
    }
}
