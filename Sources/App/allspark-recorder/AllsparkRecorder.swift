import ArgumentParser
import Console
import Foundation
import GStreamerSupport
import Logging
import ProcessArguments
import Recorder
import RecorderCore
import SystemdSupport

@main
struct AllsparkRecorder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allspark-recorder",
        abstract: "Records a camera through an editable GStreamer pipeline into a ring buffer of time-based chunks.",
        discussion: """
            Start with the demo, which needs no camera:
              allspark-recorder run --config config/demo.toml
            Chunks appear as chunk_<start epoch ms>.mp4 in the storage folder; list \
            them with:
              allspark-recorder chunks --storage recordings/demo
            Any config key can be overridden: --set recording.chunk_duration_ms=10000
            AllSpark servers announced on the network (Avahi) are listed by:
              allspark-recorder discover
            """,
        version: ProductVersion.current,
        subcommands: [Run.self, Pair.self, SetPassword.self, CheckPipeline.self, CheckServer.self, Chunks.self, Upload.self, Blur.self, Discover.self],
        defaultSubcommand: nil)

    /// Parses the arguments the kernel passed, not the runtime's view of them
    /// (lost when anything set an environment variable before main).
    static func main() {
        main(ProcessArguments.afterProgramName)
    }
}

/// Options every subcommand shares.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("set"), help: ArgumentHelp(
        "Override a config key, e.g. --set recording.video_format=mov or --set pipeline.vars.device=/dev/video1 (repeatable; --set server.host= sets it empty).",
        valueName: "section.key=value"))
    var overrides: [String] = []

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log lines as journald (<N> priority prefixes), plain (timestamped) or auto (journald when stderr is the journal).")
    var logFormat: LogFormat = .auto

    func bootstrapLogging() { Self.bootstrapLogging(level: logLevel, format: logFormat) }

    /// Logs to stderr at `level`: under systemd with each line's priority for journald.
    static func bootstrapLogging(level: Logger.Level, format: LogFormat = .auto) {
        let format = format.resolved()
        StandardError.format = format
        LoggingSystem.bootstrap { label in
            let output: LogHandler
            switch format {
            case .journald:
                var handler = JournaldLogHandler(label: label)
                handler.logLevel = level
                output = handler
            case .plain, .auto:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                output = handler
            }
            // Also into the recent-log ring the console's log view shows (same level as the output).
            return MultiplexLogHandler([output, RecentLogs.shared.handler(label: label, level: level)])
        }
    }
}

/// Lines written to stderr by the command itself (status lines, errors), in the log's format,
/// so that under journald they carry a priority too.
enum StandardError {
    /// Set with the logging; before that (an argument error), decided from the environment.
    nonisolated(unsafe) static var format = LogFormat.auto.resolved()

    static func write(_ text: String, level: Logger.Level) {
        let line = format == .journald ? JournaldLogHandler.prefixed(text, level: level) : text + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
extension LogFormat: ExpressibleByArgument {}

/// Prints a user-facing error and exits non-zero, at once: stdio is flushed, but the C++
/// libraries' global destructors are not run. Other threads may still be inside ONNX Runtime or
/// OpenCV (a `blur` interrupted mid-search), and `exit` tore those libraries down under them: the
/// process died of SIGSEGV instead of exiting with 128 + the signal (`blur` interrupted 0.3 s in:
/// 6 of 20 runs of a debug build, 1 of 20 of a release one; `BlurCommandTests`, fresh-clone CI).
func fail(_ message: String, code: Int32 = 1) -> Never {
    StandardError.write("error: " + message, level: .error)
    fflush(nil)
    _exit(code)
}
