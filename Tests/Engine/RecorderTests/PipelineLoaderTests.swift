import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

final class PipelineLoaderTests: XCTestCase {
    let vars = ["width": "320", "height": "240", "framerate": "30", "bitrate_kbps": "500",
                "device": "/dev/video0", "input": "/tmp/in.mp4", "audio_source": "audiotestsrc is-live=true wave=silence",
                "encoder": VideoEncoder.x264.chain(framerate: 30, bitrateKbps: 500),
                "rtsp_url": "rtsp://127.0.0.1:9/cam", "rtsp_transport": "tcp", "rtsp_user": "", "rtsp_password": "",
                "mjpeg_url": "http://127.0.0.1:9/stream.mjpeg", "mjpeg_user": "", "mjpeg_password": "", "frames": "/tmp/frames"]

    func testShippedPipelinesSatisfyTheContract() throws {
        for name in ["test", "v4l2", "v4l2-raw", "file", "rtsp", "http-mjpeg", "demo-faces"] {
            let loaded = try PipelineLoader.load(file: repoPath("pipelines/\(name).pipeline"), variables: vars, privacyBoundary: true)
            XCTAssertEqual(loaded.captureSink.element.factoryName, "appsink", name)
            XCTAssertEqual(loaded.processedSource.element.factoryName, "appsrc", name)
            XCTAssertEqual(loaded.chunkSink.factoryName, "splitmuxsink", name)
            XCTAssertEqual(loaded.audioSink != nil, ["test", "v4l2", "v4l2-raw", "rtsp", "demo-faces"].contains(name), "\(name): the audio path")
        }
    }

    /// audio_in takes raw audio only: frames tee'd into it would bypass the privacy stage.
    func testTheAudioPathTakesRawAudioOnly() throws {
        try assertFails(good + "\naudiotestsrc ! audioconvert ! fakesink name=audio_in", line: 8,
                        contains: ["'audio_in' is a fakesink, but it must be an appsink"])
        let videoIntoAudio = good.replacingOccurrences(of: "! appsink name=blur_in", with: "! tee name=t ! queue ! appsink name=blur_in\nt. ! queue ! appsink name=audio_in")
        try assertFails(videoIntoAudio, line: 4, contains: ["'audio_in' must receive raw audio (audio/x-raw), but gets video/x-raw"])
        let (dir, path) = try write(good + "\naudiotestsrc is-live=true ! appsink name=audio_in")
        let loaded = try PipelineLoader.load(file: path, variables: vars, privacyBoundary: true)
        XCTAssertNotNil(loaded.audioSink, "a raw audio branch passes the privacy boundary")
        _ = dir
    }

    func write(_ text: String) throws -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        let file = dir.file("broken.pipeline")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return (dir, file.path)
    }

    func assertFails(_ text: String, line: Int?, contains fragments: [String], file: StaticString = #filePath, sourceLine: UInt = #line) throws {
        let (dir, path) = try write(text)
        XCTAssertThrowsError(try PipelineLoader.load(file: path, variables: vars, privacyBoundary: true), file: file, line: sourceLine) { error in
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
        // Every variable it lacks, in one run.
        XCTAssertTrue(missingVar.output.contains("test.pipeline:9: "), missingVar.output)
        for name in ["width", "height", "framerate", "bitrate_kbps"] {
            XCTAssertTrue(missingVar.output.contains("${\(name)}"), missingVar.output)
        }
        _ = dir
    }

    /// config/cameras/*.toml pass check-pipeline on their own pipelines: every variable set, every element installed.
    func testEveryCameraConfigPassesCheckPipeline() throws {
        for (config, pipeline) in [("usb", "v4l2"), ("usb-raw", "v4l2-raw"), ("rtsp", "rtsp"), ("http-mjpeg", "http-mjpeg")] {
            let result = try runTool(recorderExecutable, ["check-pipeline", repoPath("pipelines/\(pipeline).pipeline"),
                                                          "--config", repoPath("config/cameras/\(config).toml")])
            XCTAssertEqual(result.status, 0, "\(config): \(result.output)")
            XCTAssertTrue(result.output.contains("OK"), "\(config): \(result.output)")
        }
    }

    // MARK: The privacy boundary (issue 10, item 7)

    /// A tee before blur_in whose second branch joins the encoder through a
    /// funnel: raw frames reach `chunks` without the privacy stage.
    let teeIntoChunks = """
        videotestsrc is-live=true
          ! video/x-raw,format=I420,width=320,height=240,framerate=30/1
          ! tee name=split
        split. ! queue ! appsink name=blur_in
        split. ! queue ! join.
        appsrc name=blur_out
          ! funnel name=join
          ! videoconvert ! x264enc tune=zerolatency
          ! h264parse
          ! splitmuxsink name=chunks
        """

    func testABranchAroundThePrivacyStageIsRefusedNamingTheElementAndLine() throws {
        try assertFails(teeIntoChunks, line: 3,
                        contains: ["privacy: 'chunks' gets frames from 'videotestsrc", "remove the branch at 'split'",
                                   "→ split → queue"])
        // Any other sink fed by the capture part leaks just as well (a stream, a file).
        let teeToNetwork = good.replacingOccurrences(of: "! appsink name=blur_in", with: """
              ! tee name=t ! queue ! appsink name=blur_in
            t. ! queue ! videoconvert ! jpegenc ! udpsink host=127.0.0.1 port=5999
            """)
        try assertFails(teeToNetwork, line: 3, contains: ["privacy: 'udpsink0' gets frames from 'videotestsrc", "remove the branch at 't'"])
        // A second source straight into the encoder, bypassing blur_in altogether.
        let secondSource = good.replacingOccurrences(of: "appsrc name=blur_out", with: """
            videotestsrc name=sneaky ! f.
            appsrc name=blur_out ! funnel name=f
            """)
        try assertFails(secondSource, line: 4, contains: ["privacy: 'chunks' gets frames from 'sneaky'", "remove the branch at 'sneaky'"])
    }

    func testThePrivacyBoundaryAllowsBranchesAfterBlurOutAndIsOffWithoutBlur() throws {
        // Streaming what was blurred is fine: the branch is after blur_out.
        let (dir, path) = try write(good.replacingOccurrences(of: "appsrc name=blur_out", with: "appsrc name=blur_out ! tee name=t ! queue")
                                    + "\nt. ! queue ! fakesink")
        let loaded = try PipelineLoader.load(file: path, variables: vars, privacyBoundary: true)
        XCTAssertEqual(loaded.extraSinks.map(\.factoryName), ["fakesink"])
        // face_blur = false records what the camera sees anyway: no boundary to keep.
        let (leakDir, leak) = try write(teeIntoChunks)
        XCTAssertNoThrow(try PipelineLoader.load(file: leak, variables: vars, privacyBoundary: false))
        _ = (dir, leakDir)
    }

    /// The RTSP stream is taken where the recording enters chunks: the check names that element and
    /// refuses it when it gets frames that did not pass the privacy stage.
    func testTheStreamTapIsAfterThePrivacyStageAndTheCheckKnowsIt() throws {
        let (dir, path) = try write(good)
        let pipeline = try Pipeline.parse(try PipelineTemplate(file: path, variables: vars).description)
        let graph = pipeline.graph()
        let tap = try XCTUnwrap(PipelineLoader.streamTapIndex(graph))
        XCTAssertEqual(graph.nodes[tap].factory, "h264parse", "the tap is the parser's output, what chunks record")
        XCTAssertNoThrow(try PipelineLoader.checkStreamTap(graph, template: PipelineTemplate(file: path, variables: vars)))
        // A camera branch into the encoder: the stream would carry faces, and the check says so by the stream's name.
        let (leakDir, leak) = try write(teeIntoChunks)
        let leakTemplate = try PipelineTemplate(file: leak, variables: vars)
        let leakGraph = try Pipeline.parse(leakTemplate.description).graph()
        XCTAssertThrowsError(try PipelineLoader.checkStreamTap(leakGraph, template: leakTemplate)) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("where the RTSP stream is taken"), message)
            XCTAssertTrue(message.contains("gets frames from 'videotestsrc"), message)
        }
        _ = (dir, leakDir)
    }
}
