import Foundation
import RecorderCore
import XCTest

/// config/cameras/: one commented config per kind of camera, each setting every
/// variable its pipeline needs (what check-pipeline checks first).
final class CameraConfigTests: XCTestCase {
    var root: URL {
        var root = URL(fileURLWithPath: #filePath)
        while root.path != "/", !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        return root
    }

    func testEveryShippedCameraConfigSetsEveryVariableOfItsPipeline() throws {
        let folder = root.appendingPathComponent("config/cameras")
        let expected = ["http-mjpeg.toml": "http-mjpeg.pipeline", "rtsp.toml": "rtsp.pipeline",
                        "usb-raw.toml": "v4l2-raw.pipeline", "usb.toml": "v4l2.pipeline"]
        let shipped = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".toml") }.sorted()
        XCTAssertEqual(shipped, expected.keys.sorted())
        for name in shipped {
            let config = try ConfigLoader.load(file: folder.appendingPathComponent(name).path)
            XCTAssertEqual((config.recording.pipeline as NSString).lastPathComponent, expected[name], name)
            XCTAssertTrue(FileManager.default.fileExists(atPath: config.recording.pipeline), "\(name): \(config.recording.pipeline)")
            XCTAssertTrue(config.privacy.faceBlur, "\(name) records with faces pixelated")
            XCTAssertTrue(FileManager.default.fileExists(atPath: config.privacy.model) || !FileManager.default.fileExists(atPath: root.appendingPathComponent("models").path),
                          "\(name): the model path points at the repository's models/: \(config.privacy.model)")
            XCTAssertNoThrow(try PipelineTemplate(file: config.recording.pipeline, variables: config.pipelineVariables), name)
            // Every value it sets is one the pipeline uses (a typo'd name would otherwise sit there unnoticed).
            let text = try String(contentsOfFile: config.recording.pipeline, encoding: .utf8)
            for key in config.pipelineVariables.keys where key != "encoder" && key != "framerate" && key != "bitrate_kbps" {
                XCTAssertTrue(text.contains("${\(key)}"), "\(name) sets \(key), which \(expected[name]!) does not use")
            }
        }
    }

    /// A pipeline run with none of its variables set names them all in one error, each with its first line.
    func testEveryMissingVariableIsNamedAtOnce() throws {
        let pipeline = root.appendingPathComponent("pipelines/v4l2.pipeline").path
        XCTAssertThrowsError(try PipelineTemplate(file: pipeline, variables: [:])) { error in
            let text = "\(error)"
            for name in ["device", "width", "height", "framerate", "encoder", "audio_source"] {
                XCTAssertTrue(text.contains("${\(name)}"), "\(name) is named: \(text)")
            }
            XCTAssertTrue(text.contains("6 unknown variables"), text)
            XCTAssertTrue(text.contains("${device} (line 6)"), text)
        }
        // One missing: named as before, with its line.
        XCTAssertThrowsError(try PipelineTemplate(text: "videotestsrc\n ! x264enc bitrate=${rate}", file: "p.pipeline", variables: [:])) { error in
            XCTAssertEqual("\(error)", "p.pipeline:2: unknown variable ${rate}; set it under [pipeline.vars] in the config or with --set pipeline.vars.rate=VALUE")
        }
    }
}
