import ArgumentParser
import Foundation
import GStreamerSupport
import Logging
import Recorder
import RecorderCore

@main
struct AllsparkRecorder: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allspark-recorder",
        abstract: "Records a camera through an editable GStreamer pipeline into a ring buffer of time-based chunks.",
        discussion: """
            Start with the demo, which needs no camera:
              allspark-recorder run --config config/demo.toml
            Chunks appear as chunk_<start epoch ms>.mp4 in the storage folder; list them with
              allspark-recorder chunks --storage recordings/demo
            Any config key can be overridden: --set recording.chunk_duration_ms=10000
            AllSpark servers announced on the network (Avahi) are listed by
              allspark-recorder discover
            """,
        version: ProductVersion.current,
        subcommands: [Run.self, Pair.self, SetPassword.self, CheckPipeline.self, CheckServer.self, Chunks.self, Upload.self, Blur.self, Discover.self],
        defaultSubcommand: nil)
}

/// Options every subcommand shares.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("set"), help: ArgumentHelp(
        "Override a config key, e.g. --set recording.video_format=mov or --set pipeline.vars.device=/dev/video1 (repeatable; --set server.host= sets it empty).",
        valueName: "section.key=value"))
    var overrides: [String] = []

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func bootstrapLogging() { Self.bootstrapLogging(level: logLevel) }

    /// Logs to stderr (journald under systemd) at `level`.
    static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Prints a user-facing error and exits non-zero.
func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data(("error: " + message + "\n").utf8))
    exit(code)
}
