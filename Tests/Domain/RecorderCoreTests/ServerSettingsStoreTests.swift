import XCTest
@testable import RecorderCore

final class ServerSettingsStoreTests: XCTestCase {
    func testSavedValuesAreLaidOverTheConfigAndDamageIsIgnored() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ServerSettingsStore(storageDirectory: folder.path)
        XCTAssertNil(store.load())
        let tuning = RecordingTuning(videoFormat: .mov, chunkDurationMs: 10_000, bufferMaxMB: 42)
        try store.save(tuning, server: "ws://127.0.0.1:1", at: 5)
        XCTAssertEqual(store.load(), .init(tuning: tuning, fields: ServerSettingsStore.original, localFields: [], fileTuning: nil,
                                           server: "ws://127.0.0.1:1", savedAt: 5))
        try Data("{ half a fi".utf8).write(to: store.url)
        XCTAssertNil(store.load(), "a damaged file is ignored, not fatal")
    }

    func testTheConsolesServerChoiceIncludingDiscoveryIsLaidOverTheConfig() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("link-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("recorder.toml")
        try "[recording]\npipeline = \"p\"\nstorage_dir = \"\(folder.path)\"\n".write(to: file, atomically: true, encoding: .utf8)
        var config = try ConfigLoader.load(file: file.path)
        XCTAssertTrue(config.server.discovery, "the default")
        let store = ServerLinkStore(storageDirectory: folder.path)
        try store.save(host: "", verifyTLS: false, discovery: false, by: "test")
        let chosen = store.applied(to: config)
        XCTAssertEqual(chosen.server.host, "")
        XCTAssertFalse(chosen.server.verifyTLS)
        XCTAssertFalse(chosen.server.discovery, "the console's Disconnect outlives a restart")

        // A file kept before discovery could be chosen leaves the config's value.
        try Data(#"{"host":"box:9080","verifyTLS":true,"by":"old","savedAt":1}"#.utf8).write(to: store.url)
        config.server.discovery = false
        XCTAssertEqual(store.applied(to: config).server.host, "box:9080")
        XCTAssertFalse(store.applied(to: config).server.discovery)
    }

    /// The server's new keys are kept and laid over the config; what it did not set stays the config's own.
    func testEveryServerKeyIsKeptAndOnlyWhatTheServerSetIsLaidOver() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ServerSettingsStore(storageDirectory: folder.path)
        let file = try config(["recording.audio_format=wav", "recording.timestamp_format=txt"])
        XCTAssertEqual(file.tuning.audioFormat, .wav)
        XCTAssertEqual(file.tuning.timestampFormat, .txt)
        XCTAssertEqual(file.tuning.recordsVideo, true)
        var tuning = file.tuning
        tuning.recordsVideo = false
        tuning.framerate = 15
        tuning.audioFormat = .m4a
        try store.save(tuning, fields: [.recordsVideo, .framerate, .audioFormat], server: "s")
        let merged = store.applied(to: file)
        XCTAssertEqual(merged.tuning.recordsVideo, false)
        XCTAssertEqual(merged.tuning.framerate, 15)
        XCTAssertEqual(merged.tuning.audioFormat, .m4a)
        // The user changes the file's timestamp format: the server never set it, so the file's stands.
        let changed = store.applied(to: try config(["recording.audio_format=wav", "recording.timestamp_format=none"]))
        XCTAssertEqual(changed.tuning.timestampFormat, TimestampFormat.none)

        // A file kept by an earlier version (no new keys, no field list) changes only what it could hold.
        try Data(#"{"tuning":{"videoFormat":"mov","chunkDurationMs":10000,"bufferMaxMB":2000},"server":"old","savedAt":1}"#.utf8)
            .write(to: store.url)
        let old = store.applied(to: file)
        XCTAssertEqual(old.tuning.videoFormat, .mov)
        XCTAssertEqual(old.tuning.audioFormat, .wav, "an old file does not turn the box's audio off")
        XCTAssertEqual(old.tuning.timestampFormat, .txt)

        XCTAssertThrowsError(try config(["recording.audio_format=mp3"])) { XCTAssertTrue("\($0)".contains("wav"), "\($0)") }
        XCTAssertThrowsError(try config(["recording.timestamp_format=csv"]))
    }

    private func config(_ overrides: [String]) throws -> RecorderConfig {
        let document = try TOMLDocument(parsing: "[recording]\npipeline = \"x.pipeline\"\n", file: "t.toml")
        return try ConfigLoader.make(document: document, file: "/tmp/t.toml", overrides: overrides, hostName: "h")
    }
}
