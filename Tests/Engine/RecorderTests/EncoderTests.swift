import XCTest
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// `recording.encoder` fills `${encoder}` (issue 14, item 4): the software encoders record for
/// real; the hardware ones (v4l2, vaapi, nvenc) cannot run on the test machine, so their chains
/// are loaded where the element is installed, and otherwise the error names the package.
final class EncoderTests: XCTestCase {
    let pipelineText = """
        videotestsrc is-live=true ! video/x-raw,format=I420,width=${width},height=${height},framerate=${framerate}/1
          ! appsink name=blur_in
        appsrc name=blur_out ! videoconvert
          ! ${encoder}
          ! h264parse ! splitmuxsink name=chunks
        """

    func config(_ folder: TemporaryDirectory, _ extra: [String]) throws -> RecorderConfig {
        let pipeline = folder.file("encoder.pipeline")
        try pipelineText.write(to: pipeline, atomically: true, encoding: .utf8)
        return try ConfigLoader.load(file: repoPath("config/demo.toml"), overrides: [
            "recording.pipeline=\(pipeline.path)", "recording.storage_dir=\(folder.file("chunks").path)",
            "pipeline.vars.width=320", "pipeline.vars.height=240", "pipeline.vars.bitrate_kbps=500",
        ] + extra)
    }

    func testTheEncoderKeyFillsTheVariableAndAnOwnChainWins() throws {
        let folder = TemporaryDirectory()
        XCTAssertEqual(try config(folder, []).pipelineVariables["encoder"],
                       "x264enc tune=zerolatency speed-preset=veryfast key-int-max=30 option-string=scenecut=0 bitrate=500")
        XCTAssertEqual(try config(folder, ["recording.encoder=openh264"]).pipelineVariables["encoder"],
                       "openh264enc rate-control=bitrate bitrate=500000 gop-size=30 complexity=low")
        XCTAssertEqual(try config(folder, ["recording.encoder=vaapi", "pipeline.vars.encoder=x264enc"]).pipelineVariables["encoder"], "x264enc")
        XCTAssertThrowsError(try config(folder, ["recording.encoder=h265"])) { error in
            XCTAssertTrue("\(error)".contains("recording.encoder = \"h265\" is not allowed; use \"x264\", \"openh264\", \"v4l2\", \"vaapi\", \"nvenc\""), "\(error)")
        }
    }

    func testSoftwareEncodersRecordPlayableChunks() throws {
        for encoder in ["x264", "openh264"] {
            let folder = TemporaryDirectory()
            let pipeline = folder.file("encoder.pipeline")
            try pipelineText.write(to: pipeline, atomically: true, encoding: .utf8)
            let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"), "--duration", "2",
                                                       "--set", "recording.pipeline=\(pipeline.path)", "--set", "recording.encoder=\(encoder)",
                                                       "--set", "recording.storage_dir=\(folder.file("chunks").path)",
                                                       "--set", "console.enabled=false", "--set", "pipeline.vars.width=320",
                                                       "--set", "pipeline.vars.height=240", "--set", "pipeline.vars.bitrate_kbps=500"])
            XCTAssertEqual(run.status, 0, "\(encoder): \(run.output)")
            let chunks = try FileManager.default.contentsOfDirectory(atPath: folder.file("chunks").path).filter { $0.hasPrefix("chunk_") }
            XCTAssertEqual(chunks.count, 1, "\(encoder): \(chunks)")
            for chunk in chunks {
                let report = try discover(folder.file("chunks").appendingPathComponent(chunk))
                XCTAssertGreaterThan(report.duration ?? 0, 0.5, "\(encoder): \(report.output)")
                XCTAssertTrue(report.output.contains("H.264"), "\(encoder): \(report.output)")
            }
        }
    }

    /// Snow is a scene cut on every frame for x264's scene-cut detection, which then made every
    /// frame a keyframe; a whip-pan made a run of them, starving the frames around (VideoEncoder).
    func testX264PutsAKeyframeOnlyEverySecondThoughEveryFrameIsACut() throws {
        let folder = TemporaryDirectory()
        let pipeline = folder.file("snow.pipeline")
        try pipelineText.replacingOccurrences(of: "is-live=true", with: "is-live=true pattern=snow")
            .write(to: pipeline, atomically: true, encoding: .utf8)
        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"), "--duration", "3",
                                                   "--set", "recording.pipeline=\(pipeline.path)", "--set", "recording.encoder=x264",
                                                   "--set", "recording.storage_dir=\(folder.file("chunks").path)",
                                                   "--set", "console.enabled=false", "--set", "pipeline.vars.width=320",
                                                   "--set", "pipeline.vars.height=240", "--set", "pipeline.vars.bitrate_kbps=500"])
        XCTAssertEqual(run.status, 0, run.output)
        let chunks = try FileManager.default.contentsOfDirectory(atPath: folder.file("chunks").path).filter { $0.hasPrefix("chunk_") }
        XCTAssertFalse(chunks.isEmpty, run.output)
        var frames = 0, keyframes = 0
        for chunk in chunks {
            // Every buffer qtdemux hands on, with its flags: a keyframe is one without delta-unit.
            let demux = try runTool("gst-launch-1.0", ["-v", "filesrc", "location=\(folder.file("chunks").appendingPathComponent(chunk).path)",
                                                       "!", "qtdemux", "!", "fakesink", "silent=false"])
            XCTAssertEqual(demux.status, 0, demux.output)
            let buffers = demux.output.split(separator: "\n").filter { $0.contains("last-message = chain") }
            frames += buffers.count
            keyframes += buffers.filter { !$0.contains("delta-unit") }.count
        }
        XCTAssertGreaterThan(frames, 60, "three seconds recorded")
        // One a second, and one where each chunk starts.
        XCTAssertLessThanOrEqual(keyframes, frames / 30 + 1 + chunks.count, "\(keyframes) keyframes in \(frames) frames")
    }

    func testHardwareEncodersLoadWhereInstalledAndOtherwiseNameTheirPackage() throws {
        for encoder in [VideoEncoder.v4l2, .vaapi, .nvenc] {
            let folder = TemporaryDirectory()
            let config = try config(folder, ["recording.encoder=\(encoder.rawValue)"])
            let installed = (try? runTool("/usr/bin/gst-inspect-1.0", ["--exists", encoder.element]).status) == 0
            do {
                _ = try PipelineLoader.load(file: config.recording.pipeline, variables: config.pipelineVariables, privacyBoundary: false)
                XCTAssertTrue(installed, "\(encoder.element) loaded but gst-inspect-1.0 does not know it")
            } catch {
                XCTAssertFalse(installed, "\(encoder.element) is installed, its chain must load: \(error)")
                let provider = try XCTUnwrap(ElementPackages.provider(of: encoder.element), encoder.element)
                XCTAssertTrue("\(error)".contains("no element '\(encoder.element)'"), "\(error)")
                XCTAssertTrue("\(error)".contains("apt install \(provider.package)"), "\(error)")
            }
        }
    }
}
