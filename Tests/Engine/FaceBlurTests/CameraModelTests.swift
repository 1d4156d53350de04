import XCTest
@testable import FaceBlur

/// The camera model end to end without a detector: a hand-held camera
/// pushing in and rolling over a face-free textured scene. Its motion is
/// measured as a similarity, and what one search confirmed stays confirmed
/// while the camera carries it around: nothing needs searching again and
/// nothing would be hidden.
final class CameraModelTests: XCTestCase {
    static let (width, height) = (640, 368)
    static let frameNs: UInt64 = 33_333_333

    /// A textured scene seen by a camera at (x, y) (scene point at the frame's centre), zoomed in by `zoom`, rolled by `roll` radians.
    func view(x: Double, y: Double, zoom: Double, roll: Double) -> [UInt8] {
        var plane = [UInt8](repeating: 0, count: Self.width * Self.height)
        let (cx, cy) = (Double(Self.width) / 2, Double(Self.height) / 2)
        let (c, s) = (cos(roll) / zoom, sin(roll) / zoom)
        for row in 0..<Self.height {
            for col in 0..<Self.width {
                let (u, v) = (Double(col) - cx, Double(row) - cy)
                let (sx, sy) = (x + c * u - s * v, y + s * u + c * v)
                let value = 128 + 50 * sin(sx / 23) * cos(sy / 31) + 40 * sin((sx + 2 * sy) / 57) + 25 * cos(sx * sy / 9000)
                plane[row * Self.width + col] = UInt8(max(0, min(255, value)))
            }
        }
        return plane.withUnsafeBufferPointer {
            PlaneEditor.blockMeans($0.baseAddress!, width: Self.width, height: Self.height, stride: Self.width, block: 8)
        }
    }

    func testZoomAndRollAreMeasured() {
        let motion = CameraMotion(frameWidth: Self.width, height: Self.height)
        let m = motion.motion(from: view(x: 500, y: 400, zoom: 1, roll: 0), to: view(x: 500, y: 400, zoom: 1.03, roll: 0.02))
        XCTAssertEqual(m.scale, 1.03, accuracy: 0.006, "\(m)")
        XCTAssertEqual(m.angle, 0.02, accuracy: 0.006, "\(m)")
        // The centre stays where it was.
        let c = m.apply(Double(Self.width) / 2, Double(Self.height) / 2)
        XCTAssertEqual(c.x, Double(Self.width) / 2, accuracy: 3)
        XCTAssertEqual(c.y, Double(Self.height) / 2, accuracy: 3)
    }

    func testAPushInAndRollOverAFaceFreeSceneLeavesThePictureUnhiddenAfterTheFirstSearch() {
        var s = DetectionPlanner.Settings()
        s.wholeEvery = 4
        s.tileEvery = 8
        s.tileWidth = 320
        s.tileHeight = 224
        var p = DetectionPlanner(settings: s, tracker: FaceTracker(), width: Self.width, height: Self.height)
        let estimator = CameraMotion(frameWidth: Self.width, height: Self.height)
        var previous: [UInt8]?
        let frames = 40
        for i in 0..<frames {
            // Pushing in by up to 1.15× (below the zoom that makes a search worthwhile again), rolling by up to 4°, drifting.
            let t = Double(i) / Double(frames - 1)
            let blocks = view(x: 500 + 12 * t, y: 400 - 8 * t, zoom: 1 + 0.15 * t, roll: 0.07 * sin(2 * t))
            let motion = previous.map { estimator.motion(from: $0, to: blocks) } ?? .identity
            previous = blocks
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: blocks, motion: motion)
            if i == 0 {
                while let pass = p.nextPass() { p.begin(pass); p.record(pass, found: []) }
                XCTAssertTrue(p.isSettled(0))
            }
        }
        let area = Double(Self.width * Self.height)
        for i in 1..<frames {
            let hidden = p.unconfirmedParts(i, maximumCell: 32).reduce(0) { $0 + $1.rect.area } / area
            XCTAssertLessThan(hidden, 0.02, "frame \(i): \(Int(hidden * 100)) % of the picture would be hidden as unconfirmed")
        }
        XCTAssertNil(p.nextPass(), "nothing new entered: no search is owed")
        XCTAssertTrue((0..<frames).allSatisfy(p.isSettled))
    }

    func testContentEnteringAtTheEdgeDuringAPanIsUnconfirmed() {
        var s = DetectionPlanner.Settings()
        s.tileWidth = 320
        s.tileHeight = 224
        var p = DetectionPlanner(settings: s, tracker: FaceTracker(), width: Self.width, height: Self.height)
        let estimator = CameraMotion(frameWidth: Self.width, height: Self.height)
        var previous: [UInt8]?
        for i in 0..<10 {
            let blocks = view(x: 500 + 6 * Double(i), y: 400, zoom: 1, roll: 0)   // panning right 6 px a frame
            let motion = previous.map { estimator.motion(from: $0, to: blocks) } ?? .identity
            previous = blocks
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: blocks, motion: motion)
            if i == 0 { while let pass = p.nextPass() { p.begin(pass); p.record(pass, found: []) } }
        }
        let parts = p.unconfirmedParts(9, maximumCell: 32)
        XCTAssertFalse(parts.isEmpty, "54 px of new picture entered on the right")
        XCTAssertTrue(parts.allSatisfy { $0.rect.x >= Double(Self.width) - 54 - 3 * 8 - 32 },
                      "only the new strip on the right (and its neighbouring blocks): \(parts.map(\.rect))")
        XCTAssertFalse(p.isSettled(9), "the new strip must be searched")
    }
}
