import XCTest
import RecorderTestSupport

/// The test server as a process of its own (used inside network namespaces)
/// leaves nothing in /tmp when it is stopped with SIGTERM.
final class TestServerProcessTests: XCTestCase {
    func testSIGTERMRemovesTheUploadFolder() throws {
        let executable = URL(fileURLWithPath: recorderExecutable).deletingLastPathComponent().appendingPathComponent("allspark-test-server")
        let process = Process()
        process.executableURL = executable
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(10)
        while !text.contains("uploads "), Date() < deadline {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("uploads ") }, text)
        let folder = String(line.dropFirst("uploads ".count))
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder))
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder), "\(folder) removed at exit")
    }
}
