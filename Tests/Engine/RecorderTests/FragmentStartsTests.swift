import XCTest
@testable import Recorder

/// Chunks of one sink end where the next one starts, whatever order
/// splitmuxsink closes them in (it finalises asynchronously).
final class FragmentStartsTests: XCTestCase {
    func testInOrderClosesEndAtTheSuccessorsStart() {
        var starts = FragmentStarts()
        for s: UInt64 in [0, 2_000, 4_000] { starts.opened(at: s) }
        XCTAssertEqual(starts.closed(startingAt: 0, stillOpen: [2_000, 4_000]), 2_000)
        XCTAssertEqual(starts.closed(startingAt: 2_000, stillOpen: [4_000]), 4_000)
        XCTAssertNil(starts.closed(startingAt: 4_000, stillOpen: []), "the last chunk has no successor")
        XCTAssertEqual(starts.starts, [])
    }

    /// The failure CI caught: at a stop just after a boundary the short last
    /// chunk closed before the 2 s chunk before it, which then lost its end
    /// and was catalogued as 1.0 s while its file held 2.0 s.
    func testALaterChunkClosingFirstLeavesTheEarlierOnesEnd() {
        var starts = FragmentStarts()
        for s: UInt64 in [0, 2_000, 4_000] { starts.opened(at: s) }
        XCTAssertEqual(starts.closed(startingAt: 0, stillOpen: [2_000, 4_000]), 2_000)
        XCTAssertNil(starts.closed(startingAt: 4_000, stillOpen: [2_000]))
        XCTAssertEqual(starts.closed(startingAt: 2_000, stillOpen: []), 4_000)
        XCTAssertEqual(starts.starts, [])
    }

    func testStartsBeforeEveryOpenChunkAreForgotten() {
        var starts = FragmentStarts()
        for s: UInt64 in [0, 2_000, 4_000, 6_000] { starts.opened(at: s) }
        _ = starts.closed(startingAt: 0, stillOpen: [2_000, 4_000, 6_000])
        _ = starts.closed(startingAt: 2_000, stillOpen: [4_000, 6_000])
        XCTAssertEqual(starts.starts, [4_000, 6_000])
    }
}
