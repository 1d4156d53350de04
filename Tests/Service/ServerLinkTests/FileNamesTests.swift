import XCTest
import AllSparkProtocol
import RecorderCore
import RecorderTestSupport
import ServerLinkTesting
@testable import ServerLink

/// `server.file_names`: the time in an uploaded name in milliseconds (servers since 0.5) or
/// seconds (older ones, which drop the connection at every millisecond name), and the
/// warning that names the setting when a server behaves like an old one.
final class FileNamesTests: XCTestCase {
    func testWireNames() {
        XCTAssertEqual(UploadFileNames.milliseconds.wireName("chunk_1700000000123.mp4"), "chunk_1700000000123.mp4")
        XCTAssertEqual(UploadFileNames.seconds.wireName("chunk_1700000000123.mp4"), "chunk_1700000000.mp4")
        XCTAssertEqual(UploadFileNames.seconds.wireName("timestamps_1700000000999.txt"), "timestamps_1700000000.txt")
        XCTAssertEqual(UploadFileNames.seconds.wireName("audio_1700000000500.wav"), "audio_1700000000.wav")
        XCTAssertEqual(UploadFileNames.seconds.wireName("chunk_1700000000.mp4"), "chunk_1700000000.mp4", "already seconds")
        XCTAssertEqual(UploadFileNames.seconds.wireName("clip.mp4"), "clip.mp4")
    }

    func testTheSettingDefaultsToMillisecondsAndRefusesOtherValues() throws {
        let storage = TemporaryDirectory()
        XCTAssertEqual(try testConfig(storage: storage.path).server.fileNames, .milliseconds)
        XCTAssertEqual(try testConfig(storage: storage.path, extra: ["server.file_names=seconds"]).server.fileNames, .seconds)
        XCTAssertThrowsError(try testConfig(storage: storage.path, extra: ["server.file_names=minutes"])) { error in
            XCTAssertTrue("\(error)".contains(#"use "ms" (servers since 0.5) or "seconds""#), "\(error)")
        }
    }

    func testSecondsNamesTheUploadInSecondsAndLeavesTheFileOnDiskAlone() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 2, now: server.clock.now)
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 3, retryDelay: 0.2, fileNames: .seconds))
        link.start()
        server.clock.run()
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 5) { server.uploads.count == 2 && link.pendingUploads == 0 })
        link.stop()
        for chunk in stored.catalog.all {
            let ms = Int64((chunk.start * 1000).rounded())
            let wire = "chunk_\(ms / 1000).mp4"
            XCTAssertEqual(chunk.file, "chunk_\(ms).mp4", "the file on disk keeps its name")
            XCTAssertEqual(server.uploadedData(wire), try Data(contentsOf: stored.catalog.url(of: chunk)), "\(wire) arrived byte for byte")
            XCTAssertTrue(FileManager.default.fileExists(atPath: stored.catalog.url(of: chunk).path))
        }
    }

    func testThreeDropsInARowRightAfterUploadMetadataNameTheSetting() throws {
        // A server before 0.5 fails on a millisecond name and drops the connection at the metadata.
        let server = InMemoryAllSparkServer()
        server.onUploadMetadata = { _ in server.connection?.dropByPeer() }
        let stored = try StoredChunks(count: 1, now: server.clock.now)
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 3, retryDelay: 0.2), logger: log.logger)
        link.start()
        server.clock.run()
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 5) { server.texts.filter { $0.contains(#""type":"upload""#) }.count == 2 })
        server.clock.advance(by: 0.1)
        XCTAssertFalse(log.contains("server.file_names"), "twice is not yet a pattern")
        XCTAssertTrue(server.clock.advance(upTo: 5) { link.pendingUploads == 0 })
        XCTAssertEqual(server.texts.filter { $0.contains(#""type":"upload""#) }.count, 3)
        let warnings = log.lines.filter { $0.hasPrefix("warning") && $0.contains("may be older than 0.5") && $0.contains(#"server.file_names = "seconds""#) }
        XCTAssertEqual(warnings.count, 1, log.text)
        link.stop()
    }

    func testDropsAwayFromUploadsSayNothingAboutNames() throws {
        let server = InMemoryAllSparkServer()
        let log = LogCapture()
        let link = server.makeLink(recorder: nil, logger: log.logger)
        link.start()
        for _ in 0..<4 {
            XCTAssertTrue(server.clock.advance(upTo: 2) { link.state == .connected(.ws) })
            server.clock.advance(by: 2)
            server.connection?.dropByPeer()
        }
        server.clock.advance(by: 1)
        XCTAssertFalse(log.contains("server.file_names"), log.text)
        link.stop()
    }
}
