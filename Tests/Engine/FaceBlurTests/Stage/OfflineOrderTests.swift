import XCTest
@testable import FaceBlur

/// Offline searches are applied in the order planned, whichever finishes first.
final class OfflineOrderTests: XCTestCase {
    func testOutcomesAreAppliedInTheOrderPlannedWhateverOrderTheyArriveIn() {
        var order = OfflineOrder<String, String>()
        XCTAssertNil(order.isNextDelivered, "nothing planned")
        order.plan("whole", frame: 3)
        order.plan("tile 1", frame: 3)
        order.plan("follow", frame: 4)
        XCTAssertEqual(order.oldestUnappliedFrame, 3)
        let first = order.take(), second = order.take(), third = order.take()
        XCTAssertEqual([first?.job, second?.job, third?.job], ["whole", "tile 1", "follow"], "taken in the order planned")
        XCTAssertNil(order.take())
        // The follow and the tile finish before the whole frame.
        order.deliver("found 1", for: third!.number)
        order.deliver("found 2", for: second!.number)
        XCTAssertEqual(order.isNextDelivered, false, "the whole frame's search is still running")
        XCTAssertNil(order.takeNext(), "nothing applied out of order")
        order.deliver("found 0", for: first!.number)
        var applied: [String] = []
        while let outcome = order.takeNext() { applied.append(outcome) }
        XCTAssertEqual(applied, ["found 0", "found 2", "found 1"])
        XCTAssertNil(order.oldestUnappliedFrame)
    }
}
