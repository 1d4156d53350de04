import Logging
import Storage
import XCTest
@testable import RecorderCore

/// Unique, stable names as the iOS app makes them: a host name without three digits in a
/// row gets a `-NNN` drawn once and kept in the storage folder; a configured name is used as given.
final class DeviceNameTests: XCTestCase {
    var storage: URL!

    override func setUpWithError() throws {
        storage = FileManager.default.temporaryDirectory.appendingPathComponent("name-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: storage, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: storage) }

    func config(_ device: String?, host: String) throws -> RecorderConfig {
        let file = storage.appendingPathComponent("recorder.toml")
        try """
            \(device.map { "[device]\nname = \"\($0)\"\n" } ?? "")
            [recording]
            pipeline = "x.pipeline"
            storage_dir = "\(storage.path)"
            """.write(to: file, atomically: true, encoding: .utf8)
        return try ConfigLoader.load(file: file.path, hostName: host)
    }

    func resolve(_ config: RecorderConfig, draw: Int) -> String {
        DeviceName.resolve(config.device, storageDirectory: config.recording.storageDirectory,
                           logger: Logger(label: "test"), draw: { draw })
    }

    var keptFile: URL { storage.appendingPathComponent(StorageLayout.deviceNameFileName) }

    func testTheHostNameGetsASuffixDrawnOnceAndKept() throws {
        let host = try config(nil, host: "raspberrypi")
        XCTAssertTrue(host.device.nameIsHostName)
        XCTAssertEqual(resolve(host, draw: 417), "raspberrypi-417")
        XCTAssertTrue(FileManager.default.fileExists(atPath: keptFile.path), "kept in the storage folder")
        XCTAssertEqual(resolve(host, draw: 923), "raspberrypi-417", "the same name at the next start")
        XCTAssertEqual(resolve(try config(nil, host: "raspberrypi"), draw: 5), "raspberrypi-417")
    }

    func testANameWithThreeDigitsInARowOrSetInTheConfigIsUsedAsGiven() throws {
        XCTAssertEqual(resolve(try config(nil, host: "cam-007"), draw: 417), "cam-007")
        XCTAssertEqual(resolve(try config(nil, host: "box1234x"), draw: 417), "box1234x")
        XCTAssertFalse(FileManager.default.fileExists(atPath: keptFile.path), "nothing drawn, nothing kept")
        let set = try config("Front door", host: "raspberrypi")
        XCTAssertFalse(set.device.nameIsHostName)
        XCTAssertEqual(resolve(set, draw: 417), "Front door")
        XCTAssertEqual(resolve(try config("raspberrypi", host: "other"), draw: 417), "raspberrypi", "configured: as given, even without digits")
        XCTAssertFalse(FileManager.default.fileExists(atPath: keptFile.path))
    }

    func testRunsOfDigits() {
        XCTAssertTrue(DeviceName.hasRunOfThreeDigits("a123"))
        XCTAssertFalse(DeviceName.hasRunOfThreeDigits("a12-3"))
        XCTAssertFalse(DeviceName.hasRunOfThreeDigits("12x34"))
        XCTAssertFalse(DeviceName.hasRunOfThreeDigits("١٢٣"), "ASCII digits only, as the server's filing sees them")
    }

    func testADamagedKeptFileIsReplacedByANewDraw() throws {
        try Data("not json".utf8).write(to: keptFile)
        let host = try config(nil, host: "pi")
        XCTAssertEqual(resolve(host, draw: 7), "pi-007")
        XCTAssertEqual(resolve(host, draw: 8), "pi-007")
    }
}
