import ArgumentParser
import Discovery
import Foundation
import GLibSupport
import Logging

struct Discover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the AllSpark servers announced on the local network (mDNS/DNS-SD, through avahi-daemon).",
        discussion: """
            Browses for _allspark._tcp services in the local domain for --timeout seconds and lists \
            each server found: its name, host, addresses (best first; a link-local IPv6 address \
            carries its interface, e.g. fe80::1%eth0), port and TXT records.

            `run` with an empty server.host (and server.discovery = true) connects to the first \
            server found this way.

            Needs avahi-daemon (Debian: apt install avahi-daemon; systemctl start avahi-daemon), \
            reached over the D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS, if set, says where it is).

            Exit status: 0 when the network was browsed, even if no server answered; 1 when \
            avahi-daemon cannot be reached.
            """)

    @Option(help: "Seconds to listen for announcements (0.1 … 3600).")
    var timeout: Double = 3

    @Flag(help: "Print a JSON array of {name, host, addresses, port, txt} instead of a table.")
    var json = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard timeout.isFinite, (0.1...3600).contains(timeout) else {
            throw ValidationError("--timeout \(timeout): give seconds between 0.1 and 3600")
        }
    }

    func run() throws {
        CommonOptions.bootstrapLogging(level: logLevel)
        var browserLogger = Logger(label: "allspark.discovery")
        // This command reports the daemon's absence itself, as an error; the browser's own
        // log lines about it would say the same twice. --log-level debug shows everything.
        if logLevel > .debug { browserLogger.logLevel = .error }
        let loop = MainLoop()
        let browser = ServerBrowser(logger: browserLogger)
        browser.start()
        if case .unavailable(let why) = browser.daemonStatus {
            fail("""
                cannot look for AllSpark servers: \(why).
                Start avahi-daemon (Debian: apt install avahi-daemon; systemctl start avahi-daemon) and try again, \
                or set server.host to the server's host:port.
                """)
        }
        var lost: String?
        browser.onDaemonStatusChange = { status in
            if case .unavailable(let why) = status { lost = why; loop.quit() }
        }
        loop.run(forAtMost: timeout)
        let servers = browser.servers.sorted { $0.name < $1.name }
        browser.stop()
        if let lost { fail("avahi-daemon went away while browsing: \(lost)") }

        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(servers), as: UTF8.self))  // user-facing
            return
        }
        let seconds = String(format: "%g", timeout)
        guard !servers.isEmpty else {
            print("No AllSpark server (\(browser.serviceType)) announced within \(seconds) s.")  // user-facing
            return
        }
        let rows = [["NAME", "HOST", "ADDRESSES", "PORT", "TXT"]] + servers.map { server in
            [server.name, server.host, server.addresses.joined(separator: ", "), String(server.port),
             server.txt.sorted { $0.key < $1.key }.map { $0.value.isEmpty ? $0.key : "\($0.key)=\($0.value)" }.joined(separator: " ")]
        }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let padded = (0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
            print((padded + [row[4]]).joined(separator: "  ").trimmingCharacters(in: .whitespaces))  // user-facing
        }
        print("\(servers.count) server\(servers.count == 1 ? "" : "s") found in \(seconds) s")  // user-facing
    }
}
