import XCTest
import RecorderTestSupport
import AllSparkProtocol
import RecorderCore
import ServerLinkTesting
@testable import ServerLink

/// Servers refuse a message of max_msg_size (300 MiB) bytes or more: the largest file that
/// can go out is one byte less, and the cap itself must be refused here, not by the server.
final class UploadCapTests: XCTestCase {
    func testAFileOfExactlyTheCapIsRefusedAndOneByteLessIsSent() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        let now = server.clock.now.timeIntervalSince1970
        let atCap = try stored.add(start: now - 20, seconds: 2, contents: StoredChunks.randomBytes(100_000))
        let below = try stored.add(start: now - 10, seconds: 2, contents: StoredChunks.randomBytes(99_999))
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, upload: .init(maxBytes: 100_000, attempts: 2, retryDelay: 0.2), logger: log.logger)
        link.start()
        server.clock.run()
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(now)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 5) { link.pendingUploads == 0 && server.uploads.count == 1 })
        link.stop()
        XCTAssertEqual(server.uploads.map(\.filename), [below.file], "99,999 bytes under a 100,000-byte cap go out")
        XCTAssertFalse(server.texts.contains { $0.contains(atCap.file) }, "a file of exactly the cap is never sent")
        XCTAssertTrue(log.contains("100000 bytes is more than the server accepts in one message (at most 99999 bytes"), log.text)
    }

    func testTheDefaultCapRefuses314572800Bytes() throws {
        XCTAssertEqual(ServerLink.UploadOptions().maxBytes, 314_572_800, "aiohttp's max_msg_size: 300 MiB")
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        let now = server.clock.now.timeIntervalSince1970
        let big = try stored.add(start: now - 20, seconds: 2, contents: Data(count: 10))
        // Sparse: 300 MiB that take no disk (the link refuses it by its size, never reads it).
        let handle = try FileHandle(forWritingTo: stored.catalog.url(of: big))
        try handle.truncate(atOffset: 314_572_800)
        try handle.close()
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 1), logger: log.logger)
        link.start()
        server.clock.run()
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(now)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 2) { link.uploadQueue.finishedFailed == 1 }, log.text)
        link.stop()
        XCTAssertFalse(server.texts.contains { $0.contains(big.file) }, "refused here, not by the server")
        XCTAssertTrue(log.contains("314572800 bytes is more than the server accepts in one message (at most 314572799 bytes"), log.text)
    }
}
