import CAvahi
import Foundation
import GLibSupport
import Logging

/// Browses for AllSpark servers (`_allspark._tcp` in `local`) through
/// avahi-daemon: avahi-client talks to the daemon over the D-Bus system bus,
/// and avahi-glib runs it on the GLib main loop. Each sighting (one per
/// interface and IP protocol) is resolved to host, address, port and TXT;
/// `ServerTable` folds them into servers and says what changed.
///
/// No daemon (or no D-Bus) is not an error for the recorder: the browser
/// says so once, waits, and browses again when the daemon is back. With
/// D-Bus up it waits for the daemon's name to appear (AVAHI_CLIENT_NO_FAIL:
/// no polling); without D-Bus it retries with backoff (1, 2, 4 … 30 s).
///
/// This file is the only place that touches Avahi's C API.
///
/// Threading: create, use and release on the main-loop thread (the thread
/// running `MainLoop`); every Avahi callback arrives there. Creating the
/// client, the browser and each resolver waits on that thread for the
/// daemon's D-Bus reply: a millisecond on a local bus, but a hung (not dead)
/// daemon would hold the main loop up to D-Bus's reply timeout (25 s).
public final class ServerBrowser {
    public enum DaemonStatus: Equatable, CustomStringConvertible {
        /// `start` not called yet.
        case stopped
        /// Connected to avahi-daemon and browsing.
        case running
        /// avahi-daemon cannot be used now; why. Discovery waits for it.
        case unavailable(String)

        public var description: String {
            switch self {
            case .stopped: return "stopped"
            case .running: return "running"
            case .unavailable(let why): return "unavailable (\(why))"
            }
        }
    }

    public let serviceType: String
    public let domain: String
    public private(set) var daemonStatus: DaemonStatus = .stopped
    /// Each daemon status change, after it is logged.
    public var onDaemonStatusChange: ((DaemonStatus) -> Void)?
    /// Each server found, changed or withdrawn (also when the daemon goes away: then every server is withdrawn).
    public var onEvent: ((DiscoveryEvent) -> Void)?

    /// The servers announced now, first found first.
    public var servers: [DiscoveredServer] { table.servers }

    private let logger: Logger
    private let maximumBackoff: Double
    private var table = ServerTable()
    // Avahi objects (opaque C pointers), all owned here and freed in `dropClient`.
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var browser: OpaquePointer?
    private var sightings: [ServerTable.Key: Sighting] = [:]
    private var reconnectTimer: MainLoop.Source?
    private var reconnectDelay = 1.0
    private var running = false

    /// A service instance on one interface and protocol, and its resolver.
    private struct Sighting {
        var resolver: OpaquePointer?
        var retry: MainLoop.Source?
        var retryDelay = 2.0
        var warned = false
    }

    public init(serviceType: String = "_allspark._tcp", domain: String = "local", maximumBackoff: Double = 30,
                logger: Logger = Logger(label: "allspark.discovery")) {
        self.serviceType = serviceType
        self.domain = domain
        self.maximumBackoff = maximumBackoff
        self.logger = logger
        // NULL: the default main context, the one `MainLoop` runs.
        poll = avahi_glib_poll_new(nil, G_PRIORITY_DEFAULT)
    }

    deinit {
        stop()
        avahi_glib_poll_free(poll)
    }

    /// Connects to avahi-daemon and browses; returns at once. `daemonStatus`
    /// already tells whether the daemon was reachable.
    public func start() {
        guard !running else { return }
        running = true
        connect()
    }

    /// Stops browsing and lets go of the daemon (no events are sent for it).
    public func stop() {
        guard running else { return }
        running = false
        reconnectTimer?.cancel()
        reconnectTimer = nil
        dropClient()
        _ = table.removeAll()
        daemonStatus = .stopped
    }

    // MARK: - Client lifecycle

    private var unretainedSelf: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func connect() {
        var error: Int32 = 0
        // The state callback may run inside avahi_client_new (with the new client as its argument).
        let newClient = avahi_client_new(avahi_glib_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { client, state, data in
            guard let client, let data else { return }
            Unmanaged<ServerBrowser>.fromOpaque(data).takeUnretainedValue().clientChanged(client, state)
        }, unretainedSelf, &error)
        guard let newClient else {
            // avahi_client_new freed its half-made client, and with it whatever the state callback made from it.
            client = nil
            browser = nil
            for sighting in sightings.values { sighting.retry?.cancel() }
            sightings = [:]
            // Only when the D-Bus system bus itself cannot be reached; with NO_FAIL a missing daemon is a state.
            setStatus(.unavailable("cannot reach avahi-daemon: the D-Bus system bus at \(Self.systemBusAddress) does not answer (\(Self.message(error)))"))
            scheduleReconnect()
            return
        }
        client = newClient
    }

    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        guard running else { return }
        // The first call comes from inside avahi_client_new, before it has returned the client.
        self.client = client
        switch state {
        case AVAHI_CLIENT_S_RUNNING, AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            if browser == nil { browse(client) }
        case AVAHI_CLIENT_CONNECTING:
            setStatus(.unavailable("avahi-daemon is not running (not on the D-Bus system bus \(Self.systemBusAddress))"))
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(client)
            let why = error == Int32(AVAHI_ERR_DISCONNECTED)
                ? "lost the connection to avahi-daemon (it stopped or restarted)"
                : "avahi-daemon failed: \(Self.message(error))"
            forgetServers()
            setStatus(.unavailable(why))
            // Not from inside Avahi's own callback: the client is freed and made anew from the main loop.
            scheduleReconnect(after: 0)
        default:
            break
        }
    }

    private func scheduleReconnect(after delay: Double? = nil) {
        guard running else { return }
        reconnectTimer?.cancel()
        let wait = delay ?? reconnectDelay
        if delay == nil { reconnectDelay = min(maximumBackoff, reconnectDelay * 2) }
        logger.debug("reconnecting to avahi-daemon in \(wait) s")
        reconnectTimer = MainLoop.after(wait) { [weak self] in
            guard let self, self.running else { return }
            self.reconnectTimer = nil
            self.dropClient()
            self.connect()
        }
    }

    /// Frees the client and everything made from it, without events.
    private func dropClient() {
        for (_, sighting) in sightings {
            sighting.retry?.cancel()
            if let resolver = sighting.resolver { avahi_service_resolver_free(resolver) }
        }
        sightings = [:]
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        if let client { avahi_client_free(client) }
        client = nil
    }

    /// The daemon is gone: what it told us is no longer known.
    private func forgetServers() {
        for event in table.removeAll() { report(event) }
    }

    private func setStatus(_ status: DaemonStatus) {
        let old = daemonStatus
        daemonStatus = status
        guard status != old else { return }
        switch (old, status) {
        case (_, .running):
            logger.notice("avahi-daemon reached: browsing \(serviceType) in \(domain)")
        case (.unavailable, .unavailable(let why)):
            logger.debug("avahi-daemon still unavailable: \(why)")
        case (_, .unavailable(let why)):
            logger.warning("\(why); server discovery waits for avahi-daemon and resumes when it is back")
        case (_, .stopped):
            break
        }
        onDaemonStatusChange?(status)
    }

    // MARK: - Browsing

    private func browse(_ client: OpaquePointer) {
        browser = avahi_service_browser_new(client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), serviceType, domain,
                                            AvahiLookupFlags(0), { _, interface, ipProtocol, event, name, _, _, _, data in
            guard let data else { return }
            Unmanaged<ServerBrowser>.fromOpaque(data).takeUnretainedValue()
                .browserEvent(event, interface: interface, ipProtocol: ipProtocol, name: name.map { String(cString: $0) })
        }, unretainedSelf)
        guard browser != nil else {
            setStatus(.unavailable("avahi-daemon refused to browse \(serviceType): \(Self.message(avahi_client_errno(client)))"))
            scheduleReconnect()
            return
        }
        // Backoff starts again only once browsing works (a daemon that refuses every browser is not retried each second).
        reconnectDelay = 1
        setStatus(.running)
    }

    private func browserEvent(_ event: AvahiBrowserEvent, interface: AvahiIfIndex, ipProtocol: AvahiProtocol, name: String?) {
        guard running else { return }
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name else { return }
            let key = ServerTable.Key(interface: interface, ipProtocol: ipProtocol, name: name)
            logger.debug("sighted \"\(name)\" on \(Self.interfaceName(interface))/\(Self.protocolName(ipProtocol))")
            if sightings[key] == nil {
                sightings[key] = Sighting()
                resolve(key)
            }
        case AVAHI_BROWSER_REMOVE:
            guard let name else { return }
            let key = ServerTable.Key(interface: interface, ipProtocol: ipProtocol, name: name)
            logger.debug("\"\(name)\" withdrawn on \(Self.interfaceName(interface))/\(Self.protocolName(ipProtocol))")
            if let sighting = sightings.removeValue(forKey: key) {
                sighting.retry?.cancel()
                if let resolver = sighting.resolver { avahi_service_resolver_free(resolver) }
            }
            if let change = table.removed(key) { report(change) }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            logger.debug("browse: all for now (\(sightings.count) sightings)")
        case AVAHI_BROWSER_FAILURE:
            let error = client.map { avahi_client_errno($0) } ?? 0
            logger.error("browsing \(serviceType) failed: \(Self.message(error)); starting over")
            forgetServers()
            setStatus(.unavailable("browsing failed: \(Self.message(error))"))
            scheduleReconnect()
        default:
            break
        }
    }

    private func resolve(_ key: ServerTable.Key) {
        guard let client, sightings[key] != nil else { return }
        // aprotocol = the protocol it was seen on: the IPv4 sighting gives the IPv4 address, the IPv6 one the IPv6.
        let resolver = avahi_service_resolver_new(client, key.interface, key.ipProtocol, key.name, serviceType, domain,
                                                  key.ipProtocol, AvahiLookupFlags(0), { resolver, interface, _, event, _, _, _, host, address, port, txt, _, data in
            guard let resolver, let data else { return }
            let owner = Unmanaged<ServerBrowser>.fromOpaque(data).takeUnretainedValue()
            if event == AVAHI_RESOLVER_FOUND, let host, let address {
                owner.resolved(resolver, ServiceResolution(host: String(cString: host), address: ServerBrowser.text(address, interface: interface),
                                                           port: Int(port), txt: ServerBrowser.dictionary(txt)))
            } else {
                owner.resolved(resolver, nil)
            }
        }, unretainedSelf)
        guard let resolver else {
            resolveFailed(key, why: Self.message(avahi_client_errno(client)))
            return
        }
        sightings[key]?.resolver = resolver
    }

    /// A resolver's answer: a resolution, or nil when it failed.
    private func resolved(_ resolver: OpaquePointer, _ resolution: ServiceResolution?) {
        guard running, let key = sightings.first(where: { $0.value.resolver == resolver })?.key else { return }
        guard let resolution else {
            let why = client.map { Self.message(avahi_client_errno($0)) } ?? "no daemon"
            // A failed resolver is done: free it (Avahi allows it inside its callback) and try again later.
            avahi_service_resolver_free(resolver)
            sightings[key]?.resolver = nil
            if let change = table.removed(key) { report(change) }
            resolveFailed(key, why: why)
            return
        }
        // Resolvers stay alive: Avahi reports the service again when its records change.
        sightings[key]?.retryDelay = 2
        sightings[key]?.warned = false
        if let change = table.resolved(key, resolution) { report(change) }
    }

    private func resolveFailed(_ key: ServerTable.Key, why: String) {
        guard var sighting = sightings[key] else { return }
        let message = "cannot resolve \"\(key.name)\" on \(Self.interfaceName(key.interface))/\(Self.protocolName(key.ipProtocol)): \(why); retrying in \(Int(sighting.retryDelay)) s"
        if sighting.warned { logger.debug("\(message)") } else { logger.warning("\(message)") }
        sighting.warned = true
        sighting.retry = MainLoop.after(sighting.retryDelay) { [weak self] in
            guard let self, self.running else { return }
            self.sightings[key]?.retry = nil
            self.resolve(key)
        }
        sighting.retryDelay = min(maximumBackoff * 2, sighting.retryDelay * 2)
        sightings[key] = sighting
    }

    private func report(_ event: DiscoveryEvent) {
        logger.debug("\(event)")
        onEvent?(event)
    }

    // MARK: - C values to Swift

    private static func message(_ error: Int32) -> String { String(cString: avahi_strerror(error)) }

    /// Where libdbus looks for the system bus.
    private static var systemBusAddress: String {
        ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "unix:path=/var/run/dbus/system_bus_socket"
    }

    private static func protocolName(_ ipProtocol: AvahiProtocol) -> String {
        ipProtocol == AvahiProtocol(AVAHI_PROTO_INET) ? "IPv4" : ipProtocol == AvahiProtocol(AVAHI_PROTO_INET6) ? "IPv6" : "any"
    }

    /// The interface's name in this network namespace, or its index when it has none here.
    static func interfaceName(_ index: AvahiIfIndex) -> String {
        guard index > 0 else { return "any" }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        return if_indextoname(UInt32(index), &buffer) != nil ? String(cString: buffer) : String(index)
    }

    /// The address as text; link-local IPv6 with its interface (`fe80::1%eth0`), without which it cannot be used.
    private static func text(_ address: UnsafePointer<AvahiAddress>, interface: AvahiIfIndex) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        avahi_address_snprint(&buffer, buffer.count, address)
        let text = String(cString: buffer)
        guard address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6) else { return text }
        let bytes = address.pointee.data.ipv6.address
        guard bytes.0 == 0xfe, bytes.1 & 0xc0 == 0x80 else { return text }
        return "\(text)%\(interfaceName(interface))"
    }

    /// TXT records as key → value (values are bytes on the wire; shown as UTF-8, invalid bytes replaced).
    private static func dictionary(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        var result: [String: String] = [:]
        var item = list
        while let current = item {
            var key: UnsafeMutablePointer<CChar>?
            var value: UnsafeMutablePointer<CChar>?
            var size = 0
            if avahi_string_list_get_pair(current, &key, &value, &size) == 0, let key {
                result[String(cString: key)] = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: size), as: UTF8.self) } ?? ""
            }
            avahi_free(key)
            avahi_free(value)
            item = avahi_string_list_get_next(current)
        }
        return result
    }
}
