import XCTest
@testable import FaceBlur

/// The camera's own motion from block means: a pan is measured to within a
/// few pixels, a change of light alone is no motion.
extension CameraMotion {
    /// The picture's shift at the frame's centre in pixels (dx, dy): content at p in `previous` is at
    /// p + (dx, dy) in `current`; none when the motion cannot be told.
    func shift(from previous: [UInt8], to current: [UInt8]) -> (dx: Double, dy: Double) {
        (motion(from: previous, to: current) ?? .identity)
            .displacement(ofX: Double(columns * Self.block) / 2, y: Double(rows * Self.block) / 2)
    }
}

final class CameraMotionTests: XCTestCase {
    static let (width, height) = (640, 368)

    /// A textured picture (a large scene), seen through a 640×368 window at (x, y), with brightness `gain`.
    func blocks(x: Int, y: Int, gain: Double = 1) -> [UInt8] {
        var plane = [UInt8](repeating: 0, count: Self.width * Self.height)
        for row in 0..<Self.height {
            for col in 0..<Self.width {
                let (sx, sy) = (Double(col + x), Double(row + y))
                let v = 128 + 50 * sin(sx / 23) * cos(sy / 31) + 40 * sin((sx + 2 * sy) / 57) + 25 * cos(sx * sy / 9000)
                plane[row * Self.width + col] = UInt8(max(0, min(255, v * gain)))
            }
        }
        return plane.withUnsafeBufferPointer {
            PlaneEditor.blockMeans($0.baseAddress!, width: Self.width, height: Self.height, stride: Self.width, block: 8)
        }
    }

    func testAPanIsMeasuredInPixels() {
        let motion = CameraMotion(columns: Self.width / 8, rows: Self.height / 8)
        // The camera moves 21 px right and 13 px up: the picture moves 21 px left and 13 px down.
        let shift = motion.shift(from: blocks(x: 100, y: 100), to: blocks(x: 121, y: 87))
        XCTAssertEqual(shift.dx, -21, accuracy: 3)
        XCTAssertEqual(shift.dy, 13, accuracy: 3)
        let fast = motion.shift(from: blocks(x: 300, y: 100), to: blocks(x: 190, y: 100))
        XCTAssertEqual(fast.dx, 110, accuracy: 4, "a whip pan of 110 px per frame")
        XCTAssertEqual(fast.dy, 0, accuracy: 4)
    }

    func testLightAloneIsNoMotion() {
        let motion = CameraMotion(columns: Self.width / 8, rows: Self.height / 8)
        let shift = motion.shift(from: blocks(x: 50, y: 50), to: blocks(x: 50, y: 50, gain: 0.6))
        XCTAssertEqual(shift.dx, 0, accuracy: 2, "no motion, to within what block means resolve")
        XCTAssertEqual(shift.dy, 0, accuracy: 2)
        let flat = [UInt8](repeating: 90, count: (Self.width / 8) * (Self.height / 8))
        XCTAssertEqual(motion.shift(from: flat, to: flat).dx, 0, "a flat picture says nothing")
        // Someone big walking past a fixed camera: a third of the picture moves, the camera does not.
        var before = blocks(x: 0, y: 0), after = before
        let person = blocks(x: 900, y: 300), columns = Self.width / 8
        for row in 0..<(Self.height / 8) {
            for col in 0..<(columns / 3) {
                before[row * columns + col + 10] = person[row * columns + col]
                after[row * columns + col + 13] = person[row * columns + col]
            }
        }
        XCTAssertEqual(motion.shift(from: before, to: after).dx, 0, accuracy: 1, "a moving person is not a moving camera")
    }
}
