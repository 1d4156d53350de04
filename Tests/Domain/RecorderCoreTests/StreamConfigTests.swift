import XCTest
@testable import RecorderCore

/// `[stream]`: the RTSP stream out is off unless `stream.rtsp_listen` names an address and port.
final class StreamConfigTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("stream-cfg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: folder) }

    func load(_ text: String, overrides: [String] = []) throws -> RecorderConfig {
        let url = folder.appendingPathComponent("recorder.toml")
        try ("[recording]\npipeline = \"p.pipeline\"\nstorage_dir = \"store\"\n" + text).write(to: url, atomically: true, encoding: .utf8)
        return try ConfigLoader.load(file: url.path, overrides: overrides, hostName: "box")
    }

    func error(_ text: String, overrides: [String] = []) -> String {
        do { _ = try load(text, overrides: overrides); return "no error" } catch { return "\(error)" }
    }

    func testOffByDefaultAndTheDefaults() throws {
        let stream = try load("").stream
        XCTAssertFalse(stream.isEnabled)
        XCTAssertNil(stream.rtspHost)
        XCTAssertEqual(stream.maxClients, 10)
        XCTAssertEqual(stream.maxClientsPerAddress, 4)
        XCTAssertEqual(stream.sessionTimeoutSeconds, 20)
        XCTAssertFalse(try load("[stream]\nrtsp_listen = \"\"").stream.isEnabled, "empty: off")
    }

    func testListenAddresses() throws {
        let v4 = try load("[stream]\nrtsp_listen = \"0.0.0.0:8554\"").stream
        XCTAssertEqual(v4.rtspHost, "0.0.0.0")
        XCTAssertEqual(v4.rtspPort, 8554)
        let v6 = try load("", overrides: ["stream.rtsp_listen=[::]:9554", "stream.max_clients=3", "stream.max_clients_per_address=1"]).stream
        XCTAssertEqual(v6.rtspHost, "::")
        XCTAssertEqual(v6.rtspPort, 9554)
        XCTAssertEqual(v6.maxClients, 3)
        XCTAssertEqual(v6.maxClientsPerAddress, 1)
    }

    func testBadValuesNameTheKeyAndWhatIsWrong() {
        let notAnAddress = error("[stream]\nrtsp_listen = \"8554\"")
        XCTAssertTrue(notAnAddress.contains("recorder.toml:5 (stream.rtsp_listen)") || notAnAddress.contains("stream.rtsp_listen"), notAnAddress)
        XCTAssertTrue(notAnAddress.contains("stream.rtsp_listen = \"8554\" is not an address and port; use e.g. \"0.0.0.0:8554\""), notAnAddress)
        let hostName = error("[stream]\nrtsp_listen = \"camera.local:8554\"")
        XCTAssertTrue(hostName.contains("\"camera.local\" is not an IP address of this box"), hostName)
        let portZero = error("", overrides: ["stream.rtsp_listen=127.0.0.1:0"])
        XCTAssertTrue(portZero.hasPrefix("--set: stream.rtsp_listen"), portZero)
        XCTAssertTrue(portZero.contains("port 0 is not allowed"), portZero)
        let badPort = error("[stream]\nrtsp_listen = \"0.0.0.0:70000\"")
        XCTAssertTrue(badPort.contains("is not an address and port"), badPort)
        let notAString = error("[stream]\nrtsp_listen = 8554")
        XCTAssertTrue(notAString.contains("stream.rtsp_listen must be a string, not an integer"), notAString)
        let tooMany = error("[stream]\nmax_clients = 0")
        XCTAssertTrue(tooMany.contains("stream.max_clients = 0 is out of range; allowed: 1…64"), tooMany)
        let perAddress = error("[stream]\nmax_clients = 2\nmax_clients_per_address = 3")
        XCTAssertTrue(perAddress.contains("stream.max_clients_per_address = 3 is above stream.max_clients = 2"), perAddress)
        let typo = error("[stream]\nrtsp_listn = \"0.0.0.0:8554\"")
        XCTAssertTrue(typo.contains("rtsp_listn"), typo)
    }
}
