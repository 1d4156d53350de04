import XCTest
@testable import FaceBlur

final class FaceTrackerTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    var settings: FaceTracker.Settings {
        var s = FaceTracker.Settings()
        s.margin = 0.25
        s.motion = 1.0
        s.holdNs = second
        s.lookAheadNs = second / 2
        s.maxMotionGrowth = 0.5
        return s
    }

    func testCoversAFaceBetweenDetectionsGrowingWithTheGap() {
        var tracker = FaceTracker(settings: settings)
        let face = FaceRect(x: 100, y: 100, width: 40, height: 40)
        tracker.update(detections: [face], time: 10 * second)
        let atDetection = tracker.regions(at: 10 * second)
        XCTAssertEqual(atDetection, [face.expanded(by: 0.25)])
        let later = tracker.regions(at: 10 * second + second / 10)
        XCTAssertEqual(later.count, 1)
        XCTAssertEqual(later[0], face.expanded(by: 0.35), "grows by motion × gap")
        XCTAssertEqual(tracker.regions(at: 10 * second - second / 4).count, 1, "look-ahead: hidden before it was first seen")
        XCTAssertEqual(tracker.regions(at: 10 * second - second).count, 0, "but not long before")
        XCTAssertEqual(tracker.regions(at: 11 * second + 1).count, 0, "released after the hold")
        XCTAssertEqual(tracker.regions(at: 11 * second), [face.expanded(by: 0.75)], "motion growth is capped")
    }

    func testFollowsAMovingFaceAndUnitesObservationsAroundTheFrame() {
        var tracker = FaceTracker(settings: settings)
        let a = FaceRect(x: 100, y: 100, width: 40, height: 40)
        let b = FaceRect(x: 120, y: 100, width: 40, height: 40)
        tracker.update(detections: [a], time: second)
        tracker.update(detections: [b], time: 2 * second)
        XCTAssertEqual(tracker.trackCount, 1, "a moved face is the same track")
        let between = tracker.regions(at: second + second / 2)
        XCTAssertEqual(between.count, 1)
        XCTAssertLessThanOrEqual(between[0].x, a.x)
        XCTAssertGreaterThanOrEqual(between[0].maxX, b.maxX, "covers both positions")
    }

    func testSeparateFacesAreSeparateTracksAndArePruned() {
        var tracker = FaceTracker(settings: settings)
        tracker.update(detections: [FaceRect(x: 0, y: 0, width: 30, height: 30),
                                    FaceRect(x: 400, y: 200, width: 30, height: 30)], time: second)
        XCTAssertEqual(tracker.trackCount, 2)
        XCTAssertEqual(tracker.regions(at: second).count, 2)
        tracker.prune(now: 3 * second)
        XCTAssertEqual(tracker.trackCount, 0)
    }

    func testTileDetectionsOnInnerEdgesAreDropped() {
        let tile = FaceBlurStage.tileRegion(0, width: 1000, height: 1000)   // top-left, inner edges at 600
        XCTAssertTrue(FaceBlurStage.touchesInnerEdge(FaceRect(x: 560, y: 100, width: 40, height: 50), of: tile, width: 1000, height: 1000))
        XCTAssertFalse(FaceBlurStage.touchesInnerEdge(FaceRect(x: 0, y: 0, width: 40, height: 50), of: tile, width: 1000, height: 1000),
                       "the frame's own edges are real edges")
    }

    func testTileRegionsCoverTheFrameWithOverlap() {
        let tiles = (0..<4).map { FaceBlurStage.tileRegion($0, width: 1280, height: 720) }
        XCTAssertEqual(tiles[0].x, 0); XCTAssertEqual(tiles[0].y, 0)
        XCTAssertEqual(tiles[3].maxX, 1280); XCTAssertEqual(tiles[3].maxY, 720)
        XCTAssertGreaterThan(tiles[0].maxX, tiles[1].x, "neighbours overlap")
        XCTAssertGreaterThan(tiles[0].maxY, tiles[2].y)
    }
}
