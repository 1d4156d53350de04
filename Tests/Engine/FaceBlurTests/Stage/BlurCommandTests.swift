import XCTest
import RecorderTestSupport

/// `allspark-recorder blur` as a user runs it, on real small clips: it never
/// destroys its input, never replaces an existing file unasked, and never
/// leaves an unfinished file under the output's name.
final class BlurCommandTests: XCTestCase {
    /// A few frames: enough for a playable result, quick to blur.
    static var shortClip: Data!
    /// Long enough to be caught mid-run.
    static var longClip: Data!

    override class func setUp() {
        super.setUp()
        let scratch = TemporaryDirectory()
        func clip(width: Int, height: Int, frames: Int) throws -> Data {
            let images = (0..<frames).map { i -> RawImage in
                var image = RawImage(width: width, height: height, luma: UInt8(40 + i % 150))
                image.draw(RawImage(width: 16, height: 16, luma: 230), x: Double(i % (width - 16)), y: 10, scale: 2)
                return image
            }
            let url = scratch.file("clip-\(frames).mp4")
            try writeClip(images, to: url)
            return try Data(contentsOf: url)
        }
        do {
            shortClip = try clip(width: 160, height: 128, frames: 10)
            longClip = try clip(width: 640, height: 352, frames: 450)
        } catch {
            XCTFail("cannot build the test clips: \(error)")
        }
    }

    let folder = TemporaryDirectory()

    func place(_ data: Data, as name: String) throws -> URL {
        let url = folder.file(name)
        try data.write(to: url)
        return url
    }

    func names() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted() }

    @discardableResult
    func blur(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runTool(recorderExecutable, ["blur"] + arguments)
    }

    func testRefusesToWriteOverItsInputByAnyName() throws {
        let input = try place(Self.shortClip, as: "keep.mp4")
        let hardLink = folder.file("also-keep.mp4")
        try FileManager.default.linkItem(at: input, to: hardLink)
        let symbolic = folder.file("link.mp4")
        try FileManager.default.createSymbolicLink(at: symbolic, withDestinationURL: input)
        let cases: [[String]] = [
            [input.path, input.path],
            [input.path, input.path, "--force"],
            [input.path, folder.path + "/./keep.mp4", "--force"],
            [input.path, hardLink.path, "--force"],
            [input.path, symbolic.path],
            [input.path, symbolic.path, "--force"],
            [symbolic.path, input.path, "--force"],
        ]
        for arguments in cases {
            let (status, output) = try blur(arguments)
            XCTAssertNotEqual(status, 0, "\(arguments): \(output)")
            XCTAssertTrue(output.contains("is the same file as the input"), "\(arguments): \(output)")
            XCTAssertEqual(try Data(contentsOf: input), Self.shortClip, "\(arguments): the input is byte-identical")
        }
        XCTAssertEqual(names(), ["also-keep.mp4", "keep.mp4", "link.mp4"], "nothing left behind")
    }

    /// `blur` keeps a file's audio: AAC copied as it is, another codec encoded to AAC.
    func testKeepsTheAudioTrack() throws {
        let video = "videotestsrc num-buffers=30 ! video/x-raw,width=160,height=128,framerate=30/1 ! x264enc ! h264parse"
        let audio = "audiotestsrc num-buffers=44 samplesperbuffer=1024 ! audio/x-raw,rate=44100,channels=1 ! audioconvert"
        let cases = [("aac.mp4", "\(video) ! mp4mux name=m ! filesink location=IN \(audio) ! avenc_aac ! aacparse ! m.audio_%u", "aac.mov"),
                     ("pcm.mkv", "\(video) ! matroskamux name=m ! filesink location=IN \(audio) ! m.audio_%u", "pcm.mp4")]
        for (name, launch, outName) in cases {
            let input = folder.file(name), output = folder.file(outName)
            let made = try runTool("gst-launch-1.0", ["-q"] + launch.replacingOccurrences(of: "IN", with: input.path).split(separator: " ").map(String.init))
            XCTAssertEqual(made.status, 0, made.output)
            let (status, text) = try blur([input.path, output.path])
            XCTAssertEqual(status, 0, text)
            let report = try discover(output)
            XCTAssertTrue(report.output.contains("MPEG-4 AAC"), "\(outName) has its audio: \(report.output)")
            XCTAssertTrue(report.output.contains("H.264"), report.output)
            XCTAssertEqual(try XCTUnwrap(report.duration), 1.0, accuracy: 0.1, outName)
        }
    }

    func testAnExistingOutputIsReplacedOnlyWithForce() throws {
        let input = try place(Self.shortClip, as: "in.mp4")
        let output = folder.file("out.mp4")
        let precious = Data("a file the user still needs".utf8)
        try precious.write(to: output)

        let refused = try blur([input.path, output.path])
        XCTAssertNotEqual(refused.status, 0, refused.output)
        XCTAssertTrue(refused.output.contains("\(output.path) already exists; use --force to replace it"), refused.output)
        XCTAssertEqual(try Data(contentsOf: output), precious)

        let forced = try blur([input.path, output.path, "--force"])
        XCTAssertEqual(forced.status, 0, forced.output)
        XCTAssertNotNil(try discover(output).duration, "the replacement is playable")
        XCTAssertEqual(try Data(contentsOf: input), Self.shortClip)

        let fresh = try blur([input.path, folder.file("new.mov").path])
        XCTAssertEqual(fresh.status, 0, fresh.output)
        XCTAssertEqual(names(), ["in.mp4", "new.mov", "out.mp4"], "no temporary file left behind")
    }

    /// The study files (`--record-detections`, `--hidden-regions`) follow the output's rules: never
    /// the input, never an existing file without --force; a replay of them names what is wrong.
    func testRecordsAndReplaysDetectionsWithoutTouchingTheUsersFiles() throws {
        let input = try place(Self.shortClip, as: "in.mp4")
        let record = folder.file("searches.jsonl"), regions = folder.file("regions.jsonl")
        let intoInput = try blur([input.path, folder.file("a.mp4").path, "--record-detections", input.path, "--force"])
        XCTAssertNotEqual(intoInput.status, 0)
        XCTAssertTrue(intoInput.output.contains("--record-detections \(input.path) is the same file as the input or the output"), intoInput.output)
        XCTAssertEqual(try Data(contentsOf: input), Self.shortClip)

        let precious = Data("kept".utf8)
        try precious.write(to: regions)
        let existing = try blur([input.path, folder.file("a.mp4").path, "--hidden-regions", regions.path])
        XCTAssertNotEqual(existing.status, 0)
        XCTAssertTrue(existing.output.contains("--hidden-regions \(regions.path) already exists; use --force to replace it"), existing.output)
        XCTAssertEqual(try Data(contentsOf: regions), precious)

        let recorded = try blur([input.path, folder.file("a.mp4").path, "--record-detections", record.path, "--hidden-regions", regions.path, "--force"])
        XCTAssertEqual(recorded.status, 0, recorded.output)
        let searches = try String(contentsOf: record, encoding: .utf8).split(separator: "\n")
        XCTAssertTrue(recorded.output.contains("; \(searches.count) searches recorded in \(record.path)"), recorded.output)
        XCTAssertGreaterThanOrEqual(searches.count, 3, "offline, the whole frame is searched every 4 frames while it changes")
        XCTAssertEqual(try String(contentsOf: regions, encoding: .utf8).split(separator: "\n").count, 10, "a line per frame")

        let replayed = try blur([input.path, folder.file("b.mp4").path, "--replay-detections", record.path, "--config", "/nonexistent.toml"])
        XCTAssertNotEqual(replayed.status, 0, "--config is still read")
        let again = try blur([input.path, folder.file("b.mp4").path, "--replay-detections", record.path, "--set", "privacy.model=/no/model.onnx"])
        XCTAssertEqual(again.status, 0, "no model is needed to replay: \(again.output)")
        XCTAssertTrue(again.output.contains("; \(searches.count) searches replayed as recorded, 0 not in the record"), again.output)

        try (searches.map(String.init) + ["{\"frame\": 1}"]).joined(separator: "\n").write(to: record, atomically: true, encoding: .utf8)
        let broken = try blur([input.path, folder.file("c.mp4").path, "--replay-detections", record.path])
        XCTAssertNotEqual(broken.status, 0)
        XCTAssertTrue(broken.output.contains("\(record.path):\(searches.count + 1): not a recorded search (no \""), broken.output)
        XCTAssertFalse(names().contains("c.mp4"))
    }

    /// ONNX Runtime's official builds collect telemetry on Linux too: a device id and an event
    /// cache in the user's ~/.cache/Microsoft, uploaded to Microsoft. The recorder turns it off
    /// itself, whatever environment it was started in, so the detector leaves nothing in the
    /// home of the user running it.
    func testTheDetectorKeepsNoTelemetryInTheUsersHome() throws {
        let input = try place(Self.shortClip, as: "in.mp4")
        let home = folder.file("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        // This test process has the opt-out already (the same C module runs in it): the child must not inherit it.
        environment["ORT_DISABLE_TELEMETRY"] = nil
        environment["XDG_CACHE_HOME"] = nil
        // GStreamer's plugin registry stays where it is (a fresh one takes seconds to build).
        if let real = environment["HOME"], environment["GST_REGISTRY"] == nil,
           let registry = try? FileManager.default.contentsOfDirectory(atPath: real + "/.cache/gstreamer-1.0").first(where: { $0.hasPrefix("registry.") }) {
            environment["GST_REGISTRY"] = real + "/.cache/gstreamer-1.0/" + registry
        }
        environment["HOME"] = home.path
        let result = try runTool(recorderExecutable, ["blur", input.path, folder.file("out.mp4").path, "--set", "privacy.runtime=onnxruntime"],
                                 environment: environment)
        XCTAssertEqual(result.status, 0, result.output)
        // It searched on the 8-bit network where fetch-face-model installed it, else in floating point.
        XCTAssertTrue(result.output.contains(eightBitModelInstalled ? "follows on centerface-int8.onnx"
                                                                    : "face detection runs in floating point"), result.output)
        let left = FileManager.default.enumerator(atPath: home.path)?.allObjects.compactMap { $0 as? String } ?? []
        XCTAssertFalse(left.contains { $0.contains("Microsoft") || $0.contains("onnxruntime") }, "written to the user's home: \(left)")
    }

    /// Starts a blur of the long clip and waits until its hidden temporary output exists.
    func startLongBlur() throws -> (Process, input: URL, output: URL) {
        let input = try place(Self.longClip, as: "long.mp4")
        let output = folder.file("result.mp4")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: recorderExecutable)
        process.arguments = ["blur", input.path, output.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, process.isRunning, !names().contains(where: { $0.hasPrefix(".result.mp4.partial-") }) {
            usleep(10_000)
        }
        XCTAssertTrue(process.isRunning, "still blurring when interrupted: \(names())")
        return (process, input, output)
    }

    func testKilledMidRunLeavesNothingUnderTheOutputName() throws {
        let (process, input, output) = try startLongBlur()
        usleep(300_000)   // some frames written
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path), "no unfinished file under the final name: \(names())")
        XCTAssertEqual(names().filter { !$0.hasPrefix(".result.mp4.partial-") }, ["long.mp4"], "only a hidden temporary file may remain")
        XCTAssertEqual(try Data(contentsOf: input), Self.longClip)
    }

    func testInterruptedRunRemovesItsTemporaryFile() throws {
        for signal in [SIGTERM, SIGINT] {
            let (process, input, output) = try startLongBlur()
            usleep(300_000)
            kill(process.processIdentifier, signal)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 128 + signal)
            XCTAssertFalse(FileManager.default.fileExists(atPath: output.path))
            XCTAssertEqual(names(), ["long.mp4"], "the temporary file was removed")
            XCTAssertEqual(try Data(contentsOf: input), Self.longClip)
        }
    }
}
