import AvahiSupport
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
/// Avahi's C API is behind `AvahiSupport`; this is the browsing policy.
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
    // Avahi objects, all owned here and closed in `dropClient`.
    private var client: AvahiClient?
    private var browser: ServiceBrowser?
    private var sightings: [ServerTable.Key: Sighting] = [:]
    private var reconnectTimer: MainLoop.Source?
    private var reconnectDelay = 1.0
    private var running = false

    /// A service instance on one interface and protocol, and its resolver.
    private struct Sighting {
        var resolver: ServiceResolver?
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
    }

    deinit { stop() }

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

    private func connect() {
        do {
            // The state callback may run inside the initialiser (with the new client as its argument).
            client = try AvahiClient(waitForDaemon: true) { [weak self] client, state in self?.clientChanged(client, state) }
        } catch {
            // The half-made client is gone, and with it whatever the state callback made from it.
            client = nil
            browser = nil
            for sighting in sightings.values { sighting.retry?.cancel() }
            sightings = [:]
            // Only when the D-Bus system bus itself cannot be reached; waiting for the daemon, a missing daemon is a state.
            setStatus(.unavailable("cannot reach avahi-daemon: the D-Bus system bus at \(Self.systemBusAddress) does not answer (\(error))"))
            scheduleReconnect()
        }
    }

    private func clientChanged(_ client: AvahiClient, _ state: AvahiClient.State) {
        guard running else { return }
        // The first call comes from inside the client's initialiser, before it has returned the client.
        self.client = client
        switch state {
        case .running, .registering, .collision:
            if browser == nil { browse(client) }
        case .connecting:
            setStatus(.unavailable("avahi-daemon is not running (not on the D-Bus system bus \(Self.systemBusAddress))"))
        case .failure(let error):
            let why = error.isDisconnected
                ? "lost the connection to avahi-daemon (it stopped or restarted)"
                : "avahi-daemon failed: \(error)"
            forgetServers()
            setStatus(.unavailable(why))
            // Not from inside Avahi's own callback: the client is freed and made anew from the main loop.
            scheduleReconnect(after: 0)
        case .other:
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
            sighting.resolver?.close()
        }
        sightings = [:]
        browser?.close()
        browser = nil
        client?.close()
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

    private func browse(_ client: AvahiClient) {
        do {
            browser = try client.browse(type: serviceType, domain: domain) { [weak self] event in self?.browserEvent(event) }
        } catch {
            setStatus(.unavailable("avahi-daemon refused to browse \(serviceType): \(error)"))
            scheduleReconnect()
            return
        }
        // Backoff starts again only once browsing works (a daemon that refuses every browser is not retried each second).
        reconnectDelay = 1
        setStatus(.running)
    }

    private func browserEvent(_ event: ServiceBrowser.Event) {
        guard running else { return }
        switch event {
        case .new(let instance):
            let key = Self.key(instance)
            logger.debug("sighted \"\(instance.name)\" on \(instance.interface)/\(instance.ipProtocol)")
            if sightings[key] == nil {
                sightings[key] = Sighting()
                resolve(key)
            }
        case .removed(let instance):
            let key = Self.key(instance)
            logger.debug("\"\(instance.name)\" withdrawn on \(instance.interface)/\(instance.ipProtocol)")
            if let sighting = sightings.removeValue(forKey: key) {
                sighting.retry?.cancel()
                sighting.resolver?.close()
            }
            if let change = table.removed(key) { report(change) }
        case .allForNow:
            logger.debug("browse: all for now (\(sightings.count) sightings)")
        case .failure(let error):
            logger.error("browsing \(serviceType) failed: \(error); starting over")
            forgetServers()
            setStatus(.unavailable("browsing failed: \(error)"))
            scheduleReconnect()
        case .cacheExhausted:
            break
        }
    }

    private func resolve(_ key: ServerTable.Key) {
        guard let client, sightings[key] != nil else { return }
        // The address protocol = the protocol it was seen on: the IPv4 sighting gives the IPv4 address, the IPv6 one the IPv6.
        let ipProtocol = IPProtocol(rawValue: key.ipProtocol) ?? .any
        let instance = ServiceInstance(interface: NetworkInterface(index: key.interface), ipProtocol: ipProtocol,
                                       name: key.name, type: serviceType, domain: domain)
        do {
            let resolver = try client.resolve(instance, addressProtocol: ipProtocol) { [weak self] resolver, event in
                self?.resolved(resolver, event)
            }
            sightings[key]?.resolver = resolver
        } catch {
            resolveFailed(key, why: "\(error)")
        }
    }

    /// A resolver's answer: a resolution, or why it failed.
    private func resolved(_ resolver: ServiceResolver, _ event: ServiceResolver.Event) {
        guard running, let key = sightings.first(where: { $0.value.resolver === resolver })?.key else { return }
        switch event {
        case .failure(let error):
            // A failed resolver is done: free it (Avahi allows it inside its callback) and try again later.
            resolver.close()
            sightings[key]?.resolver = nil
            if let change = table.removed(key) { report(change) }
            resolveFailed(key, why: "\(error)")
        case .found(let found):
            // Resolvers stay alive: Avahi reports the service again when its records change.
            sightings[key]?.retryDelay = 2
            sightings[key]?.warned = false
            let resolution = ServiceResolution(host: found.host, address: found.address, port: found.port, txt: found.txt)
            if let change = table.resolved(key, resolution) { report(change) }
        }
    }

    private func resolveFailed(_ key: ServerTable.Key, why: String) {
        guard var sighting = sightings[key] else { return }
        let message = "cannot resolve \"\(key.name)\" on \(NetworkInterface(index: key.interface))/\(IPProtocol(rawValue: key.ipProtocol) ?? .any): \(why); retrying in \(Int(sighting.retryDelay)) s"
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

    private static func key(_ instance: ServiceInstance) -> ServerTable.Key {
        ServerTable.Key(interface: instance.interface.index, ipProtocol: instance.ipProtocol.rawValue, name: instance.name)
    }

    /// Where libdbus looks for the system bus.
    private static var systemBusAddress: String {
        ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "unix:path=/var/run/dbus/system_bus_socket"
    }
}
