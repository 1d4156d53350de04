import XCTest
@testable import FaceBlur

/// A face's searches ahead and behind, transition by transition.
final class FollowTests: XCTestCase {
    func testAheadAFaceIsLostAfterTooManyMissesAndFoundAgainByALaterSightingOnly() {
        var f = Follow(foundOn: 10, traceBack: false)
        let rows: [(step: (inout Follow) -> Bool, ahead: Follow.Ahead, checkedThrough: Int)] = [
            ({ $0.missed(aheadOn: 12, giveUpAfter: 3) }, .following(misses: 1), 12),
            ({ $0.missed(aheadOn: 13, giveUpAfter: 3) }, .following(misses: 2), 13),
            ({ $0.found(aheadOn: 11); return false }, .following(misses: 2), 13),   // older: the misses stand
            ({ $0.missed(aheadOn: 14, giveUpAfter: 3) }, .lost, 14),
            ({ $0.missed(aheadOn: 15, giveUpAfter: 3) }, .lost, 15),               // a late search: still lost, not again
            ({ $0.found(aheadOn: 20); return false }, .following(misses: 0), 20),  // a whole-frame search found it
        ]
        var lostAt: [Int] = []
        for (k, row) in rows.enumerated() {
            if row.step(&f) { lostAt.append(k) }
            XCTAssertEqual(f.ahead, row.ahead, "step \(k)")
            XCTAssertEqual(f.checkedThrough, row.checkedThrough, "step \(k)")
        }
        XCTAssertEqual(lostAt, [3], "lost once, when the third miss came")
    }

    func testBehindATraceGoesBackUntilItMissesTooOftenOrTheFramesLeave() {
        var f = Follow(foundOn: 10, traceBack: true)
        XCTAssertEqual(f.behind, .tracing(frontier: 10, misses: 0))
        XCTAssertTrue(f.isPending(on: 9), "the trace heads for frame 9")
        f.found(behindOn: 8, merged: false)
        XCTAssertEqual(f.behind, .tracing(frontier: 8, misses: 0))
        XCTAssertFalse(f.missed(behindOn: 6, giveUpAfter: 2))
        XCTAssertEqual(f.behind, .tracing(frontier: 6, misses: 1))
        XCTAssertTrue(f.missed(behindOn: 5, giveUpAfter: 2), "the second miss ends it")
        XCTAssertEqual(f.behind, .done)
        XCTAssertFalse(f.missed(behindOn: 4, giveUpAfter: 2), "a search back from before it ended changes nothing")
        XCTAssertFalse(f.isPending(on: 9))

        var leaving = Follow(foundOn: 10, traceBack: true)
        leaving.found(behindOn: 7, merged: false)
        leaving.framesLeft(through: 6)
        XCTAssertEqual(leaving.behind, .tracing(frontier: 7, misses: 0))
        leaving.framesLeft(through: 7)
        XCTAssertEqual(leaving.behind, .done, "no frame below the oldest held")
        XCTAssertEqual(Follow(foundOn: 3, traceBack: false).behind, .done, "nothing held before it")
    }

    func testTwoTracksOfOneFaceGoOnAsOne() {
        var mine = Follow(foundOn: 20, traceBack: true)
        _ = mine.missed(aheadOn: 21, giveUpAfter: 1)
        XCTAssertTrue(mine.isLost)
        var other = Follow(foundOn: 12, traceBack: true)
        other.found(behindOn: 9, merged: false)
        other.found(aheadOn: 18)
        mine.absorb(other, otherIsEarlier: true, giveUpAfter: 3)
        XCTAssertEqual(mine.born, 12)
        XCTAssertEqual(mine.checkedThrough, 21)
        XCTAssertEqual(mine.ahead, .following(misses: 3), "followed again, one miss from lost")
        XCTAssertEqual(mine.frontier, 9, "the earlier track's trace goes on")

        var later = Follow(foundOn: 20, traceBack: true)
        later.found(behindOn: 15, merged: false)
        later.absorb(Follow(foundOn: 18, traceBack: true), otherIsEarlier: false, giveUpAfter: 3)
        XCTAssertEqual(later.frontier, 15, "the trace that reached further back")
        later.found(behindOn: 14, merged: true)
        XCTAssertEqual(later.frontier, 15, "merged: the trace it took over goes on from its own frontier")
    }
}
