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

    @Option(help: ArgumentHelp("Stop after this many seconds of recording instead of running until a signal.",
                               discussion: "Counted from the first frame recorded. A source that sends nothing ends the run as long after the pipeline started, as a failure."))
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
        // --duration is recording time: it counts from the first frame recorded, so that the
        // start's check of the storage folder (long for thousands of files) does not eat into it.
        // Until then, a source that sends nothing ends the run as long after the pipeline started.
        var endRun: (String) -> Void = { _ in }
        var durationTimer: MainLoop.Source?
        var timingRecording = false
        func timeRun(_ duration: Double, fromRecording: Bool) {
            guard !timingRecording else { return }
            if !fromRecording, durationTimer != nil { return }
            timingRecording = fromRecording
            durationTimer?.cancel()
            durationTimer = MainLoop.after(duration) { endRun("--duration \(duration) s reached") }
        }
        service.onRecorderStateChange = { state in
            if let duration {
                switch state {
                case .recording: timeRun(duration, fromRecording: true)
                case .waitingToRetry: timeRun(duration, fromRecording: false)
                case .waitingForSource, .stopped, .stopping: break
                }
            }
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
            // The stream's own password (made and logged once when missing): before the stream starts.
            try StreamAuth.install(on: service)
            try service.start()
        } catch {
            fail("\(error)")
        }
        if let duration { service.recorder?.onPipelineStarted = { timeRun(duration, fromRecording: false) } }
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
            durationTimer?.cancel()
            console?.stop()
            service.stop(reason: reason) { loop.quit() }
        }
        endRun = shutdown
        // Keep the signal sources alive for the life of the loop.
        let sources = [
            MainLoop.onSignal(SIGINT) { shutdown("interrupted") },
            MainLoop.onSignal(SIGTERM) { shutdown("terminated") },
            MainLoop.onSignal(SIGHUP) { service.reload() },
        ]
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
