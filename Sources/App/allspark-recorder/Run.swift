import AllSparkProtocol
import ArgumentParser
import Foundation
import GLibSupport
import Console
import Logging
import RecorderService
import SystemdSupport

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record continuously until Ctrl-C / SIGTERM (the current chunk is finished first).",
        discussion: """
            SIGHUP re-reads the config file: chunk length, container and buffer size \
            change at the next chunk without stopping capture; a changed pipeline \
            restarts it after the current chunk.
            """)

    @Option(help: "The config file (TOML), e.g. config/demo.toml.")
    var config: String

    @Option(help: "Stop after this many seconds instead of running until a signal.")
    var duration: Double?

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.run")
        let service: RecorderService
        do {
            service = try RecorderService(settings: ServiceSettings(configFile: config, overrides: common.overrides), logger: logger,
                                          systemd: try SystemdNotifier.fromEnvironment())
        } catch {
            fail("\(error)")
        }
        let storage = service.configuration.recording.storageDirectory
        let pipeline = service.configuration.recording.pipeline
        // Only frames reaching the chunks count as recording: until then the
        // user is told that the recorder waits for the source.
        var said = ""
        let say = { (text: String) in
            guard text != said else { return }
            said = text
            StandardError.write(text, level: .notice)
        }
        // Set once the console listens: where to watch, said with "Recording to".
        var watchAt = ""
        service.onRecorderStateChange = { state in
            switch state {
            case .recording:
                say("Recording to \(storage)\(watchAt) — press Ctrl-C to stop.")
            case .waitingForSource, .waitingToRetry:
                if said.isEmpty { say("Waiting for the source (\(pipeline)) — press Ctrl-C to stop.") }
            case .stopped, .stopping:
                break
            }
        }
        do {
            try service.start()
        } catch {
            fail("\(error)")
        }
        // The console is a window on the recorder: when it cannot listen, recording goes on without it.
        var console: Console?
        if service.configuration.console.enabled {
            do {
                let started = try Console(service: service)
                console = started
                watchAt = "; watch it at \(started.whereToWatch)"
            } catch {
                logger.error("console: \(error); recording goes on without it ([console] in \(config))")
            }
        }
        let loop = MainLoop()
        let shutdown = { (reason: String) in
            console?.stop()
            service.stop(reason: reason) { loop.quit() }
        }
        // Keep the signal sources alive for the life of the loop.
        let sources = [
            MainLoop.onSignal(SIGINT) { shutdown("interrupted") },
            MainLoop.onSignal(SIGTERM) { shutdown("terminated") },
            MainLoop.onSignal(SIGHUP) { service.reload() },
        ]
        if let duration {
            MainLoop.after(duration) { shutdown("--duration \(duration) s reached") }
        }
        loop.run()
        _ = sources
        logger.notice("stopped: \(service.summary)")
        guard let recorder = service.recorder else { throw ExitCode(1) }
        var exitCode: Int32 = recorder.state == .stopped ? 0 : 1
        // A timed run is a check that recording works: nothing recorded is a failure, with the reason.
        if let duration, recorder.chunksRecorded == 0 {
            let reason = recorder.lastProblem ?? "no frame reached the chunks (waiting for the source)"
            logger.error("recorded nothing in \(String(format: "%g", duration)) s: \(reason)")
            exitCode = 1
        }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}
