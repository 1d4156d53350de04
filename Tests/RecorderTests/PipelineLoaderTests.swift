import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

final class PipelineLoaderTests: XCTestCase {
    let vars = ["width": "320", "height": "240", "framerate": "30", "bitrate_kbps": "500",
                "device": "/dev/video0", "input": "/tmp/in.mp4"]

    func testShippedPipelinesSatisfyTheContract() throws {
        for name in ["test", "v4l2", "file"] {
            let loaded = try PipelineLoader.load(file: repoPath("pipelines/\(name).pipeline"), variables: vars)
            XCTAssertEqual(loaded.captureSink.element.factoryName, "appsink", name)
            XCTAssertEqual(loaded.processedSource.element.factoryName, "appsrc", name)
            XCTAssertEqual(loaded.chunkSink.factoryName, "splitmuxsink", name)
        }
    }

    func write(_ text: String) throws -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        let file = dir.file("broken.pipeline")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return (dir, file.path)
    }

    func assertFails(_ text: String, line: Int?, contains fragments: [String], file: StaticString = #filePath, sourceLine: UInt = #line) throws {
        let (dir, path) = try write(text)
        XCTAssertThrowsError(try PipelineLoader.load(file: path, variables: vars), file: file, line: sourceLine) { error in
            let message = "\(error)"
            XCTAssertTrue(message.hasPrefix(line.map { "\(path):\($0): " } ?? "\(path): "), message, file: file, line: sourceLine)
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment), "'\(message)' should contain '\(fragment)'", file: file, line: sourceLine)
            }
        }
        _ = dir
    }

    let good = """
        videotestsrc is-live=true
          ! video/x-raw,width=320,height=240
          ! appsink name=blur_in
        appsrc name=blur_out
          ! videoconvert ! x264enc
          ! h264parse
          ! splitmuxsink name=chunks
        """

    func testMisspeltElementNamesTheLine() throws {
        try assertFails(good.replacingOccurrences(of: "x264enc", with: "x265encc"), line: 5,
                        contains: ["no element 'x265encc'", "gst-inspect-1.0"])
    }

    func testUnknownPropertyNamesTheLine() throws {
        try assertFails(good.replacingOccurrences(of: "h264parse", with: "h264parse colour=red"), line: 6,
                        contains: ["no property", "colour"])
    }

    func testBadPropertyValueNamesTheLine() throws {
        try assertFails(good.replacingOccurrences(of: "x264enc", with: "x264enc bitrate=lots"), line: 5,
                        contains: ["bitrate"])
    }

    func testContractViolations() throws {
        try assertFails(good.replacingOccurrences(of: "appsink name=blur_in", with: "fakesink name=blur_in"), line: 3,
                        contains: ["'blur_in' is a fakesink", "must be a appsink"])
        try assertFails(good.replacingOccurrences(of: "name=blur_out", with: "name=other"), line: nil,
                        contains: ["no element named 'blur_out'", "appsrc name=blur_out"])
        try assertFails(good.replacingOccurrences(of: "splitmuxsink name=chunks", with: "filesink location=/tmp/x"), line: nil,
                        contains: ["no element named 'chunks'", "splitmuxsink name=chunks"])
    }

    func testUnlinkableElementsAreExplained() throws {
        try assertFails(good.replacingOccurrences(of: "! h264parse", with: "! audioconvert"), line: 6,
                        contains: ["could not link"])
    }

    func testCheckPipelineCommand() throws {
        let ok = try runTool(recorderExecutable, ["check-pipeline", repoPath("pipelines/test.pipeline"),
                                                  "--config", repoPath("config/demo.toml")])
        XCTAssertEqual(ok.status, 0, ok.output)
        XCTAssertTrue(ok.output.contains("OK"), ok.output)
        let (dir, path) = try write(good.replacingOccurrences(of: "x264enc", with: "x264encc"))
        let bad = try runTool(recorderExecutable, ["check-pipeline", path])
        XCTAssertNotEqual(bad.status, 0)
        XCTAssertTrue(bad.output.contains("\(path):5: no element 'x264encc'"), bad.output)
        let missingVar = try runTool(recorderExecutable, ["check-pipeline", repoPath("pipelines/test.pipeline")])
        XCTAssertNotEqual(missingVar.status, 0)
        XCTAssertTrue(missingVar.output.contains("test.pipeline:9: unknown variable ${width}"), missingVar.output)
        _ = dir
    }
}
