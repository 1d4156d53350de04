import XCTest
@testable import FaceBlur

/// Each hiding rule on its own, as a table: a face's placement in, the verdict and placement out
/// (1280×720 frame, the live tuning). `testTheRulesApplyInOrder` runs a face through all of them.
final class HidingPolicyTests: XCTestCase {
    let policy = HidingPolicy(hiding: PrivacyTuning.live.hiding, margin: 0.3, width: 1280, height: 720)
    let box = FaceRect(x: 600, y: 300, width: 40, height: 40)
    let atLeftEdge = FaceRect(x: 4, y: 300, width: 40, height: 40)

    func face(_ face: FaceRect, sighting: FaceRect? = nil, gone: HidingPolicy.Face.Gone? = nil) -> HidingPolicy.Face {
        HidingPolicy.Face(track: 1, region: face.expanded(by: 0.3), face: face, sighting: sighting, gone: gone)
    }
    func gone(cameraStill: Bool = true, from otherEnd: FaceRect? = nil, seconds: Double = 0.5, gaveUp: FaceRect? = nil,
              mirror: Bool = false) -> HidingPolicy.Face.Gone {
        .init(otherEnd: otherEnd, cameraStill: cameraStill, secondsBeyond: seconds, whenSearchesGaveUp: gaveUp, seenOnceReachingBeyondEdge: mirror)
    }
    func verdict(_ rule: HidingPolicy.Rule, _ f: HidingPolicy.Face) -> (HidingPolicy.Verdict, HidingPolicy.Placement) {
        var placement = HidingPolicy.Placement(face: f.face, region: f.region)
        return (policy.apply(rule, to: &placement, of: f), placement)
    }

    func testSightedFacesAreHiddenWhereTheTrackerPlacesThem() {
        let rows: [(HidingPolicy.Face, HidingPolicy.Verdict)] = [
            (face(box), .hide),
            (face(atLeftEdge), .hide),                   // on its sightings, even at an edge: as placed
            (face(box, sighting: box), .next),           // beyond them: the later rules decide
        ]
        for (f, expected) in rows { XCTAssertEqual(verdict(.sighted, f).0, expected, "\(f)") }
        XCTAssertEqual(policy.regions([face(atLeftEdge)]), [HiddenRegion(rect: atLeftEdge.expanded(by: 0.3), track: 1, rule: .sighted)])
    }

    func testAMirrorImageSeenOnceAndNeverAgainIsNotHidden() {
        let rows: [(HidingPolicy.Face, HidingPolicy.Verdict)] = [
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(mirror: true)), .notHidden),
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(mirror: false)), .next),
            (face(atLeftEdge, sighting: atLeftEdge), .next),   // not gone: still followed
        ]
        for (f, expected) in rows { XCTAssertEqual(verdict(.mirrorImage, f).0, expected, "\(f)") }
    }

    func testAFaceGoneInMidPictureIsNotHiddenAndOneAtAnEdgeGoesOn() {
        let nearEdge = FaceRect(x: 10, y: 300, width: 40, height: 40)
        let rows: [(HidingPolicy.Face, HidingPolicy.Verdict)] = [
            (face(box, sighting: box, gone: gone(gaveUp: box)), .notHidden),
            (face(box, sighting: nearEdge, gone: gone(gaveUp: box)), .next),       // seen near an edge
            (face(box, sighting: box, gone: gone(gaveUp: nearEdge)), .next),       // given up near one
            (face(box, sighting: box), .next),                                     // not gone
        ]
        for (f, expected) in rows { XCTAssertEqual(verdict(.goneInMidPicture, f).0, expected, "\(f)") }
    }

    func testAWalkerLostAtTheEdgeItWalkedToLeavesThroughItAtAStroll() {
        // Seen at the left edge after walking 100 px towards it; half a second later: at least
        // half a face size (20 px) further out.
        let cameFrom = atLeftEdge.offsetBy(dx: 100, dy: 0)
        let rows: [(HidingPolicy.Face, dx: Double)] = [
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(from: cameFrom)), -20),
            (face(atLeftEdge.offsetBy(dx: -30, dy: 0), sighting: atLeftEdge, gone: gone(from: cameFrom)), 0),  // already further out
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(cameraStill: false, from: cameFrom)), 0),      // a moving camera
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(from: atLeftEdge.offsetBy(dx: 10, dy: 0))), 0), // came from nearly there
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone(from: atLeftEdge.offsetBy(dx: -100, dy: 0))), 0), // walking in, not out
        ]
        for (f, dx) in rows {
            let (v, placement) = verdict(.leavesThroughEdge, f)
            XCTAssertEqual(v, .next)
            XCTAssertEqual(placement.face.x - f.face.x, dx, accuracy: 1e-9, "\(f)")
            XCTAssertEqual(placement.region.x - f.region.x, dx, accuracy: 1e-9, "the region moves with it")
        }
    }

    func testAGoneFaceAwayFromEveryEdgeIsNotHidden() {
        let rows: [(HidingPolicy.Face, HidingPolicy.Verdict)] = [
            (face(box, sighting: atLeftEdge, gone: gone()), .notHidden),
            (face(atLeftEdge, sighting: atLeftEdge, gone: gone()), .next),
            (face(atLeftEdge.offsetBy(dx: -100, dy: 0), sighting: atLeftEdge, gone: gone()), .notHidden),  // carried out
            (face(box, sighting: atLeftEdge), .next),                                                       // not gone
        ]
        for (f, expected) in rows { XCTAssertEqual(verdict(.goneAwayFromEdges, f).0, expected, "\(f)") }
    }

    func testAGoneFaceAtAnEdgeIsKeptOnTheEdgeSideOfWhereItWasSeen() {
        // The tracker's region reaches 60 px further in than the sighting and its margin (12 px).
        let wide = HidingPolicy.Face(track: 1, region: FaceRect(x: 0, y: 280, width: 116, height: 80), face: atLeftEdge,
                                     sighting: atLeftEdge, gone: gone())
        let (_, kept) = verdict(.keptOnTheEdgeSide, wide)
        XCTAssertEqual(kept.region, FaceRect(x: 0, y: 280, width: 44 + 12, height: 80))
        let bottom = FaceRect(x: 600, y: 676, width: 40, height: 40)
        let rising = HidingPolicy.Face(track: 1, region: FaceRect(x: 588, y: 600, width: 64, height: 120), face: bottom,
                                       sighting: bottom, gone: gone())
        XCTAssertEqual(verdict(.keptOnTheEdgeSide, rising).1.region, FaceRect(x: 588, y: 676 - 12, width: 64, height: 56))
        let notGone = HidingPolicy.Face(track: 1, region: wide.region, face: atLeftEdge, sighting: atLeftEdge)
        XCTAssertEqual(verdict(.keptOnTheEdgeSide, notGone).1.region, wide.region, "only gone faces")
    }

    func testBeyondItsSightingsAFaceNearAnEdgeReachesIt() {
        let rows: [(HidingPolicy.Face, reaches: Bool, x: Double)] = [
            (face(FaceRect(x: 15, y: 300, width: 40, height: 40), sighting: atLeftEdge), true, 0),
            (face(FaceRect(x: 19, y: 300, width: 40, height: 40), sighting: atLeftEdge), true, 0),    // within half a face
            (face(FaceRect(x: 25, y: 300, width: 40, height: 40), sighting: atLeftEdge), false, 13),  // further
            (face(box, sighting: box), false, 588),
        ]
        for (f, reaches, x) in rows {
            let (v, placement) = verdict(.reachesNearEdges, f)
            XCTAssertEqual(v, .hide)
            XCTAssertEqual(placement.reachesEdge, reaches, "\(f)")
            XCTAssertEqual(placement.region.x, x, accuracy: 1e-9, "\(f)")
        }
        XCTAssertEqual(verdict(.reachesNearEdges, face(atLeftEdge)).0, .next, "on its sightings: not this rule's")
    }

    func testTheRulesApplyInOrder() {
        XCTAssertEqual(HidingPolicy.rules, [.sighted, .mirrorImage, .goneInMidPicture, .leavesThroughEdge, .goneAwayFromEdges,
                                            .keptOnTheEdgeSide, .reachesNearEdges])
        // A walker lost at the left edge, half a second later: carried out 20 px, cut back to
        // where it was seen, stretched to the edge; a face gone in mid-picture: nothing.
        let walker = face(atLeftEdge, sighting: atLeftEdge, gone: gone(from: atLeftEdge.offsetBy(dx: 100, dy: 0)))
        let regions = policy.regions([walker, face(box, sighting: box, gone: gone(gaveUp: box))])
        XCTAssertEqual(regions.count, 1)
        XCTAssertEqual(regions.first?.rule, .gone)
        XCTAssertEqual(regions.first?.rect.x ?? 0, -8 - 20, accuracy: 1e-9, "past the edge")
        XCTAssertEqual(regions.first?.rect.maxX ?? 0, 56 - 20, accuracy: 1e-9, "carried out with the walker")
    }
}
