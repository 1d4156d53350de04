import ArgumentParser
import Foundation
import RecorderCore
import Storage

struct Chunks: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the recorded chunks in a storage folder, optionally those overlapping a time range.")

    @Option(help: "The storage folder (recording.storage_dir).")
    var storage: String

    // .unconditional: "-300" (five minutes ago) is a value, not an option.
    @Option(parsing: .unconditional, help: "Only chunks ending after this time (epoch seconds, -300 for five minutes ago, or ISO 8601, e.g. 2026-11-21T10:00:00Z).")
    var from: String?

    // .unconditional: "-300" (five minutes ago) is a value, not an option.
    @Option(parsing: .unconditional, help: "Only chunks starting before this time (epoch seconds or ISO 8601).")
    var to: String?

    @Flag(help: "Print a JSON array of {file, start, end, size, format}, with clockSynchronized (false: recorded before the clock was synchronised) and sequence (recording order) where known.")
    var json = false

    func run() throws {
        let start = try from.map { try parseTime($0, option: "--from") } ?? -.infinity
        let end = try to.map { try parseTime($0, option: "--to") } ?? .infinity
        let records: [ChunkRecord]
        do {
            records = try ChunkCatalog.readIndex(of: URL(fileURLWithPath: storage)).filter { $0.overlaps(from: start, to: end) }
        } catch {
            StandardError.write("error: \(error)", level: .error)
            throw ExitCode(1)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(records), as: UTF8.self))  // user-facing
            return
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        print("FILE                           START (UTC)                 DURATION        SIZE")  // user-facing
        for r in records {
            let line = r.file.padding(toLength: 31, withPad: " ", startingAt: 0)
                + formatter.string(from: Date(timeIntervalSince1970: r.start)).padding(toLength: 28, withPad: " ", startingAt: 0)
                + String(format: "%7.3f s %11d", r.duration, r.size)
                + (r.clockSynchronized == false ? "  clock not synchronised" : "")
            print(line)  // user-facing
        }
        let total = records.reduce(Int64(0)) { $0 + $1.size }
        print("\(records.count) chunks, \(String(format: "%.1f", Double(total) / 1_048_576)) MiB")  // user-facing
    }
}

/// A time given on the command line (`QueryTime`), or a usage error naming the option.
func parseTime(_ text: String, option: String) throws -> Double {
    guard let time = QueryTime.parse(text) else { throw ValidationError("\(option) \(text): expected \(QueryTime.expected)") }
    return time
}
