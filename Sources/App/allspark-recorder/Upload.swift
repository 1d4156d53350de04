import AllSparkProtocol
import ArgumentParser
import Foundation
import Logging
import RecorderCore
import RecorderService

struct Upload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send the recorded chunks of a time range to the AllSpark server now (a local user's request).",
        discussion: """
            Uses the config's [server] and storage folder; the recorder may keep \
            running meanwhile. To send the last five minutes:
              allspark-recorder upload --from -300 \\
                --config /etc/allspark-recorder/recorder.toml

            Exits 0 when every chunk arrived, 1 otherwise.
            """)

    @Option(help: "The config file (its [server] and recording.storage_dir are used).")
    var config: String

    // .unconditional: "-300" (five minutes ago) is a value, not an option.
    @Option(parsing: .unconditional, help: "Start of the range: epoch seconds, -300 for five minutes ago, or ISO 8601.")
    var from: String

    // .unconditional: "-300" (five minutes ago) is a value, not an option.
    @Option(parsing: .unconditional, help: "End of the range (same forms); default now.")
    var to: String?

    @Option(help: "Give up after this many seconds.")
    var timeout: Double = 600

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.upload")
        let start = try parseTime(from, option: "--from")
        let end = try to.map { try parseTime($0, option: "--to") } ?? Date().timeIntervalSince1970
        guard start < end else { throw ValidationError("--from must be before --to") }
        let outcome: UploadJob.Outcome
        do {
            let configuration = try ConfigLoader.load(file: config, overrides: common.overrides)
            outcome = try UploadJob(config: configuration, from: start, to: end, timeout: timeout).run(logger: logger)
        } catch {
            fail("\(error)")
        }
        logger.notice("\(outcome.received) of \(outcome.total) chunk(s) received by \(outcome.server)\(outcome.failed > 0 ? ", \(outcome.failed) failed" : "")")
        if !outcome.finished { fail("stopped before every chunk was sent") }
        if outcome.received < outcome.total { throw ExitCode(1) }
    }
}
