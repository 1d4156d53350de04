import ArgumentParser
import Foundation
import Recorder
import RecorderCore

struct CheckPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-pipeline",
        abstract: "Check a pipeline description: syntax, installed elements, the blur_in/blur_out/chunks contract and the privacy boundary.",
        discussion: """
            Variables come from --config's [pipeline.vars] and from \
            --set pipeline.vars.NAME=VALUE:
              allspark-recorder check-pipeline pipelines/v4l2.pipeline \\
                --set pipeline.vars.device=/dev/video0 \\
                --set pipeline.vars.width=1280 --set pipeline.vars.height=720 \\
                --set pipeline.vars.framerate=30
            """)

    @Argument(help: "The pipeline file.")
    var file: String

    @Option(help: "Take [pipeline.vars] from this config file.")
    var config: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        var variables: [String: String] = [:]
        // As `run` would: the privacy boundary is checked unless face blurring is off.
        var faceBlur = true
        if let config {
            do {
                let loaded = try ConfigLoader.load(file: config, overrides: common.overrides)
                variables = loaded.pipelineVariables
                faceBlur = loaded.privacy.faceBlur
            } catch { fail("\(error)") }
        } else if let value = common.overrides.last(where: { $0.hasPrefix("privacy.face_blur=") }) {
            switch value.dropFirst("privacy.face_blur=".count).lowercased() {
            case "true", "yes", "on", "1": faceBlur = true
            case "false", "no", "off", "0": faceBlur = false
            default: fail("--set \(value): expected true or false")
            }
        }
        for override in common.overrides where override.hasPrefix("pipeline.vars.") {
            let pair = override.dropFirst("pipeline.vars.".count).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { fail("--set \(override): expected pipeline.vars.NAME=VALUE") }
            variables[String(pair[0])] = String(pair[1])
        }
        do {
            let loaded = try PipelineLoader.load(file: file, variables: variables, privacyBoundary: faceBlur)
            let boundary = faceBlur ? "every frame passes blur_in → blur_out (the RTSP stream is taken after it, where chunks are fed)" : "privacy boundary not checked (privacy.face_blur = false)"
            let audio = loaded.audioSink == nil ? "no audio (no audio_in)" : "raw audio into audio_in"
            print("\(file): OK — blur_in, blur_out and chunks found; \(boundary); \(audio); \(loaded.template.redacted(loaded.template.description))")  // user-facing
        } catch {
            fail("\(error)")
        }
    }
}
