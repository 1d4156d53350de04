import Foundation
import PackagePlugin

/// Embeds the files of a target's `Resources` folder in its code (as
/// `EmbeddedResources.text["name"]`) at build time. Why not SwiftPM resources
/// and `Bundle.module`: that bundle is a folder that must sit beside the
/// executable (`/usr/bin/…resources` in a package), and a missing one is a
/// fatalError at the first page view; an appliance's single static binary
/// should carry its page.
@main
struct EmbedResources: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let folder = target.directory.appending("Resources")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
        let inputs = names.filter { !$0.hasPrefix(".") }.sorted().map { folder.appending($0) }
        guard !inputs.isEmpty else { return [] }
        let output = context.pluginWorkDirectory.appending("EmbeddedResources.swift")
        return [.buildCommand(displayName: "Embedding \(inputs.count) resource file(s) in \(target.name)",
                              executable: try context.tool(named: "embed-resources").path,
                              arguments: [output.string] + inputs.map(\.string),
                              inputFiles: inputs, outputFiles: [output])]
    }
}
