import XCTest
import RecorderCore
import RecorderTestSupport

/// Issue 21, minor items: a refused run says exactly what is wrong and
/// where it was set, and leaves nothing behind.
final class RefusedRunTests: XCTestCase {
    /// A config file whose `[recording]` and `[privacy]` lines the test writes, with their line numbers.
    func writeConfig(_ dir: TemporaryDirectory, storage: String, pipeline: String, model: String) throws -> (path: String, pipelineLine: Int, modelLine: Int) {
        let lines = [
            "[server]", "host = \"\"", "discovery = false",
            "[recording]", "pipeline = \"\(pipeline)\"", "storage_dir = \"\(storage)\"",
            "[privacy]", "face_blur = true", "model = \"\(model)\"",
            "[pipeline.vars]", "width = 320", "height = 240", "framerate = 30", "bitrate_kbps = 500",
        ]
        let file = dir.file("recorder.toml")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        return (file.path, 5, 9)
    }

    func testAMissingPipelineOrModelIsTracedToItsConfigLineAndNoFolderIsMade() throws {
        let dir = TemporaryDirectory()
        let storage = dir.file("recordings").path
        let noPipeline = try writeConfig(dir, storage: storage, pipeline: "/nonexistent/camera.pipeline", model: repoPath("models/centerface.onnx"))
        let first = try runTool(recorderExecutable, ["run", "--config", noPipeline.path, "--duration", "2"])
        XCTAssertNotEqual(first.status, 0)
        XCTAssertTrue(first.output.contains("recorder.toml:\(noPipeline.pipelineLine) (recording.pipeline)"), first.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: storage), "a refused run made no storage folder")

        let noModel = try writeConfig(dir, storage: storage, pipeline: repoPath("pipelines/test.pipeline"), model: "/nonexistent/centerface.onnx")
        let second = try runTool(recorderExecutable, ["run", "--config", noModel.path, "--duration", "2"])
        XCTAssertNotEqual(second.status, 0)
        XCTAssertTrue(second.output.contains("/nonexistent/centerface.onnx is missing"), second.output)
        XCTAssertTrue(second.output.contains("recorder.toml:\(noModel.modelLine) (privacy.model)"), second.output)
        XCTAssertTrue(second.output.contains("Refusing to record"), second.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: storage), "a refused run made no storage folder")
    }

    func testAnUnreadableModelIsCalledUnreadableNotMissing() throws {
        // Root reads any file: the service's user is not root, so run it as nobody.
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser") else {
            throw XCTSkip("needs root to run the recorder as another user")
        }
        let dir = TemporaryDirectory()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: dir.path)
        let model = dir.file("centerface.onnx")
        try FileManager.default.copyItem(atPath: repoPath("models/centerface.onnx"), toPath: model.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: model.path)
        let run = try runTool("/usr/sbin/runuser", ["-u", "nobody", "--", recorderExecutable, "run", "--config", repoPath("config/demo.toml"),
                                                   "--set", "recording.storage_dir=\(dir.file("recordings").path)",
                                                   "--set", "privacy.face_blur=true", "--set", "privacy.model=\(model.path)", "--duration", "2"])
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.output.contains("\(model.path) is not readable by this user"), run.output)
        XCTAssertTrue(run.output.contains("permissions"), run.output)
        XCTAssertFalse(run.output.contains("is missing"), run.output)
        XCTAssertTrue(run.output.contains("--set privacy.model"), run.output)
    }
}
