import XCTest
import StorageTestSupport
@testable import RecorderCore

/// The server settings kept in the storage folder are never read or
/// written through a link planted there.
final class ServerSettingsFileTests: FolderWithOutsideTestCase {
    func testServerSettingsNeverReadOrWrittenThroughALink() throws {
        let target = try decoy("important.conf")
        let settingsElsewhere = try decoy("settings.json", """
            {"server":"evil","savedAt":1,"tuning":{"videoFormat":"mov","chunkDurationMs":1000,"bufferMaxMB":1}}
            """)
        try link(ServerSettingsStore.fileName + ".tmp", to: target.url)    // the temporary name of earlier versions
        try link(ServerSettingsStore.fileName, to: settingsElsewhere.url)
        let store = ServerSettingsStore(storageDirectory: folder.path)
        XCTAssertNil(store.load(), "a linked settings file is not read")
        let tuning = RecordingTuning(videoFormat: .mp4, chunkDurationMs: 4000, bufferMaxMB: 500)
        try store.save(tuning, server: "test", at: 5)
        assertIntact(target)
        assertIntact(settingsElsewhere)
        XCTAssertFalse(isLink(ServerSettingsStore.fileName), "the link was replaced, not written through")
        XCTAssertEqual(store.load()?.tuning, tuning)
        let leftovers = try fm.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [])
    }
}
