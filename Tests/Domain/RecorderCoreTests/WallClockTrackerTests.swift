import XCTest
import RecorderCore

final class WallClockTrackerTests: XCTestCase {
    let second: Int64 = 1_000_000_000

    func reading(_ monotonicSeconds: Double, wall wallSeconds: Double) -> ClockReading {
        ClockReading(monotonicNs: UInt64(monotonicSeconds * 1e9), wallNs: Int64(wallSeconds * 1e9))
    }

    func testStepsEitherWayAreNoticedAndJitterIsNot() {
        var tracker = WallClockTracker()
        XCTAssertNil(tracker.observe(reading(100, wall: 1_700_000_000)), "the first reading sets the offset")
        XCTAssertNil(tracker.observe(reading(101, wall: 1_700_000_001.002)), "2 ms of jitter is no step")
        let back = tracker.observe(reading(102, wall: 1_700_000_002 - 3600))
        XCTAssertEqual(back?.sizeNs ?? 0, -3600 * second, accuracy: 5_000_000)
        XCTAssertEqual(back?.noticedAtMonotonicNs, 102_000_000_000)
        XCTAssertNil(tracker.observe(reading(103, wall: 1_700_000_003 - 3600)), "the new time goes on")
        let forward = tracker.observe(reading(104, wall: 1_700_000_004 + 86_400))
        XCTAssertEqual(forward?.sizeNs ?? 0, (86_400 + 3600) * second, accuracy: 5_000_000)
        XCTAssertEqual(tracker.wallNs(atMonotonicNs: 105_000_000_000), Int64(1_700_000_005 + 86_400) * second, "the offset in force")
    }

    func testAClockThatStartsIn1970AndLearnsTheTime() {
        var tracker = WallClockTracker()
        XCTAssertNil(tracker.observe(reading(5, wall: 5)))
        XCTAssertEqual(tracker.wallNs(atMonotonicNs: 6_000_000_000), 6 * second)
        let learnt = tracker.observe(reading(30, wall: 1_796_000_000))
        XCTAssertEqual(learnt?.seconds ?? 0, 1_796_000_000 - 30, accuracy: 0.001)
        XCTAssertEqual(learnt.map { "\($0)" }, "forward 20787 d 0 h 52 min 50.000 s")
    }

    func testStepsAreDescribedForPeople() {
        XCTAssertEqual("\(ClockStep(sizeNs: -3600 * second, noticedAtMonotonicNs: 0))", "back 1 h 0 min 0.000 s")
        XCTAssertEqual("\(ClockStep(sizeNs: 3_250_000_000, noticedAtMonotonicNs: 0))", "forward 3.250 s")
        XCTAssertEqual("\(ClockStep(sizeNs: 90_000 * second - 400, noticedAtMonotonicNs: 0))", "forward 1 d 1 h 0 min 0.000 s",
                       "rounded to the millisecond shown, never 59 min 60.000 s")
        XCTAssertEqual("\(ClockStep(sizeNs: 3 * 365 * 86_400 * second, noticedAtMonotonicNs: 0))", "forward 1095 d 0 h 0 min 0.000 s")
    }

    func testOffsetsApplyFromTheFrameTheyWereReadAt() {
        var offsets = WallClockOffsets()
        XCTAssertNil(offsets.offsetNs(atRunningTime: 0))
        offsets.set(1000, from: 10)
        offsets.set(1000, from: 20)   // unchanged: not kept twice
        offsets.set(-5000, from: 30)
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 5), 1000, "older frames take the earliest offset known")
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 29), 1000)
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 30), -5000)
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 1_000_000), -5000)
        for i in 0..<100 { offsets.set(Int64(i), from: UInt64(100 + i)) }
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 199), 99)
        XCTAssertEqual(offsets.offsetNs(atRunningTime: 30), Int64(100 - WallClockOffsets.kept), "bounded: the oldest are forgotten")
    }
}
