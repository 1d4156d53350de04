import ArgumentParser
import Foundation
import GLibSupport
import Logging
import RecorderService
import ServerLink

struct Pair: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pair with an AllSpark server by showing the camera the QR code on the server's page.",
        discussion: """
            Runs the recorder with this config (it records as `run` does) and looks for \
            a QR code holding host:port (optionally ws://, wss://, http://, https://) in \
            the live picture, before the privacy stage; those frames are never recorded. \
            The first code whose server answers GET /api/health with "status":"ok" \
            becomes the server host, kept in the storage folder (server-link.json) over \
            the config's server.host. Stop the running service first: the camera can \
            have one user at a time.

            Exits 0 once paired (after finishing the current chunk), 1 when no server \
            was paired in time.
            """)

    @Option(help: "The config file (TOML), e.g. /etc/allspark-recorder/config/recorder.toml.")
    var config: String

    @Option(help: "Give up after this many seconds.")
    var timeout: Double = 120

    @OptionGroup var common: CommonOptions

    /// How long to wait after pairing for the link to connect before stopping.
    static let connectWaitSeconds = 10.0

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.pair")
        let service: RecorderService
        do {
            service = try RecorderService(settings: ServiceSettings(configFile: config, overrides: common.overrides), logger: logger)
        } catch {
            fail("\(error)")
        }
        var paired: String?
        let loop = MainLoop()
        let shutdown = { (reason: String) in service.stop(reason: reason) { loop.quit() } }
        service.onPaired = { host in
            paired = host
            print("paired with \(host)")  // user-facing
            // Stay until the link is up (it says hello to the server), for a few seconds at most.
            let deadline = Date().addingTimeInterval(Self.connectWaitSeconds)
            MainLoop.every(0.1) {
                let state = service.link?.state
                var connected = false
                if case .connected = state { connected = true }
                if !connected && Date() < deadline { return true }
                if !connected {
                    print("not connected yet (\(state.map { "\($0)" } ?? "no link")); the service connects at its next start")  // user-facing
                }
                shutdown("paired")
                return false
            }
        }
        do {
            try service.start()
            // With server.pair_by_qr and no host the service is already looking; asking again changes nothing.
            try service.pairByQRCode()
        } catch {
            fail("\(error)")
        }
        FileHandle.standardError.write(Data("Show the camera the QR code on the AllSpark server's page (up to \(String(format: "%g", timeout)) s; Ctrl-C stops).\n".utf8))
        let sources = [
            MainLoop.onSignal(SIGINT) { shutdown("interrupted") },
            MainLoop.onSignal(SIGTERM) { shutdown("terminated") },
        ]
        MainLoop.after(timeout) { if paired == nil { shutdown("no server paired within \(String(format: "%g", timeout)) s") } }
        loop.run()
        _ = sources
        guard paired != nil else {
            fail("no QR code naming a working AllSpark server was seen within \(String(format: "%g", timeout)) s")
        }
    }
}
