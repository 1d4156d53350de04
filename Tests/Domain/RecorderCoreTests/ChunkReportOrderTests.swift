import RecorderCore
import XCTest

/// Finished chunks are reported oldest first even when they close out of order.
final class ChunkReportOrderTests: XCTestCase {
    func testChunksClosedInOrderAreReportedAtOnce() {
        var order = ChunkReportOrder<String>()
        order.closed(startNs: 0)
        XCTAssertEqual(order.named("a", startNs: 0, oldestOpenStartNs: 2), ["a"])
        order.closed(startNs: 2)
        XCTAssertEqual(order.named("b", startNs: 2, oldestOpenStartNs: 4), ["b"])
        XCTAssertEqual(order.heldCount, 0)
    }

    /// What CI saw: a stop right after a split, and the short last chunk
    /// closes while the 2 s one before it is still writing its index.
    func testAShortLastChunkClosedFirstWaitsForTheOneBeforeIt() {
        var order = ChunkReportOrder<String>()
        order.closed(startNs: 4)
        XCTAssertEqual(order.named("last", startNs: 4, oldestOpenStartNs: 2), [], "the chunk from 2 is still open")
        XCTAssertEqual(order.heldCount, 1)
        order.closed(startNs: 2)
        XCTAssertEqual(order.named("before", startNs: 2, oldestOpenStartNs: nil), ["before", "last"])
        XCTAssertEqual(order.heldCount, 0)
    }

    /// Closed in order but named out of it (one is probed, the other not) cannot
    /// happen on a serial worker; still, a chunk being named holds younger ones.
    func testAChunkStillBeingNamedHoldsYoungerOnes() {
        var order = ChunkReportOrder<String>()
        order.closed(startNs: 2)
        order.closed(startNs: 4)
        XCTAssertEqual(order.named("younger", startNs: 4, oldestOpenStartNs: 6), [])
        XCTAssertEqual(order.named("older", startNs: 2, oldestOpenStartNs: 6), ["older", "younger"])
    }

    func testAChunkNotKeptReleasesThoseBehindIt() {
        var order = ChunkReportOrder<String>()
        order.closed(startNs: 2)
        order.closed(startNs: 4)
        XCTAssertEqual(order.named("kept", startNs: 4, oldestOpenStartNs: nil), [])
        XCTAssertEqual(order.named(nil, startNs: 2, oldestOpenStartNs: nil), ["kept"])
    }

    /// After a stop, a chunk that never closes (a broken writer) holds nothing back.
    func testAfterAStopWhatIsStillOpenHoldsNothingBack() {
        var order = ChunkReportOrder<String>()
        order.closed(startNs: 4)
        XCTAssertEqual(order.named("closed", startNs: 4, oldestOpenStartNs: 2), [])
        XCTAssertEqual(order.release(oldestOpenStartNs: nil), ["closed"])
    }
}
