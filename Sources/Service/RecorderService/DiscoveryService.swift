import Discovery
import AllSparkProtocol
import GLibSupport
import Logging
import RecorderCore
import ServerLink

/// Server discovery while recording (`server.discovery = true`): browses for
/// AllSpark servers, logs every change, and, when no `server.host` is set,
/// points the server link at the server `ServerChooser` picks.
///
/// Changes are looked at `settleSeconds` after the first of a burst, from a
/// main-loop timer: Avahi reports a server once per interface and protocol
/// within milliseconds (so the log and the choice see it whole, not first
/// its IPv6 and then its IPv4 address), and the link is never switched from
/// inside its own state callback.
///
/// Threading: main-loop thread only, like the browser and the link.
public final class DiscoveryService {
    private let browser: ServerBrowser
    private var chooser: ServerChooser
    private weak var link: ServerLink?
    private let configuredHost: String?
    private let settleSeconds = 0.5
    private var pending: MainLoop.Source?
    /// The servers as last logged.
    private var reported: [DiscoveredServer] = []
    /// The AllSpark servers announced on the network now.
    public var servers: [DiscoveredServer] { browser.servers }
    private let logger = Logger(label: "allspark.discovery")

    /// `configuredHost`: `server.host` when set (discovery then only reports what it finds).
    init(link: ServerLink?, configuredHost: String?) {
        self.link = link
        self.configuredHost = configuredHost
        browser = ServerBrowser(logger: logger)
        chooser = ServerChooser(configuredHost: configuredHost != nil || link == nil)
    }

    func start() {
        MainLoop.preconditionOnLoop()
        if let configuredHost {
            logger.notice("server.host is set (\(configuredHost)): servers discovered on the network are logged, not used")
        } else if link != nil {
            logger.notice("no server.host: connecting to the first AllSpark server announced on the network (\(browser.serviceType))")
        }
        browser.onEvent = { [unowned self] _ in settleThenReconsider() }
        link?.onStateChange { [weak self] _ in self?.settleThenReconsider() }
        browser.start()
    }

    public func stop() {
        MainLoop.preconditionOnLoop()
        pending?.cancel()
        pending = nil
        browser.stop()
    }

    private func settleThenReconsider() {
        guard pending == nil else { return }
        pending = MainLoop.after(settleSeconds) { [weak self] in
            guard let self else { return }
            self.pending = nil
            self.reconsider()
        }
    }

    /// Logs what changed and asks the policy again.
    private func reconsider() {
        let servers = browser.servers
        for change in DiscoveryEvent.changes(from: reported, to: servers) {
            if case .removed(let server) = change, browser.daemonStatus != .running {
                logger.notice("server \"\(server.name)\" is no longer known while avahi-daemon is unavailable")
            } else {
                logger.notice("\(change)")
            }
        }
        reported = servers
        guard let link else { return }
        let connected: Bool
        if case .connected = link.state { connected = true } else { connected = false }
        switch chooser.decide(servers: servers, linkConnected: connected) {
        case .connect(let address, let name, let reason)?:
            logger.notice("server: using \"\(name)\" at \(address) (\(reason))")
            link.connect(to: address)
        case .stay(let reason)?:
            logger.notice("server: \(reason)")
        case nil:
            break
        }
    }
}

extension DiscoveryService {
    /// Starts discovery when the config asks for it; nil otherwise.
    static func start(for config: RecorderConfig, link: ServerLink?) -> DiscoveryService? {
        guard config.server.discovery else { return nil }
        let service = DiscoveryService(link: link, configuredHost: config.server.host.isEmpty ? nil : config.server.host)
        service.start()
        return service
    }
}
