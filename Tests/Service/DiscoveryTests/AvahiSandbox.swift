import Foundation
import RecorderTestSupport
import XCTest

/// A process a test started; its stdout and stderr go to files the test reads.
///
/// Spawned with posix_spawn and reaped here, not with Foundation's
/// `Process`: Foundation notices a child's end by EOF on a socket the child
/// inherits, and then blocks its one monitor thread in waitpid. avahi-daemon
/// closes every inherited descriptor at start, so under `Process` it looks
/// dead while it runs, and the monitor thread hangs, and with it every
/// `Process` of the test run.
final class Child {
    let label: String
    let arguments: [String]
    let pid: pid_t
    private let stdoutFile: URL
    private let stderrFile: URL
    private var waitStatus: Int32?

    init(_ label: String, executable: String, arguments: [String], environment: [String: String], logPrefix: URL) throws {
        self.label = label
        self.arguments = arguments
        stdoutFile = logPrefix.appendingPathExtension("out")
        stderrFile = logPrefix.appendingPathExtension("err")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // Nothing else of this process leaks into the child (D-Bus connections, sockets, other children's pipes).
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap({ Int32($0) }) ?? [] where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (a Ctrl-C of the test run is not its business), no blocked or ignored signals.
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw SandboxError("cannot start \(executable): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    deinit {
        if isRunning { kill(pid, SIGKILL) }
        _ = finish(timeout: 5)
    }

    var stdout: String { (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }
    /// Both, stdout first.
    var output: String { stdout + stderr }

    var isRunning: Bool {
        if waitStatus == nil {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { waitStatus = status } else if result == -1, errno == ECHILD { waitStatus = -1 }
        }
        return waitStatus == nil
    }

    /// How often `text` occurs in the output so far.
    func count(_ text: String) -> Int { output.components(separatedBy: text).count - 1 }

    /// Waits until the output holds `text` `times` times (polling; no main loop needed).
    @discardableResult
    func waitFor(_ text: String, times: Int = 1, timeout: Double = 20) -> Bool {
        waitUntil(timeout) { self.count(text) >= times }
    }

    func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the process to exit (SIGKILL after `timeout`); returns its exit status (128 + signal if killed).
    @discardableResult
    func finish(timeout: Double = 30) -> Int32 {
        if !waitUntil(timeout, { !self.isRunning }) {
            kill(pid, SIGKILL)
            waitUntil(5) { !self.isRunning }
        }
        guard let status = waitStatus, status >= 0 else { return -1 }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Sends `signal`, then SIGKILL if it is still running after `timeout`; returns the exit status.
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM, timeout: Double = 10) -> Int32 {
        self.signal(signal)
        return finish(timeout: timeout)
    }
}

@discardableResult
func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(50_000)
    }
    return condition()
}

struct SandboxError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private mDNS network for one test, so that nothing is announced on or
/// browsed from the machine's real network:
///
/// - a network namespace whose loopback is up with multicast on (IPv4 mDNS
///   on 127.0.0.1), plus a veth pair inside it whose `av0` end has the fixed
///   link-local address fe80::a11:5 (Linux does not loop IPv6 multicast back
///   on `lo`, so IPv6 mDNS needs a real link; the pair never leaves the namespace);
/// - a private D-Bus system bus (`dbus-daemon --config-file`, a socket in a
///   folder of this test process), which every child gets as `DBUS_SYSTEM_BUS_ADDRESS`;
/// - avahi-daemon inside the namespace (`--no-drop-root --no-chroot`,
///   `allow-interfaces=lo,av0`, its own config) in a private mount namespace
///   whose own tmpfs on /run holds its pid file and socket, so it never clashes
///   with the machine's avahi-daemon or another sandbox's.
///
/// Children (avahi-publish, the test server, the recorder) run inside the
/// namespace with `ip netns exec`. `close` (also on deinit) stops them all,
/// kills anything left in the namespace and deletes it.
final class AvahiSandbox {
    static let interface = "av0"
    static let linkLocalAddress = "fe80::a11:5"
    static let hostName = "allspark-sandbox"
    static let serviceType = "_allspark._tcp"

    /// libdbus reads DBUS_SYSTEM_BUS_ADDRESS once per process, so in-process
    /// browsers need one bus address for every sandbox of this test process.
    static let busDirectory = URL(fileURLWithPath: "/tmp/allspark-dbus-\(getpid())")
    static var busSocket: String { busDirectory.appendingPathComponent("system_bus_socket").path }
    static var busAddress: String { "unix:path=\(busSocket)" }

    private static var counter = 0

    let namespace: String
    let directory = TemporaryDirectory("allspark-avahi")
    private(set) var daemon: Child?
    private var bus: Child?
    private var children: [Child] = []
    private var closed = false

    /// The sandbox with its bus; with avahi-daemon running unless `daemon` is false.
    init(daemon startsDaemon: Bool = true) throws {
        guard getuid() == 0 else { throw XCTSkip("network namespaces need root") }
        for tool in ["ip", "unshare", "dbus-daemon", "avahi-daemon", "avahi-publish"] where Self.tool(tool) == nil {
            throw SandboxError("\(tool) is not installed: run scripts/setup --tests (installs avahi-daemon, avahi-utils, dbus)")
        }
        Self.removeStaleNamespaces()
        Self.counter += 1
        namespace = "allspark-disc-\(getpid())-\(Self.counter)"
        do {
            try Self.ip(["netns", "add", namespace])
            for command in [["link", "set", "lo", "up"], ["link", "set", "lo", "multicast", "on"],
                            ["link", "add", Self.interface, "type", "veth", "peer", "name", "av1"],
                            ["link", "set", Self.interface, "addrgenmode", "none"], ["link", "set", "av1", "addrgenmode", "none"],
                            ["link", "set", Self.interface, "up"], ["link", "set", "av1", "up"],
                            ["-6", "addr", "add", "\(Self.linkLocalAddress)/64", "dev", Self.interface, "nodad"]] {
                try Self.ip(["-n", namespace] + command)
            }
            try startBus()
            if startsDaemon { try startDaemon() }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// The environment of every child: this process's, with the private bus.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = Self.busAddress
        return environment
    }

    /// Runs `executable` inside the namespace (with `environment` unless another is given).
    @discardableResult
    func spawn(_ label: String, _ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Child {
        guard !closed else { throw SandboxError("sandbox closed") }
        let child = try Child(label, executable: Self.tool("ip")!, arguments: ["netns", "exec", namespace, executable] + arguments,
                              environment: environment ?? self.environment, logPrefix: directory.file("\(label)-\(children.count)"))
        children.append(child)
        return child
    }

    /// Stops the private D-Bus system bus (as if D-Bus were not there at all).
    func stopBus() {
        bus?.stop()
        bus = nil
    }

    /// Starts the private D-Bus system bus and waits for its socket.
    func startBus() throws {
        guard bus == nil else { return }
        try FileManager.default.createDirectory(at: Self.busDirectory, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: Self.busSocket)
        let config = directory.file("dbus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(Self.busSocket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """.write(to: config, atomically: true, encoding: .utf8)
        let bus = try spawn("dbus", Self.tool("dbus-daemon")!, ["--config-file=\(config.path)", "--nofork", "--nopidfile", "--nosyslog"])
        self.bus = bus
        guard waitUntil(10, { FileManager.default.fileExists(atPath: Self.busSocket) }) else {
            throw SandboxError("dbus-daemon did not start: \(bus.output)")
        }
    }

    /// Starts avahi-daemon and waits until it serves.
    func startDaemon() throws {
        guard daemon == nil else { return }
        let config = directory.file("avahi-daemon.conf")
        try """
            [server]
            host-name=\(Self.hostName)
            use-ipv4=yes
            use-ipv6=yes
            allow-interfaces=lo,\(Self.interface)
            enable-dbus=yes
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-addresses=yes
            publish-hinfo=no
            publish-workstation=no
            publish-domain=no
            [reflector]
            enable-reflector=no
            [rlimits]
            """.write(to: config, atomically: true, encoding: .utf8)
        // A private tmpfs on /run: its pid file and socket (/run/avahi-daemon) are its own.
        let command = "mount -t tmpfs sandbox-run /run && exec \(Self.tool("avahi-daemon")!) --no-drop-root --no-chroot --no-rlimits --no-proc-title -f \(config.path)"
        let daemon = try spawn("avahi-daemon", Self.tool("unshare")!, ["--mount", "--propagation", "private", "/bin/sh", "-c", command])
        self.daemon = daemon
        guard daemon.waitFor("Server startup complete", timeout: 15) else {
            throw SandboxError("avahi-daemon did not start: \(daemon.output)")
        }
    }

    /// Stops avahi-daemon (SIGTERM, as systemd does).
    func stopDaemon() {
        daemon?.stop()
        daemon = nil
    }

    /// Announces `_allspark._tcp` NAME on PORT with TXT records, as a server would; waits until it is established.
    func publish(_ name: String, port: Int, txt: [String] = []) throws -> Child {
        let publisher = try spawn("publish", Self.tool("avahi-publish")!, ["-s", name, Self.serviceType, String(port)] + txt)
        guard publisher.waitFor("Established under name", timeout: 15) else {
            throw SandboxError("avahi-publish \(name) failed: \(publisher.output)")
        }
        return publisher
    }

    /// The AllSpark test server (a real libsoup server) inside the namespace; returns it and its port.
    func startServer(_ name: String) throws -> (child: Child, port: Int) {
        let executable = URL(fileURLWithPath: recorderExecutable).deletingLastPathComponent().appendingPathComponent("allspark-test-server").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw SandboxError("\(executable) is missing: build it with swift build --build-tests")
        }
        let server = try spawn("server-\(name)", executable, [])
        guard server.waitFor("listening 127.0.0.1:", timeout: 10),
              let line = server.output.split(separator: "\n").first(where: { $0.hasPrefix("listening 127.0.0.1:") }),
              let port = Int(line.split(separator: ":").last ?? "") else {
            throw SandboxError("allspark-test-server did not start: \(server.output)")
        }
        return (server, port)
    }

    /// Stops every child (newest first), kills what is left in the namespace, deletes it.
    func close() {
        guard !closed else { return }
        closed = true
        for child in children.reversed() where child.isRunning { child.stop(timeout: 5) }
        for pid in Self.pids(in: namespace) { kill(pid, SIGKILL) }
        try? Self.ip(["netns", "delete", namespace])
        try? FileManager.default.removeItem(at: Self.busDirectory)
    }

    /// Everything the children printed, for failure messages.
    var logs: String {
        children.map { "--- \($0.label) (\($0.arguments.dropFirst(3).joined(separator: " ")))\n\($0.output)" }
            .joined(separator: "\n")
    }

    // MARK: - Helpers

    static func tool(_ name: String) -> String? {
        ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private static func ip(_ arguments: [String]) throws {
        let (status, output) = try runTool(tool("ip")!, arguments)
        guard status == 0 else { throw SandboxError("ip \(arguments.joined(separator: " ")): \(output)") }
    }

    private static func pids(in namespace: String) -> [pid_t] {
        guard let (_, output) = try? runTool(tool("ip")!, ["netns", "pids", namespace]) else { return [] }
        return output.split(separator: "\n").compactMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// Namespaces left by test processes that died before cleaning up (a crash, SIGKILL).
    private static func removeStaleNamespaces() {
        guard let (_, output) = try? runTool(tool("ip")!, ["netns", "list"]) else { return }
        for line in output.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            let parts = name.split(separator: "-")
            guard name.hasPrefix("allspark-disc-"), parts.count == 4, let owner = pid_t(parts[2]),
                  owner != getpid(), kill(owner, 0) != 0 else { continue }
            for pid in pids(in: name) { kill(pid, SIGKILL) }
            try? ip(["netns", "delete", name])
            try? FileManager.default.removeItem(atPath: "/tmp/allspark-dbus-\(owner)")
        }
    }
}
