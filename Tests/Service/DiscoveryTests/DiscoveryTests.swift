import Discovery
import GLibSupport
import RecorderTestSupport
import XCTest

/// Discovery against a real avahi-daemon on a private D-Bus bus inside a
/// network namespace (`AvahiSandbox`), with servers announced by
/// avahi-publish, real libsoup test servers and the real recorder running
/// inside the namespace. Nothing touches the machine's real network.
final class DiscoveryTests: XCTestCase {
    private var sandbox: AvahiSandbox?

    override func tearDown() {
        sandbox?.close()
        sandbox = nil
    }

    private func makeSandbox(daemon: Bool = true) throws -> AvahiSandbox {
        let sandbox = try AvahiSandbox(daemon: daemon)
        self.sandbox = sandbox
        return sandbox
    }

    /// What the test server prints when the recorder introduces itself.
    private let introduction = #""clientName":"Sandbox Camera""#

    /// `run` with a small live test source, discovery on, `host` as server.host (empty: use discovery).
    private func startRecorder(in sandbox: AvahiSandbox, host: String = "") throws -> Child {
        try sandbox.spawn("recorder", recorderExecutable, [
            "run", "--config", repoPath("config/demo.toml"),
            "--set", "recording.storage_dir=\(sandbox.directory.file("chunks").path)",
            "--set", "privacy.face_blur=false",
            "--set", "pipeline.vars.width=160", "--set", "pipeline.vars.height=120",
            "--set", "pipeline.vars.framerate=10", "--set", "pipeline.vars.bitrate_kbps=200",
            "--set", "device.name=Sandbox Camera",
            "--set", "server.discovery=true", "--set", "server.host=\(host)",
            "--set", "server.reconnect_delay_s=0.5",
        ])
    }

    // MARK: - discover

    func testDiscoverListsEveryServerWithHostAddressesPortAndTXT() throws {
        let sandbox = try makeSandbox()
        _ = try sandbox.publish("Studio Server", port: 8123, txt: ["path=/", "version=2", "secure"])
        _ = try sandbox.publish("Backup Server", port: 9123)

        let json = try sandbox.spawn("discover", recorderExecutable, ["discover", "--json", "--timeout", "1.5"])
        XCTAssertEqual(json.finish(), 0, sandbox.logs)
        let servers = try JSONDecoder().decode([DiscoveredServer].self, from: Data(json.stdout.utf8))
        XCTAssertEqual(servers, [
            DiscoveredServer(name: "Backup Server", host: "\(AvahiSandbox.hostName).local",
                             addresses: ["127.0.0.1", "\(AvahiSandbox.linkLocalAddress)%\(AvahiSandbox.interface)"], port: 9123, txt: [:]),
            DiscoveredServer(name: "Studio Server", host: "\(AvahiSandbox.hostName).local",
                             addresses: ["127.0.0.1", "\(AvahiSandbox.linkLocalAddress)%\(AvahiSandbox.interface)"], port: 8123,
                             txt: ["path": "/", "version": "2", "secure": ""]),
        ], "IPv4 on lo and link-local IPv6 with its interface on av0:\n\(json.output)")

        let table = try sandbox.spawn("discover-table", recorderExecutable, ["discover", "--timeout", "1.5"])
        XCTAssertEqual(table.finish(), 0, table.output)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 4, table.stdout)
        XCTAssertTrue(lines[0].hasPrefix("NAME"), table.stdout)
        XCTAssertTrue(lines[2].hasPrefix("Studio Server"), table.stdout)
        for fragment in ["allspark-sandbox.local", "127.0.0.1, fe80::a11:5%av0", "8123", "path=/ secure version=2"] {
            XCTAssertTrue(lines[2].contains(fragment), "\(fragment) in \(lines[2])")
        }
        XCTAssertEqual(lines[3], "2 servers found in 1.5 s")
    }

    func testDiscoverWithoutAvahiDaemonSaysSoAtOnceAndFails() throws {
        let sandbox = try makeSandbox(daemon: false)
        let started = Date()
        let noDaemon = try sandbox.spawn("discover", recorderExecutable, ["discover", "--timeout", "30"])
        XCTAssertEqual(noDaemon.finish(), 1)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "fails at once, without waiting for the timeout")
        XCTAssertTrue(noDaemon.stderr.contains("error: cannot look for AllSpark servers: avahi-daemon is not running"), noDaemon.stderr)
        XCTAssertTrue(noDaemon.stderr.contains("systemctl start avahi-daemon"), noDaemon.stderr)
        XCTAssertEqual(noDaemon.stdout, "")

        var environment = sandbox.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(sandbox.directory.file("no-such-bus").path)"
        let noBus = try sandbox.spawn("discover-no-bus", recorderExecutable, ["discover", "--json"], environment: environment)
        XCTAssertEqual(noBus.finish(), 1)
        XCTAssertTrue(noBus.stderr.contains("cannot reach avahi-daemon"), noBus.stderr)
        XCTAssertTrue(noBus.stderr.contains("no-such-bus"), "names the bus it tried: \(noBus.stderr)")
        XCTAssertEqual(noBus.stdout, "", "no JSON on failure")
    }

    // MARK: - run

    func testRunConnectsToTheFirstServerFoundAndMovesToAnotherWhenItIsWithdrawnAndGone() throws {
        let sandbox = try makeSandbox()
        let (serverA, portA) = try sandbox.startServer("A")
        let announceA = try sandbox.publish("Server A", port: portA)
        let recorder = try startRecorder(in: sandbox)
        XCTAssertTrue(serverA.waitFor(introduction, timeout: 30), sandbox.logs)
        XCTAssertTrue(recorder.stderr.contains(#"using "Server A" at 127.0.0.1:\#(portA)/ (the first AllSpark server found)"#), recorder.stderr)
        XCTAssertEqual(recorder.count(#"using "Server A""#), 1, "chosen once, with all its addresses known: \(recorder.stderr)")

        let (serverB, portB) = try sandbox.startServer("B")
        _ = try sandbox.publish("Server B", port: portB)
        XCTAssertTrue(recorder.waitFor(#"server found: "Server B""#), recorder.stderr)

        // Withdrawn while the connection still works: stay.
        announceA.stop()
        XCTAssertTrue(recorder.waitFor(#"server withdrawn: "Server A""#), recorder.stderr)
        XCTAssertTrue(recorder.waitFor(#""Server A" is no longer announced; staying while its connection lasts"#), recorder.stderr)
        XCTAssertEqual(serverB.count(introduction), 0, "still on A")

        // Withdrawn and gone: move to B.
        serverA.stop()
        XCTAssertTrue(serverB.waitFor(introduction, timeout: 30), sandbox.logs)
        XCTAssertTrue(recorder.stderr.contains(#"using "Server B" at 127.0.0.1:\#(portB)/ ("Server A" is no longer announced and not reachable)"#), recorder.stderr)
        XCTAssertEqual(recorder.stop(SIGINT, timeout: 30), 0, recorder.stderr)
    }

    func testRunWithAConfiguredHostUsesItAndOnlyLogsWhatIsDiscovered() throws {
        let sandbox = try makeSandbox()
        let (configured, configuredPort) = try sandbox.startServer("configured")
        let (announced, announcedPort) = try sandbox.startServer("announced")
        _ = try sandbox.publish("Announced Server", port: announcedPort, txt: ["version=2"])
        let recorder = try startRecorder(in: sandbox, host: "ws://127.0.0.1:\(configuredPort)")
        XCTAssertTrue(configured.waitFor(introduction, timeout: 30), sandbox.logs)
        XCTAssertTrue(recorder.waitFor(#"server found: "Announced Server" (allspark-sandbox.local, 127.0.0.1, fe80::a11:5%av0, port \#(announcedPort))"#),
                      recorder.stderr)
        XCTAssertTrue(recorder.stderr.contains("server.host is set (ws://127.0.0.1:\(configuredPort)): servers discovered on the network are logged, not used"),
                      recorder.stderr)
        usleep(1_000_000)
        XCTAssertEqual(announced.count(introduction), 0, "the configured host is used")
        XCTAssertEqual(recorder.stop(SIGINT, timeout: 30), 0, recorder.stderr)
    }

    func testRunWithoutAvahiDaemonKeepsRecordingAndFindsTheServerWhenTheDaemonComesAndRestarts() throws {
        let sandbox = try makeSandbox(daemon: false)
        let (server, port) = try sandbox.startServer("A")
        let recorder = try startRecorder(in: sandbox)
        let notRunning = "avahi-daemon is not running"
        XCTAssertTrue(recorder.waitFor(notRunning), recorder.stderr)
        XCTAssertTrue(recorder.waitFor("Recording to"), recorder.stderr)
        XCTAssertTrue(waitUntil(15) { (try? FileManager.default.contentsOfDirectory(atPath: sandbox.directory.file("chunks").path))?.isEmpty == false },
                      "records without a daemon: \(recorder.stderr)")
        usleep(2_000_000)
        XCTAssertTrue(recorder.isRunning)
        XCTAssertEqual(recorder.count(notRunning), 1, "said once, no retry storm: \(recorder.stderr)")

        try sandbox.startDaemon()
        let announce = try sandbox.publish("Server A", port: port)
        XCTAssertTrue(server.waitFor(introduction, timeout: 30), sandbox.logs)
        XCTAssertEqual(recorder.count("avahi-daemon reached"), 1, recorder.stderr)

        // The daemon restarts: discovery says so once, the connection to the server stays.
        sandbox.stopDaemon()
        XCTAssertTrue(recorder.waitFor("lost the connection to avahi-daemon"), recorder.stderr)
        XCTAssertTrue(recorder.waitFor(#"server "Server A" is no longer known while avahi-daemon is unavailable"#), recorder.stderr)
        XCTAssertTrue(recorder.waitFor(#""Server A" is no longer announced; staying while its connection lasts"#), recorder.stderr)
        try sandbox.startDaemon()
        if !announce.isRunning { _ = try sandbox.publish("Server A", port: port) }
        XCTAssertTrue(recorder.waitFor("avahi-daemon reached", times: 2), recorder.stderr)
        XCTAssertTrue(recorder.waitFor(#"server found: "Server A""#, times: 2), recorder.stderr)
        XCTAssertEqual(server.count(introduction), 1, "never disconnected: \(sandbox.logs)")
        XCTAssertEqual(recorder.count("lost the connection to avahi-daemon"), 1)
        XCTAssertEqual(recorder.count(notRunning), 1)
        XCTAssertEqual(recorder.stop(SIGINT, timeout: 30), 0, recorder.stderr)
    }

    // MARK: - the browser in this process

    /// Runs the main loop (Avahi's callbacks arrive there) until `condition` or `seconds`.
    @discardableResult
    private func pump(_ seconds: Double, until condition: @escaping () -> Bool) -> Bool {
        let loop = MainLoop()
        let poll = MainLoop.every(0.05) {
            if condition() { loop.quit() }
            return true
        }
        if !condition() { loop.run(forAtMost: seconds) }
        poll.cancel()
        return condition()
    }

    func testBrowserReportsServersComingAndGoingAndTheDaemonLeavingAndReturning() throws {
        // libdbus reads this once per process: before any browser starts, so this process only ever sees the private bus.
        setenv("DBUS_SYSTEM_BUS_ADDRESS", AvahiSandbox.busAddress, 1)
        let sandbox = try makeSandbox(daemon: false)
        sandbox.stopBus()
        let browser = ServerBrowser(maximumBackoff: 1)
        var events: [DiscoveryEvent] = []
        var statuses: [ServerBrowser.DaemonStatus] = []
        browser.onEvent = { events.append($0) }
        browser.onDaemonStatusChange = { statuses.append($0) }
        defer { browser.stop() }
        browser.start()
        // No D-Bus at all: retried with backoff, reported once.
        guard case .unavailable(let noBus) = browser.daemonStatus else {
            return XCTFail("no D-Bus yet, but: \(browser.daemonStatus)")
        }
        XCTAssertTrue(noBus.contains("the D-Bus system bus at \(AvahiSandbox.busAddress) does not answer"), noBus)
        pump(2.5) { false }
        XCTAssertEqual(statuses.count, 1, "\(statuses)")

        // D-Bus without avahi-daemon: waits for the daemon's name to appear.
        try sandbox.startBus()
        XCTAssertTrue(pump(5) { browser.daemonStatus.description.contains("avahi-daemon is not running") }, "\(browser.daemonStatus)")

        try sandbox.startDaemon()
        XCTAssertTrue(pump(10) { browser.daemonStatus == .running }, "\(browser.daemonStatus)")
        let alpha = try sandbox.publish("Alpha", port: 1234, txt: ["version=1"])
        XCTAssertTrue(pump(10) { browser.servers.first?.addresses.contains("127.0.0.1") == true }, "\(browser.servers)")
        let found = try XCTUnwrap(browser.servers.first)
        XCTAssertEqual(found.name, "Alpha")
        XCTAssertEqual(found.host, "allspark-sandbox.local")
        XCTAssertEqual(found.port, 1234)
        XCTAssertEqual(found.txt, ["version": "1"])
        guard case .added(let added)? = events.first else { return XCTFail("\(events)") }
        XCTAssertEqual(added.name, "Alpha")

        alpha.stop()
        XCTAssertTrue(pump(10) { browser.servers.isEmpty }, "\(browser.servers)")
        XCTAssertEqual(events.last.map { if case .removed(let s) = $0 { return s.name } else { return "" } }, "Alpha")

        _ = try sandbox.publish("Beta", port: 2345)
        XCTAssertTrue(pump(10) { browser.servers.map(\.name) == ["Beta"] }, "\(browser.servers)")
        sandbox.stopDaemon()
        XCTAssertTrue(pump(10) { if case .unavailable = browser.daemonStatus { return true } else { return false } })
        XCTAssertTrue(browser.servers.isEmpty, "what the daemon said is forgotten with it")
        XCTAssertEqual(events.last.map { if case .removed(let s) = $0 { return s.name } else { return "" } }, "Beta")

        try sandbox.startDaemon()
        _ = try sandbox.publish("Beta", port: 2345)   // avahi-publish exits when its daemon goes away
        XCTAssertTrue(pump(15) { browser.servers.map(\.name) == ["Beta"] }, "\(browser.servers)\n\(sandbox.logs)")
        XCTAssertEqual(statuses.map(\.description).filter { $0 == "running" }.count, 2, "\(statuses)")
    }
}
