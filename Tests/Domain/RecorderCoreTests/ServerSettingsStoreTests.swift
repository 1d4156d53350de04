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
}
