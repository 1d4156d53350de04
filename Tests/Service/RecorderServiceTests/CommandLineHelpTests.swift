import Foundation
import XCTest
import RecorderTestSupport

/// `--help` is where a newcomer starts. argument-parser wraps each line of a
/// command's description at the terminal's width (80 columns without a
/// terminal), so descriptions broken by hand into longer lines, or example
/// commands longer than that, came out with sentences broken after two words
/// and commands cut in the middle, their rest at the start of a line.
final class CommandLineHelpTests: XCTestCase {
    func testEveryHelpPageReadsCleanlyInEightyColumns() throws {
        let commands = [[], ["run"], ["pair"], ["set-password"], ["check-pipeline"], ["check-server"], ["chunks"],
                        ["upload"], ["blur"], ["discover"]]
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        for command in commands {
            let result = try runTool(recorderExecutable, command + ["--help"], environment: environment)
            XCTAssertEqual(result.status, 0, result.output)
            let page = (["allspark-recorder"] + command + ["--help"]).joined(separator: " ")
            // The overview and discussion: everything before the usage line (which is long by design).
            let text = result.output.components(separatedBy: "\nUSAGE:")[0]
            XCTAssertTrue(text.hasPrefix("OVERVIEW: "), "\(page): \(result.output)")
            let lines = text.components(separatedBy: "\n")
            for (line, next) in zip(lines, lines.dropFirst()) {
                XCTAssertLessThanOrEqual(line.count, 80, "\(page): \(line)")
                let continues = next.first.map { $0.isLowercase || $0 == "-" } ?? false
                if line.hasPrefix("  ") {
                    // An example command: it goes on indented (after a trailing backslash) or ends.
                    XCTAssertFalse(continues, "\(page): an example cut by the wrapping: \"\(line)\" / \"\(next)\"")
                } else if !line.isEmpty {
                    // Prose: a short line followed by the rest of its sentence was broken by hand.
                    XCTAssertFalse(line.count < 40 && continues, "\(page): a sentence broken early: \"\(line)\" / \"\(next)\"")
                }
            }
        }
    }
}
