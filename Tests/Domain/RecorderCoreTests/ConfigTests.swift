import XCTest
@testable import RecorderCore

final class ConfigTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("cfg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    func write(_ text: String, name: String = "recorder.toml") throws -> String {
        let url = folder.appendingPathComponent(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    func testDefaultsAndRelativePaths() throws {
        let file = try write("""
            [recording]
            pipeline = "pipelines/x.pipeline"
            storage_dir = "../store"
            """)
        let config = try ConfigLoader.load(file: file, hostName: "box1")
        XCTAssertEqual(config.device.name, "box1")
        XCTAssertEqual(config.server.host, "")
        XCTAssertTrue(config.server.verifyTLS)
        XCTAssertTrue(config.server.discovery)
        XCTAssertEqual(config.server.reconnectDelaySeconds, 5)
        XCTAssertEqual(config.recording.videoFormat, .mp4)
        XCTAssertEqual(config.recording.chunkDurationMs, 30_000)
        XCTAssertEqual(config.recording.bufferMaxMB, 16_000)
        XCTAssertTrue(config.privacy.faceBlur, "blurring is on unless turned off explicitly")
        XCTAssertEqual(config.recording.pipeline, folder.appendingPathComponent("pipelines/x.pipeline").standardizedFileURL.path)
        XCTAssertEqual(config.recording.storageDirectory, folder.deletingLastPathComponent().appendingPathComponent("store").standardizedFileURL.path)
    }

    func testShippedConfigsLoad() throws {
        var root = URL(fileURLWithPath: #filePath)
        while root.path != "/", !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        let demo = try ConfigLoader.load(file: root.appendingPathComponent("config/demo.toml").path)
        XCTAssertFalse(demo.privacy.faceBlur)
        XCTAssertEqual(demo.pipelineVariables["width"], "1280")
        XCTAssertTrue(FileManager.default.fileExists(atPath: demo.recording.pipeline))
        let camera = try ConfigLoader.load(file: root.appendingPathComponent("config/default.toml").path)
        XCTAssertTrue(camera.privacy.faceBlur)
        XCTAssertEqual(camera.pipelineVariables["device"], "/dev/video0")
        XCTAssertTrue(FileManager.default.fileExists(atPath: camera.recording.pipeline))
    }

    func testOverridesWin() throws {
        let file = try write("""
            [server]
            host = "example:8080"
            [recording]
            pipeline = "p"
            video_format = "mp4"
            """)
        let config = try ConfigLoader.load(file: file, overrides: [
            "server.host=", "recording.video_format=mov", "privacy.face_blur=false",
            "recording.chunk_duration_ms=10_000", "pipeline.vars.device=/dev/video2", "server.verify_tls=off",
        ])
        XCTAssertEqual(config.server.host, "")
        XCTAssertEqual(config.recording.videoFormat, .mov)
        XCTAssertFalse(config.privacy.faceBlur)
        XCTAssertFalse(config.server.verifyTLS)
        XCTAssertEqual(config.recording.chunkDurationMs, 10_000)
        XCTAssertEqual(config.pipelineVariables["device"], "/dev/video2")
    }

    func assertError(_ text: String, overrides: [String] = [], contains fragments: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let path = try write(text)
        XCTAssertThrowsError(try ConfigLoader.load(file: path, overrides: overrides), file: file, line: line) { error in
            let message = "\(error)"
            for fragment in fragments {
                XCTAssertTrue(message.contains(fragment.replacingOccurrences(of: "$FILE", with: path)),
                              "'\(message)' should contain '\(fragment)'", file: file, line: line)
            }
        }
    }

    func testValidationErrorsNameFileKeyAndAllowedValues() throws {
        try assertError("[recording]\npipeline = \"p\"\nvideo_format = \"avi\"",
                        contains: ["$FILE:3", "recording.video_format", "\"avi\"", "\"mp4\" or \"mov\""])
        try assertError("[recording]\npipeline = \"p\"\nchunk_duration_ms = 10",
                        contains: ["$FILE:3", "recording.chunk_duration_ms", "1000…3600000"])
        try assertError("[recording]\npipeline = \"p\"\nbuffer_max_mb = 0",
                        contains: ["$FILE:3", "recording.buffer_max_mb", "out of range"])
        try assertError("[recording]\npipeline = \"p\"\nchunk_duration_ms = \"30s\"",
                        contains: ["$FILE:3", "must be an integer, not a string"])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nface_blurr = false",
                        contains: ["$FILE:4", "unknown key 'privacy.face_blurr'", "privacy.face_blur"])
        try assertError("[server]\nhost = \"x:1\"", contains: ["$FILE", "missing key 'pipeline'"])
        try assertError("[recording]\npipeline = \"p\"\n[server]\nhost = \"myserver\"", contains: ["$FILE:4", "give the port"])
        try assertError("[recording]\npipeline = \"p\"", overrides: ["recording.video_format=webm"],
                        contains: ["--set", "\"mp4\" or \"mov\""])
        try assertError("[recording]\npipeline = \"p\"", overrides: ["privacy.face_blur=maybe"],
                        contains: ["--set privacy.face_blur=maybe", "true or false"])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nwhen_behind = \"drop\"",
                        contains: ["$FILE:4", "privacy.when_behind", "\"drop\"", "\"pixelate\" or \"lower_fps\""])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\ntile_scale = 4",
                        contains: ["$FILE:4", "privacy.tile_scale", "out of range", "1.0…3.0"])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nfollow_network = \"mtcnn\"",
                        contains: ["$FILE:4", "privacy.follow_network", "\"mtcnn\"", "\"centerface\" or \"yunet\""])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nyunet_threshold = 0.1",
                        contains: ["$FILE:4", "privacy.yunet_threshold", "out of range"])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nruntime = \"tensorflow\"",
                        contains: ["$FILE:4", "privacy.runtime", "\"tensorflow\"", "\"auto\", \"onnxruntime\" or \"opencv\""])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nprecision = \"int4\"",
                        contains: ["$FILE:4", "privacy.precision", "\"int4\"", "\"auto\" or \"float\""])
        try assertError("[recording]\npipeline = \"p\"\n[privacy]\nspare_tile_scale = 0.5",
                        contains: ["$FILE:4", "privacy.spare_tile_scale", "must be 0 (no spare-time tiles) or from 1 to 3"])
        try assertError("[recording]\npipeline = \"p\"", overrides: ["nonsense"], contains: ["section.key=value"])
        try assertError("[recording]\npipeline = \"p\"", overrides: ["recording.colour=red"], contains: ["unknown key 'recording.colour'"])
        try assertError("[recording]\npipeline = \"p\"\nvideo_format = [", contains: ["$FILE:3"])
    }

    func testMissingFileIsAClearError() {
        XCTAssertThrowsError(try ConfigLoader.load(file: "/nonexistent/x.toml")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/x.toml: cannot read the config file"), "\(error)")
        }
    }

    /// Arrays reach the config: a string array read for a key, and arrays where a key wants a
    /// scalar refused with the file, the line and what was expected.
    func testStringArraysAndArraysWhereAScalarBelongs() throws {
        let document = try TOMLDocument(parsing: "[x]\nnames = [\"a\", 'b',\r\n  \"\"\"c\"\"\", # the third\r\n]\nmixed = [\"a\", 1]\none = \"a\"\n",
                                        file: "s.toml")
        let settings = document.entries.mapValues {
            ConfigLoader.Setting(value: $0.value, origin: "s.toml:\($0.line)", baseDirectory: "/")
        }
        let reader = ConfigLoader.SettingReader(settings: settings, file: "s.toml")
        XCTAssertEqual(try reader.strings("x.names"), ["a", "b", "c"])
        XCTAssertEqual(try reader.strings("x.absent", default: ["d"]), ["d"])
        XCTAssertThrowsError(try reader.strings("x.mixed")) { error in
            XCTAssertEqual("\(error)", "s.toml:5: x.mixed[1] must be a string, not an integer")
        }
        XCTAssertThrowsError(try reader.strings("x.one")) { error in
            XCTAssertTrue("\(error)".hasPrefix("s.toml:6: x.one must be an array of strings"), "\(error)")
        }
        XCTAssertEqual(try ConfigLoader.parseOverride(#"["a", 'b']"#, kind: .strings, key: "x.names"),
                       .array([.string("a"), .string("b")]))
        XCTAssertEqual(try ConfigLoader.parseOverride("a", kind: .strings, key: "x.names"), .array([.string("a")]))
        XCTAssertThrowsError(try ConfigLoader.parseOverride(#"["a""#, kind: .strings, key: "x.names")) { error in
            XCTAssertTrue("\(error)".hasPrefix(#"--set x.names=["a": unterminated array"#), "\(error)")
        }
        XCTAssertThrowsError(try ConfigLoader.parseOverride("[\"a\"]\nw = 1", kind: .strings, key: "x.names")) { error in
            XCTAssertTrue("\(error)".contains("expected one array"), "\(error)")
        }
        try assertError("[recording]\npipeline = \"p\"\nchunk_duration_ms = [\n  2000,\n]",
                        contains: ["$FILE:3", "recording.chunk_duration_ms must be an integer, not an array"])
        try assertError("[recording]\npipeline = \"p\"\n[pipeline.vars]\ndevice = [\"/dev/video0\"]",
                        contains: ["$FILE:4", "pipeline.vars.device must be a string, a number or a boolean, not an array"])
    }
}
