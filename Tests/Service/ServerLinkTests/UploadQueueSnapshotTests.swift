import XCTest
import RecorderCore
import ServerLink
import ServerLinkTesting

/// What `ServerLink.uploadQueue` shows (the console's `GET /api/v1/uploads`):
/// the history of uploads that ended stays bounded, while the totals count them all.
final class UploadQueueSnapshotTests: XCTestCase {
    func testTheHistoryKeepsTheLastFiftyAndTheTotalsCountEveryUpload() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 53, now: server.clock.now)
        let link = server.makeLink(recorder: stored, announce: false)
        XCTAssertEqual(link.uploadQueue, .empty)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1, until: { link.state == .connected(.ws) }))
        let now = server.clock.now.timeIntervalSince1970
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(now)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 30, until: { link.pendingUploads == 0 && server.uploads.count == 53 }))
        link.stop()

        let queue = link.uploadQueue
        XCTAssertNil(queue.inFlight)
        XCTAssertEqual(queue.waiting, [])
        XCTAssertEqual(queue.watches, [])
        XCTAssertEqual(queue.finishedOK, 53)
        XCTAssertEqual(queue.finishedFailed, 0)
        XCTAssertEqual(queue.finished.map(\.name), stored.catalog.all.suffix(50).map(\.file), "the last 50, oldest first")
        XCTAssertTrue(queue.finished.allSatisfy(\.ok))
    }
}
