import XCTest
import GLibSupport
import Logging
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport

/// Issue 23, item 1: one path for every setting. Every setting from every source (the config
/// file on SIGHUP, a local user, a server) is the same value in effect now and after a restart,
/// and the same bad value earns the same refusal from each.
final class SettingsPathTests: XCTestCase {
    /// `[server]` bounds narrower than the hard limits, so a server's clamps show.
    func writeConfig(_ folder: TemporaryDirectory, storage: String, recording: [String: String] = [:], host: String = "") throws -> String {
        let file = folder.file("recorder.toml")
        let lines = ["chunk_duration_ms": "10000", "buffer_max_mb": "500", "video_format": "\"mp4\""]
            .merging(recording) { $1 }.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: "\n")
        try """
            [device]
            name = "settings-test"
            [server]
            host = "\(host)"
            discovery = false
            min_chunk_ms = 2000
            max_chunk_ms = 60000
            min_buffer_mb = 100
            max_buffer_mb = 1000
            [recording]
            pipeline = "\(repoPath("pipelines/test.pipeline"))"
            storage_dir = "\(storage)"
            \(lines)
            [privacy]
            face_blur = false
            [pipeline.vars]
            width = 160
            height = 120
            framerate = 15
            bitrate_kbps = 200
            """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    enum Source: CaseIterable { case configFile, local, server }

    struct Row {
        let change: SettingsChange
        /// The config file's key and value for it (nil: the file has no such key).
        let file: (key: String, value: String)?
        /// What a server gets (its `[server]` bounds); a local source and the file get what they asked.
        let serverGets: SettingsChange?
    }

    static let rows: [Row] = [
        Row(change: .init(chunkDurationMs: 1500), file: ("chunk_duration_ms", "1500"), serverGets: .init(chunkDurationMs: 2000)),
        Row(change: .init(chunkDurationMs: 5000), file: ("chunk_duration_ms", "5000"), serverGets: nil),
        Row(change: .init(chunkDurationMs: 120_000), file: ("chunk_duration_ms", "120000"), serverGets: .init(chunkDurationMs: 60000)),
        Row(change: .init(bufferMaxMB: 50), file: ("buffer_max_mb", "50"), serverGets: .init(bufferMaxMB: 100)),
        Row(change: .init(bufferMaxMB: 300), file: ("buffer_max_mb", "300"), serverGets: nil),
        Row(change: .init(bufferMaxMB: 5000), file: ("buffer_max_mb", "5000"), serverGets: .init(bufferMaxMB: 1000)),
        Row(change: .init(videoFormat: .mov), file: ("video_format", "\"mov\""), serverGets: nil),
        Row(change: .init(audioFormat: .wav), file: ("audio_format", "\"wav\""), serverGets: nil),
        Row(change: .init(timestampFormat: .txt), file: ("timestamp_format", "\"txt\""), serverGets: nil),
        Row(change: .init(recordsVideo: false), file: nil, serverGets: nil),
        Row(change: .init(framerate: 12), file: nil, serverGets: nil),
    ]

    func testEverySettingFromEverySourceIsTheValueInEffectNowAndAfterARestart() throws {
        let folder = TemporaryDirectory()
        let storage = folder.file("chunks").path
        var fileValues: [String: String] = [:]
        let settings = ServiceSettings(configFile: try writeConfig(folder, storage: storage))
        let service = try RecorderService(settings: settings)
        try service.start()
        defer {
            var stopped = false
            service.stop(reason: "test") { stopped = true }
            waitOnMainLoop(20) { stopped }
        }
        let recorder = try XCTUnwrap(service.recorder)
        for row in Self.rows {
            for source in Source.allCases {
                let expected = source == .server ? row.serverGets ?? row.change : row.change
                let label = "\(row.change) from \(source)"
                switch source {
                case .configFile:
                    guard let (key, value) = row.file else { continue }
                    fileValues[key] = value
                    _ = try writeConfig(folder, storage: storage, recording: fileValues)
                    service.reload()
                case .local:
                    let outcome = service.apply(row.change, from: .local("the console"))
                    XCTAssertEqual(outcome.applied, expected, label)
                    XCTAssertEqual(outcome.clamped, [], label)
                case .server:
                    let outcome = service.apply(row.change, from: .server("ws://allspark.test:9080/"))
                    XCTAssertEqual(outcome.applied, expected, label)
                    XCTAssertEqual(outcome.clamped.isEmpty, row.serverGets == nil, "a clamp is reported: \(label)")
                }
                let now = recorder.currentTuning
                XCTAssertEqual(now, expected.applied(to: now), "in effect now: \(label)")
                XCTAssertEqual(service.configuration.tuning, now, "the service reads the recorder's one copy: \(label)")
                // A restart: a new service over the same file and storage folder, as systemd would start it.
                let restarted = try RecorderService(settings: settings).configuration.tuning
                XCTAssertEqual(restarted, now, "in effect after a restart: \(label)")
            }
        }
    }

    /// The server's clientConfig reaches the service's one path through the real link: clamped to
    /// the service's `[server]` bounds, refused in the same words, and in effect after a restart.
    func testAServersClientConfigGoesThroughTheServicesPath() throws {
        let server = try AllSparkTestServer()
        server.clientConfig = #"{"type":"clientConfig","config":{"videoChunkDurationMs":1500,"videoBufferMaxMB":5000,"fps":500}}"#
        let folder = TemporaryDirectory()
        let storage = folder.file("chunks").path
        let settings = ServiceSettings(configFile: try writeConfig(folder, storage: storage, host: "ws://\(server.address)"))
        let service = try RecorderService(settings: settings)
        try service.start()
        defer {
            var stopped = false
            service.stop(reason: "test") { stopped = true }
            waitOnMainLoop(20) { stopped }
        }
        XCTAssertTrue(waitOnMainLoop(10) { service.configuration.tuning.bufferMaxMB == 1000 }, "applied: \(service.configuration.tuning)")
        let now = try XCTUnwrap(service.recorder?.currentTuning)
        XCTAssertEqual(now.chunkDurationMs, 2000, "clamped to server.min_chunk_ms")
        XCTAssertEqual(now.bufferMaxMB, 1000, "clamped to server.max_buffer_mb")
        XCTAssertNil(now.framerate, "500 fps refused")
        XCTAssertEqual(try RecorderService(settings: settings).configuration.tuning, now, "in effect after a restart")
        let kept = try XCTUnwrap(ServerSettingsStore(storageDirectory: storage).load())
        XCTAssertEqual(kept.fields, [.chunkDuration, .bufferMax], "what was applied is kept, the refused fps is not")
        XCTAssertEqual(kept.localFields, [], "set by a server: held to [server] at the next start")
    }

    /// The same bad value earns the same refusal from the console, a server and the config file,
    /// and changes nothing.
    func testTheSameBadValueIsRefusedWithTheSameWordsFromEverySource() throws {
        let folder = TemporaryDirectory()
        let storage = folder.file("chunks").path
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, storage: storage)))
        let before = service.configuration.tuning
        let bad: [(SettingsChange, SettingsField, file: (String, String)?)] = [
            (.init(chunkDurationMs: 500), .chunkDuration, ("chunk_duration_ms", "500")),
            (.init(chunkDurationMs: 4_000_000), .chunkDuration, ("chunk_duration_ms", "4000000")),
            (.init(bufferMaxMB: 0), .bufferMax, ("buffer_max_mb", "0")),
            (.init(framerate: 0), .framerate, nil),
            (.init(framerate: .infinity), .framerate, nil),
        ]
        for (change, field, file) in bad {
            let local = service.apply(change, from: .local("the console"))
            let server = service.apply(change, from: .server("ws://allspark.test:9080/"))
            XCTAssertEqual(local.refused.map(\.field), [field], "\(change)")
            XCTAssertEqual(local.refused, server.refused, "the same refusal: \(change)")
            XCTAssertTrue(local.applied.isEmpty && server.applied.isEmpty, "nothing applied: \(change)")
            if let (key, value) = file {
                let other = TemporaryDirectory()
                let path = try writeConfig(other, storage: storage, recording: [key: value])
                XCTAssertThrowsError(try ServiceSettings(configFile: path).load(logger: Logger(label: "test"))) { error in
                    XCTAssertTrue("\(error)".hasSuffix(": \(local.refused[0])"), "the file's reader says the same: \(error) / \(local.refused[0])")
                }
            }
        }
        XCTAssertEqual(service.configuration.tuning, before, "nothing changed")
        XCTAssertNil(ServerSettingsStore(storageDirectory: storage).load(), "nothing kept")
    }

    /// The latest change wins, whoever made it: a value kept from the console gives way to the
    /// file once the file is edited (on SIGHUP and at a start after an edit made while stopped).
    func testTheFileEditedAfterAKeptChangeWins() throws {
        let folder = TemporaryDirectory()
        let storage = folder.file("chunks").path
        let settings = ServiceSettings(configFile: try writeConfig(folder, storage: storage))
        let service = try RecorderService(settings: settings)
        _ = service.apply(SettingsChange(chunkDurationMs: 3000, bufferMaxMB: 40), from: .local("the console"))
        XCTAssertEqual(try RecorderService(settings: settings).configuration.tuning.chunkDurationMs, 3000, "kept")
        // Edited while the service is stopped: the file's value is newer than the kept one.
        _ = try writeConfig(folder, storage: storage, recording: ["chunk_duration_ms": "7000"])
        let next = try RecorderService(settings: settings).configuration.tuning
        XCTAssertEqual(next.chunkDurationMs, 7000, "the file was edited after the console's change")
        XCTAssertEqual(next.bufferMaxMB, 40, "what the file did not change stays as kept")
    }
}
