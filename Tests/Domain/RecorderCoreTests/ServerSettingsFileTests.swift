import XCTest
@testable import RecorderCore

/// The server settings kept in the storage folder are never read or
/// written through a link planted there.
final class ServerSettingsFileTests: XCTestCase {
    var root: URL!
    var folder: URL!
    var outside: URL!
    let fm = FileManager.default

    override func setUpWithError() throws {
        root = fm.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString.prefix(8))")
        folder = root.appendingPathComponent("storage")
        outside = root.appendingPathComponent("outside")
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        try fm.createDirectory(at: outside, withIntermediateDirectories: true)
    }

    override func tearDown() { try? fm.removeItem(at: root) }

    /// A file outside the storage folder that must survive byte-identical.
    func decoy(_ name: String, _ text: String = "a user's own file, not a chunk") throws -> (url: URL, bytes: Data) {
        let url = outside.appendingPathComponent(name)
        let bytes = Data(text.utf8)
        try bytes.write(to: url)
        return (url, bytes)
    }

    func assertIntact(_ decoy: (url: URL, bytes: Data), file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try? Data(contentsOf: decoy.url), decoy.bytes, "\(decoy.url.lastPathComponent) outside the folder is untouched", file: file, line: line)
    }

    func link(_ name: String, to target: URL) throws {
        try fm.createSymbolicLink(atPath: folder.appendingPathComponent(name).path, withDestinationPath: target.path)
    }

    func isLink(_ name: String) -> Bool {
        (try? fm.destinationOfSymbolicLink(atPath: folder.appendingPathComponent(name).path)) != nil
    }

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
