import ArgumentParser
import Foundation
import Recorder
import RecorderCore

struct CheckPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-pipeline",
        abstract: "Check a pipeline description: syntax, installed elements and the blur_in/blur_out/chunks contract.",
        discussion: """
            Variables come from --config's [pipeline.vars] and from --set pipeline.vars.NAME=VALUE:
              allspark-recorder check-pipeline pipelines/v4l2.pipeline --set pipeline.vars.device=/dev/video0 \\
                --set pipeline.vars.width=1280 --set pipeline.vars.height=720 --set pipeline.vars.framerate=30
            """)

    @Argument(help: "The pipeline file.")
    var file: String

    @Option(help: "Take [pipeline.vars] from this config file.")
    var config: String?

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        var variables: [String: String] = [:]
        if let config {
            do {
                variables = try ConfigLoader.load(file: config, overrides: common.overrides).pipelineVariables
            } catch { fail("\(error)") }
        }
        for override in common.overrides where override.hasPrefix("pipeline.vars.") {
            let pair = override.dropFirst("pipeline.vars.".count).split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard pair.count == 2 else { fail("--set \(override): expected pipeline.vars.NAME=VALUE") }
            variables[String(pair[0])] = String(pair[1])
        }
        do {
            let loaded = try PipelineLoader.load(file: file, variables: variables)
            print("\(file): OK — blur_in, blur_out and chunks found; \(loaded.template.description)")  // user-facing
        } catch {
            fail("\(error)")
        }
    }
}
