import ArgumentParser
import FaceBlur
import Foundation
import ProcessArguments
import GLibSupport
import Logging
import RecorderCore

struct Blur: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pixelate every face in a video file (the recorder's own privacy stage, offline).",
        discussion: """
            The output container follows its extension (.mp4 or .mov); the frame count \
            is kept. The result is written to a hidden file beside the output and gets \
            its name only once complete and playable; the output may never be the \
            input, and an existing output is replaced only with --force.

            Stage options come from [privacy] of --config (default: \
            config/default.toml's defaults) and --set. Unless set, the search is \
            denser than live, which has a deadline (detect_width 640, whole_every 4, \
            tile_every 16, tile_scale 1.25): small faces in a crowd are found, and \
            faces found late are traced back through the frames held. Example:
              allspark-recorder blur in.mp4 out.mp4 \\
                --set privacy.mode=fill --set privacy.threshold=0.25
            """)

    @Argument(help: "The video to anonymise.")
    var input: String

    @Argument(help: "Where to write the result (.mp4 or .mov).")
    var output: String

    @Option(help: "Take [privacy] settings (and the model path) from this config file.")
    var config: String?

    @Option(help: "x264 speed preset: ultrafast (default; fastest, biggest files) … veryslow. Same picture quality; slower presets make smaller files.")
    var encoderPreset = "ultrafast"

    @Flag(help: "Replace the output if it exists (never the input).")
    var force = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let privacy: RecorderConfig.Privacy
        do {
            privacy = try Self.privacySettings(config: config, overrides: common.overrides)
        } catch { fail("\(error)") }
        let showProgress = isatty(STDERR_FILENO) != 0
        // Interrupted: the unfinished result is removed, nothing appears under the output's name.
        // (GLib delivers these on the main loop that runs the blur, not in signal context.)
        let interrupts = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")].map { signal, name in
            MainLoop.onSignal(signal) {
                let removed = OutputFile.discardAllPending()
                fail("interrupted by \(name): \(output) was not written\(removed.isEmpty ? "" : " (removed \(removed.joined(separator: ", ")))")",
                     code: 128 + signal)
            }
        }
        defer { interrupts.forEach { $0.cancel() } }
        let report: OfflineBlur.Report
        do {
            report = try OfflineBlur.run(input: input, output: output, settings: FaceBlurSettings(privacy, offline: true),
                                         encoderPreset: encoderPreset, force: force) { p in
                guard showProgress else { return }
                let total = p.duration.map { String(format: " / %.1f s", $0) } ?? ""
                let fps = p.elapsed > 0 ? Double(p.frames) / p.elapsed : 0
                FileHandle.standardError.write(Data(String(format: "\r%6d frames  %.1f s%@  %.1f fps ", p.frames, p.position, total, fps).utf8))
            }
        } catch { fail("\(error)") }
        if showProgress { FileHandle.standardError.write(Data("\n".utf8)) }
        let c = report.counters
        let summary = "\(output): \(report.framesOut) of \(report.framesIn) frames in \(String(format: "%.1f", report.seconds)) s "
            + "(\(String(format: "%.1f", report.framesPerSecond)) fps); faces hidden in \(c.framesWithFaces) frames; "
            + "\(c.wholeFramePasses) whole-frame and \(c.tilePasses) tile detections"
        print(summary)  // user-facing
        if report.framesOut != report.framesIn { throw ExitCode(1) }
    }

    /// `[privacy]` from a config file, or the defaults when none is given.
    static func privacySettings(config: String?, overrides: [String]) throws -> RecorderConfig.Privacy {
        if let config { return try ConfigLoader.load(file: config, overrides: overrides).privacy }
        // No config: the defaults, with the model in the repository's models/ next to the binary's checkout,
        // or, installed from the Debian package, the one it ships.
        let document = try TOMLDocument(parsing: "[recording]\npipeline = \"unused\"", file: "(defaults)")
        let base = URL(fileURLWithPath: ProcessArguments.programName).resolvingSymlinksInPath()
        var folder = base.deletingLastPathComponent()
        while folder.path != "/", !FileManager.default.fileExists(atPath: folder.appendingPathComponent("models").path) {
            folder.deleteLastPathComponent()
        }
        let model = folder.path == "/" ? "/usr/share/allspark-recorder/models/centerface.onnx"
            : folder.appendingPathComponent("models/centerface.onnx").path
        return try ConfigLoader.make(document: document, file: "(defaults)",
                                     overrides: ["privacy.model=\(model)"] + overrides,
                                     hostName: "unused").privacy
    }
}
