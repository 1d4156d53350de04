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

            To study the stage (bench/replay-corpus): --record-detections keeps every \
            network search of a run; --replay-detections runs the stage again on those \
            answers instead of the network, in seconds, identically offline (with --live, \
            each answer takes as long as the search did); --hidden-regions writes what \
            was hidden on each frame.
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

    @Flag(help: "Play the file in real time through the live stage, as the recorder would take it from a camera (live defaults, deadlines, late frames): what live recording would hide.")
    var live = false

    @Option(help: ArgumentHelp("Write every network search (frame, area, faces found, time) to this file, one JSON line each, to replay later.",
                               valueName: "file"))
    var recordDetections: String?

    @Option(help: ArgumentHelp("Answer the searches from a file --record-detections wrote instead of running the network: the stage's scheduling, tracking and hiding on the same evidence, in seconds. Searches the recorded run did not make are answered from its other searches of the frame and counted.",
                               valueName: "file"))
    var replayDetections: String?

    @Option(help: ArgumentHelp("Write the regions hidden on each frame to this file, one JSON line per frame: {\"frame\": N, \"regions\": [[x, y, width, height], ...]}.",
                               valueName: "file"))
    var hiddenRegions: String?

    @Option(help: ArgumentHelp("Score the regions hidden against a clip's faces (a JSON file: width, height, faces per frame, as bench/video_faces.py writes): face-frames covered, frames hiding beyond faces.",
                               valueName: "file"))
    var scoreAgainst: String?

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
        let evidence: DetectionEvidence.Role?
        let regionLog: HiddenRegionLog?
        let truth: HidingScore.Truth?
        do {
            // Side files follow the output's rules: never the input (or the output), replaced only with --force.
            for case let (option, path?) in [("--record-detections", recordDetections), ("--hidden-regions", hiddenRegions)] {
                if [input, output].contains(where: { OutputFile.sameFile($0, path) }) {
                    throw ValidationError("\(option) \(path) is the same file as the input or the output")
                }
                if FileManager.default.fileExists(atPath: path), !force {
                    throw ValidationError("\(option) \(path) already exists; use --force to replace it")
                }
            }
            switch (recordDetections, replayDetections) {
            case (.some, .some): throw ValidationError("--record-detections and --replay-detections exclude each other")
            case (.some(let path), nil): evidence = .record(try DetectionEvidence.Recorder(path: path))
            case (nil, .some(let path)): evidence = .replay(try DetectionEvidence.Replay(path: path))
            case (nil, nil): evidence = nil
            }
            regionLog = try hiddenRegions.map { try HiddenRegionLog(path: $0) }
            truth = try scoreAgainst.map { try HidingScore.Truth(path: $0) }
        } catch { fail("\(error)") }
        var score = HidingScore()   // (the stage's streaming thread adds to it; read after the run)
        let observe: ((Int, [FaceRect]) -> Void)? = regionLog == nil && truth == nil ? nil : { frame, regions in
            regionLog?.write(frame: frame, regions: regions)
            if let truth { score.add(frame: frame, faces: truth.faces(onFrame: frame), hidden: regions, width: truth.width, height: truth.height) }
        }
        let report: OfflineBlur.Report
        do {
            report = try OfflineBlur.run(input: input, output: output, settings: FaceBlurSettings(privacy, offline: !live),
                                         encoderPreset: encoderPreset, force: force, live: live, evidence: evidence,
                                         observeHidden: observe) { p in
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
        var details: [String] = []
        if case .record(let recorder) = evidence { details.append("\(recorder.searches) searches recorded in \(recorder.path)") }
        if let replayed = report.replayed {
            details.append("\(replayed.exact) searches replayed as recorded, \(replayed.approximate) not in the record (answered from the frame's other searches)")
        }
        if truth != nil { details.append("\(score)") }
        print(summary + details.map { "; " + $0 }.joined())  // user-facing
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

/// `--hidden-regions`: each frame's hidden regions, one JSON line per frame.
///
/// Threading: the stage's streaming thread writes it (`observeHidden`).
final class HiddenRegionLog {
    private struct Line: Encodable {
        var frame: Int
        var regions: [[Double]]
    }
    private let file: FileHandle
    private let encoder = JSONEncoder()

    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw ValidationError("--hidden-regions \(path): cannot write it")
        }
        self.file = file
        encoder.outputFormatting = .sortedKeys
    }

    deinit { try? file.close() }

    func write(frame: Int, regions: [FaceRect]) {
        let line = Line(frame: frame, regions: regions.map { [$0.x, $0.y, $0.width, $0.height].map { ($0 * 100).rounded() / 100 } })
        if let data = try? encoder.encode(line) { file.write(data + Data("\n".utf8)) }
    }
}
