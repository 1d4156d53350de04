import XCTest
import Logging
import RecorderCore
@testable import Recorder

/// Which frames start a chunk, with frame times as a jittery camera gives them.
final class ChunkCutsTests: XCTestCase {
    let ms: UInt64 = 1_000_000

    /// A wall clock whose readings the test sets: `offset` is wall minus monotonic.
    final class SetClock: @unchecked Sendable {
        var offset: Int64 = 1_700_000_000_000_000_000
        lazy var wallClock = WallClock(syncFlag: nil, logger: Logger(label: "test")) { [unowned self] in
            ClockReading(monotonicNs: 50_000_000_000, wallNs: 50_000_000_000 + self.offset)
        }
    }
    let clock = SetClock()

    func testTheFirstFrameAtOrPastStartPlusLengthStartsTheNextChunkAndIsSplitThere() {
        let cuts = ChunkCuts(lengthMs: 2000, wallClock: clock.wallClock)
        var splits: [UInt64] = []
        cuts.onCut = { splits.append($0) }
        let times: [UInt64] = [0, 66, 1998, 2003, 2070, 4001, 4068].map { $0 * ms }
        let starts = times.map { cuts.startsChunk(at: $0) }
        XCTAssertEqual(starts, [false, false, false, true, false, false, true],
                       "the first frame starts the first chunk without a cut; 2003 is the first at or past 0 + 2000, 4068 past 2003 + 2000")
        XCTAssertEqual(splits, [2003 * ms, 4068 * ms])
    }

    func testALengthChangeAppliesToTheChunkBeingWrittenAndNoneCutsWithoutVideo() {
        let cuts = ChunkCuts(lengthMs: 10_000, wallClock: clock.wallClock)
        XCTAssertFalse(cuts.startsChunk(at: 0))
        XCTAssertFalse(cuts.startsChunk(at: 1500 * ms))
        cuts.setLength(ms: 2000)
        XCTAssertTrue(cuts.startsChunk(at: 2010 * ms), "the chunk being written ends at its start + the new length")
        cuts.setLength(ms: Optional<Int>.none)
        XCTAssertFalse(cuts.startsChunk(at: 9000 * ms), "no chunks: no cuts")
        // A new sink took over at a keyframe: its first chunk starts there.
        cuts.restart(at: 9500 * ms, lengthMs: 3000)
        XCTAssertFalse(cuts.startsChunk(at: 12_000 * ms))
        XCTAssertTrue(cuts.startsChunk(at: 12_520 * ms))
    }

    /// A step of the wall clock ends the chunk at the frame that noticed it,
    /// and the chunk it starts is named in the new time; a later chunk keeps it.
    func testAStepOfTheWallClockStartsTheNextChunkNamedInTheNewTime() {
        let cuts = ChunkCuts(lengthMs: 10_000, wallClock: clock.wallClock)
        var splits: [UInt64] = []
        cuts.onCut = { splits.append($0) }
        let before = clock.offset
        XCTAssertFalse(cuts.startsChunk(at: 0))
        XCTAssertFalse(cuts.startsChunk(at: 33 * ms))
        clock.offset -= 3600 * 1_000_000_000
        XCTAssertTrue(cuts.startsChunk(at: 66 * ms), "the clock was set back an hour: a new chunk from this frame")
        XCTAssertFalse(cuts.startsChunk(at: 100 * ms))
        XCTAssertEqual(splits, [66 * ms])
        XCTAssertEqual(cuts.wallClockOffset(atRunningTime: 0), before, "the first chunk is named in the old time")
        XCTAssertEqual(cuts.wallClockOffset(atRunningTime: 66 * ms), before - 3600 * 1_000_000_000, "the next in the new")
        XCTAssertEqual(clock.wallClock.steps, 1)
        XCTAssertEqual(clock.wallClock.latestStep?.sizeNs, -3600 * 1_000_000_000)
        // 80 ms is jitter, no step.
        clock.offset += 80 * 1_000_000
        XCTAssertFalse(cuts.startsChunk(at: 133 * ms))
        XCTAssertEqual(clock.wallClock.steps, 1)
    }
}
