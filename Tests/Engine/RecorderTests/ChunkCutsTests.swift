import XCTest
@testable import Recorder

/// Which frames start a chunk, with frame times as a jittery camera gives them.
final class ChunkCutsTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    func testTheFirstFrameAtOrPastStartPlusLengthStartsTheNextChunkAndIsSplitThere() {
        let cuts = ChunkCuts(lengthMs: 2000)
        var splits: [UInt64] = []
        cuts.onCut = { splits.append($0) }
        let times: [UInt64] = [0, 66, 1998, 2003, 2070, 4001, 4068].map { $0 * ms }
        let starts = times.map { cuts.startsChunk(at: $0) }
        XCTAssertEqual(starts, [false, false, false, true, false, false, true],
                       "the first frame starts the first chunk without a cut; 2003 is the first at or past 0 + 2000, 4068 past 2003 + 2000")
        XCTAssertEqual(splits, [2003 * ms, 4068 * ms])
    }

    func testALengthChangeAppliesToTheChunkBeingWrittenAndNoneCutsWithoutVideo() {
        let cuts = ChunkCuts(lengthMs: 10_000)
        XCTAssertFalse(cuts.startsChunk(at: 0))
        XCTAssertFalse(cuts.startsChunk(at: 1500 * ms))
        cuts.setLength(ms: 2000)
        XCTAssertTrue(cuts.startsChunk(at: 2010 * ms), "the chunk being written ends at its start + the new length")
        cuts.setLength(ms: nil)
        XCTAssertFalse(cuts.startsChunk(at: 9000 * ms), "no chunks: no cuts")
        // A new sink took over at a keyframe: its first chunk starts there.
        cuts.restart(at: 9500 * ms, lengthMs: 3000)
        XCTAssertFalse(cuts.startsChunk(at: 12_000 * ms))
        XCTAssertTrue(cuts.startsChunk(at: 12_520 * ms))
    }
}
