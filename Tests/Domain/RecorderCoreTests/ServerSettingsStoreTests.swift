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
        XCTAssertEqual(store.load(), .init(tuning: tuning, server: "ws://127.0.0.1:1", savedAt: 5))
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
}
