import Console
import Foundation
import GLibSupport
import RecorderService
import RecorderTestSupport

/// A running service recording the test source in 1 s chunks, with the
/// console on a free loopback port and a known password.
final class ConsoleFixture {
    let storage = TemporaryDirectory()
    let service: RecorderService
    let console: Console
    let password = "correct horse battery"

    /// `server` is `[server] host` (none by default), `serverConfig` more `[server]` lines, `extraConfig` more `[console]` lines.
    init(server: String = "", serverConfig: String = "", extraConfig: String = "") throws {
        let config = storage.file("recorder.toml")
        try """
            [device]
            name = "front-door"
            [server]
            host = "\(server)"
            discovery = false
            \(serverConfig)
            [recording]
            pipeline = "\(repoPath("pipelines/test.pipeline"))"
            storage_dir = "\(storage.file("chunks").path)"
            chunk_duration_ms = 1000
            [privacy]
            face_blur = false
            [console]
            listen = "127.0.0.1:0"
            \(extraConfig)
            [pipeline.vars]
            width = 320
            height = 240
            framerate = 30
            bitrate_kbps = 500
            """.write(to: config, atomically: true, encoding: .utf8)
        service = try RecorderService(settings: ServiceSettings(configFile: config.path))
        try ConsolePassword(storageDirectory: storage.file("chunks").path).set(password)
        try service.start()
        console = try Console(service: service)
    }

    var configFile: String { storage.file("recorder.toml").path }
    var base: String { "http://127.0.0.1:\(console.port)" }

    func stop() {
        console.stop()
        var stopped = false
        service.stop(reason: "test") { stopped = true }
        waitOnMainLoop(20) { stopped }
    }
}
