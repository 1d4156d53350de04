import CAvahi
import Foundation

// The Avahi C boundary: typed Swift over avahi-client, run on the GLib main
// loop through avahi-glib. Every Avahi pointer lives in this file; callers
// see Swift values (names, address text, TXT dictionaries) and errors.
//
// Ownership follows Avahi's: a browser or resolver is made from a client
// and freed with it. Closing (or releasing) an `AvahiClient` therefore
// invalidates what was made from it; closing those afterwards does nothing.
//
// Threading: create, use and release everything on the main-loop thread
// (the one running `MainLoop`); every callback arrives there. Creating a
// client, browser or resolver waits on that thread for avahi-daemon's
// D-Bus reply (a millisecond on a local bus; up to D-Bus's reply timeout,
// 25 s, with a hung daemon).

/// An Avahi error code and its text.
public struct AvahiError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Int32
    init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: avahi_strerror(code)) }
    /// The connection to avahi-daemon was lost (it stopped or restarted).
    public var isDisconnected: Bool { code == Int32(AVAHI_ERR_DISCONNECTED) }
}

/// A network interface by index, as Avahi reports it.
public struct NetworkInterface: Hashable, Sendable, CustomStringConvertible {
    public let index: Int32
    public init(index: Int32) { self.index = index }
    /// Any interface (Avahi's AVAHI_IF_UNSPEC).
    public static let any = NetworkInterface(index: Int32(AVAHI_IF_UNSPEC))

    /// The interface's name in this network namespace, its index when it has
    /// none here, or "any".
    public var description: String {
        guard index > 0 else { return "any" }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        return if_indextoname(UInt32(index), &buffer) != nil ? String(cString: buffer) : String(index)
    }
}

/// The IP protocol of a sighting or address (Avahi's AvahiProtocol values).
public enum IPProtocol: Int32, Sendable, CustomStringConvertible {
    case ipv4 = 0, ipv6 = 1, any = -1

    init(_ value: AvahiProtocol) { self = IPProtocol(rawValue: value) ?? .any }
    var avahi: AvahiProtocol { AvahiProtocol(rawValue) }

    public var description: String {
        switch self {
        case .ipv4: return "IPv4"
        case .ipv6: return "IPv6"
        case .any: return "any"
        }
    }
}

/// A service instance as a browser sees it: once per interface and protocol.
public struct ServiceInstance: Hashable, Sendable {
    public var interface: NetworkInterface
    public var ipProtocol: IPProtocol
    public var name: String
    public var type: String
    public var domain: String
    public init(interface: NetworkInterface, ipProtocol: IPProtocol, name: String, type: String, domain: String) {
        self.interface = interface
        self.ipProtocol = ipProtocol
        self.name = name
        self.type = type
        self.domain = domain
    }
}

/// What a resolver found for a service instance.
public struct ResolvedService: Equatable, Sendable {
    public var host: String
    /// The address as text; link-local IPv6 with its interface (`fe80::1%eth0`), without which it cannot be used.
    public var address: String
    public var port: Int
    /// TXT records as key → value (values are bytes on the wire; shown as UTF-8, invalid bytes replaced).
    public var txt: [String: String]
}

/// A connection to avahi-daemon over the D-Bus system bus, on the GLib main loop.
public final class AvahiClient {
    public enum State: Equatable, Sendable {
        case running, registering, collision
        /// Waiting for avahi-daemon to appear on the bus.
        case connecting
        /// The client is unusable (`error` says why); close it and make a new one.
        case failure(AvahiError)
        case other
    }

    private let poll: OpaquePointer
    fileprivate var pointer: OpaquePointer?
    /// Set by `close`: a callback after it refers to a freed client.
    private var closed = false
    private let onStateChange: (AvahiClient, State) -> Void
    /// What was made from this client and is still open, so closing the client can invalidate it.
    private var lookups: [ObjectIdentifier: WeakLookup] = [:]

    private struct WeakLookup { weak var lookup: AvahiLookup? }

    /// Connects to avahi-daemon. `waitForDaemon` (AVAHI_CLIENT_NO_FAIL): a
    /// daemon that is not running is a `.connecting` state, not an error,
    /// and the client follows it when it appears; then this throws only
    /// when the D-Bus system bus cannot be reached.
    ///
    /// `onStateChange` may run inside this initialiser, before it returns
    /// (the client is then already usable for browsing). When it throws,
    /// whatever was made from the client in there is gone with it.
    public init(waitForDaemon: Bool = true, onStateChange: @escaping (AvahiClient, State) -> Void) throws {
        // NULL: the default main context, the one `MainLoop` runs.
        poll = avahi_glib_poll_new(nil, G_PRIORITY_DEFAULT)
        self.onStateChange = onStateChange
        var error: Int32 = 0
        let made = avahi_client_new(avahi_glib_poll_get(poll), waitForDaemon ? AVAHI_CLIENT_NO_FAIL : AvahiClientFlags(0), { client, state, data in
            guard let client, let data else { return }
            Unmanaged<AvahiClient>.fromOpaque(data).takeUnretainedValue().changed(client, state)
        }, Unmanaged.passUnretained(self).toOpaque(), &error)
        guard let made else {
            // avahi_client_new freed its half-made client, and with it whatever the state callback made from it.
            pointer = nil
            invalidateLookups()
            throw AvahiError(error)
        }
        pointer = made
    }

    deinit {
        close()
        avahi_glib_poll_free(poll)
    }

    private func changed(_ client: OpaquePointer, _ state: AvahiClientState) {
        guard !closed else { return }
        // The first call comes from inside avahi_client_new, before it has returned the client.
        if pointer == nil { pointer = client }
        let typed: State
        switch state {
        case AVAHI_CLIENT_S_RUNNING: typed = .running
        case AVAHI_CLIENT_S_REGISTERING: typed = .registering
        case AVAHI_CLIENT_S_COLLISION: typed = .collision
        case AVAHI_CLIENT_CONNECTING: typed = .connecting
        case AVAHI_CLIENT_FAILURE: typed = .failure(AvahiError(avahi_client_errno(client)))
        default: typed = .other
        }
        onStateChange(self, typed)
    }

    /// The client's last error.
    public var lastError: AvahiError { AvahiError(pointer.map { avahi_client_errno($0) } ?? Int32(AVAHI_ERR_BAD_STATE)) }

    /// Frees the client and everything made from it (no callbacks follow).
    public func close() {
        closed = true
        guard let pointer else { return }
        self.pointer = nil
        invalidateLookups()
        avahi_client_free(pointer)
    }

    private func invalidateLookups() {
        for entry in lookups.values { entry.lookup?.forget() }
        lookups = [:]
    }

    fileprivate func register(_ lookup: AvahiLookup) { lookups[ObjectIdentifier(lookup)] = WeakLookup(lookup: lookup) }
    fileprivate func unregister(_ lookup: AvahiLookup) { lookups[ObjectIdentifier(lookup)] = nil }

    /// Browses for services of `type` in `domain` on every interface and protocol.
    public func browse(type: String, domain: String, onEvent: @escaping (ServiceBrowser.Event) -> Void) throws -> ServiceBrowser {
        try ServiceBrowser(client: self, type: type, domain: domain, onEvent: onEvent)
    }

    /// Resolves one sighting of a service to host, address, port and TXT;
    /// `addressProtocol` picks the address family of the answer. The resolver
    /// stays open and reports again when the service's records change.
    public func resolve(_ instance: ServiceInstance, addressProtocol: IPProtocol,
                        onEvent: @escaping (ServiceResolver, ServiceResolver.Event) -> Void) throws -> ServiceResolver {
        try ServiceResolver(client: self, instance: instance, addressProtocol: addressProtocol, onEvent: onEvent)
    }
}

/// A browser or resolver: freed by `close`, on release, or with its client.
public class AvahiLookup {
    fileprivate var pointer: OpaquePointer?
    private weak var client: AvahiClient?
    private let free: (OpaquePointer) -> Void

    fileprivate init(client: AvahiClient, free: @escaping (OpaquePointer) -> Void) {
        self.client = client
        self.free = free
    }

    /// Frees it now; no more events. Allowed inside its own callback.
    public func close() {
        guard let pointer else { return }
        self.pointer = nil
        client?.unregister(self)
        free(pointer)
    }

    /// Its client freed it.
    fileprivate func forget() { pointer = nil }

    deinit { close() }
}

/// Browses for one service type (`avahi_service_browser`).
public final class ServiceBrowser: AvahiLookup {
    public enum Event: Sendable {
        case new(ServiceInstance)
        case removed(ServiceInstance)
        case allForNow
        case cacheExhausted
        /// Browsing failed; the browser is unusable.
        case failure(AvahiError)
    }

    private let onEvent: (Event) -> Void

    fileprivate init(client: AvahiClient, type: String, domain: String, onEvent: @escaping (Event) -> Void) throws {
        self.onEvent = onEvent
        super.init(client: client, free: { avahi_service_browser_free($0) })
        guard let clientPointer = client.pointer else { throw client.lastError }
        pointer = avahi_service_browser_new(clientPointer, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, domain,
                                            AvahiLookupFlags(0), { browser, interface, ipProtocol, event, name, type, domain, _, data in
            guard let browser, let data else { return }
            let owner = Unmanaged<ServiceBrowser>.fromOpaque(data).takeUnretainedValue()
            let instance = name.map {
                ServiceInstance(interface: NetworkInterface(index: interface), ipProtocol: IPProtocol(ipProtocol), name: String(cString: $0),
                                type: type.map { String(cString: $0) } ?? "", domain: domain.map { String(cString: $0) } ?? "")
            }
            switch event {
            case AVAHI_BROWSER_NEW: if let instance { owner.onEvent(.new(instance)) }
            case AVAHI_BROWSER_REMOVE: if let instance { owner.onEvent(.removed(instance)) }
            case AVAHI_BROWSER_ALL_FOR_NOW: owner.onEvent(.allForNow)
            case AVAHI_BROWSER_CACHE_EXHAUSTED: owner.onEvent(.cacheExhausted)
            case AVAHI_BROWSER_FAILURE:
                owner.onEvent(.failure(AvahiError(avahi_client_errno(avahi_service_browser_get_client(browser)))))
            default: break
            }
        }, Unmanaged.passUnretained(self).toOpaque())
        guard pointer != nil else { throw client.lastError }
        client.register(self)
    }
}

/// Resolves one service instance (`avahi_service_resolver`).
public final class ServiceResolver: AvahiLookup {
    public enum Event: Sendable {
        case found(ResolvedService)
        /// Resolving failed (a timeout, the service went away); the resolver is done: close it.
        case failure(AvahiError)
    }

    private let onEvent: (ServiceResolver, Event) -> Void

    fileprivate init(client: AvahiClient, instance: ServiceInstance, addressProtocol: IPProtocol,
                     onEvent: @escaping (ServiceResolver, Event) -> Void) throws {
        self.onEvent = onEvent
        super.init(client: client, free: { avahi_service_resolver_free($0) })
        guard let clientPointer = client.pointer else { throw client.lastError }
        pointer = avahi_service_resolver_new(clientPointer, instance.interface.index, instance.ipProtocol.avahi, instance.name,
                                             instance.type, instance.domain, addressProtocol.avahi, AvahiLookupFlags(0),
                                             { resolver, interface, _, event, _, _, _, host, address, port, txt, _, data in
            guard let resolver, let data else { return }
            let owner = Unmanaged<ServiceResolver>.fromOpaque(data).takeUnretainedValue()
            if event == AVAHI_RESOLVER_FOUND, let host, let address {
                owner.onEvent(owner, .found(ResolvedService(host: String(cString: host), address: ServiceResolver.text(address, interface: interface),
                                                            port: Int(port), txt: ServiceResolver.dictionary(txt))))
            } else {
                owner.onEvent(owner, .failure(AvahiError(avahi_client_errno(avahi_service_resolver_get_client(resolver)))))
            }
        }, Unmanaged.passUnretained(self).toOpaque())
        guard pointer != nil else { throw client.lastError }
        client.register(self)
    }

    private static func text(_ address: UnsafePointer<AvahiAddress>, interface: AvahiIfIndex) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        avahi_address_snprint(&buffer, buffer.count, address)
        let text = String(cString: buffer)
        guard address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6) else { return text }
        let bytes = address.pointee.data.ipv6.address
        guard bytes.0 == 0xfe, bytes.1 & 0xc0 == 0x80 else { return text }
        return "\(text)%\(NetworkInterface(index: interface))"
    }

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
