import XCTest
@testable import FaceBlur

/// A followed face found again by its look: where it moved, never where it is not.
final class FaceTemplateTests: XCTestCase {
    static let (width, height) = (320, 240)

    /// A textured picture (smoothed noise, fixed seed): structure at every scale, like a face and its surroundings.
    func texture(seed: UInt64) -> [UInt8] {
        var state = seed
        func next() -> Double { state = state &* 6364136223846793005 &+ 1442695040888963407; return Double(state >> 33) / Double(1 << 31) }
        let coarse = 16
        let (cw, ch) = (Self.width / coarse + 2, Self.height / coarse + 2)
        let grid = (0..<(cw * ch)).map { _ in next() }
        var out = [UInt8](repeating: 0, count: Self.width * Self.height)
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let gx = Double(x) / Double(coarse), gy = Double(y) / Double(coarse)
                let (ix, iy) = (Int(gx), Int(gy))
                let (fx, fy) = (gx - Double(ix), gy - Double(iy))
                let v = grid[iy * cw + ix] * (1 - fx) * (1 - fy) + grid[iy * cw + ix + 1] * fx * (1 - fy)
                    + grid[(iy + 1) * cw + ix] * (1 - fx) * fy + grid[(iy + 1) * cw + ix + 1] * fx * fy
                out[y * Self.width + x] = UInt8(40 + 160 * v + 20 * next())
            }
        }
        return out
    }

    /// `picture` moved by (dx, dy) pixels (what was at p is at p + d).
    func shifted(_ picture: [UInt8], dx: Int, dy: Int) -> [UInt8] {
        var out = [UInt8](repeating: 128, count: picture.count)
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let (sx, sy) = (x - dx, y - dy)
                if sx >= 0, sy >= 0, sx < Self.width, sy < Self.height { out[y * Self.width + x] = picture[sy * Self.width + sx] }
            }
        }
        return out
    }

    func template(_ picture: [UInt8], _ box: FaceRect) -> FaceTemplate? {
        picture.withUnsafeBufferPointer { FaceTemplate(luma: $0.baseAddress!, width: Self.width, height: Self.height, stride: Self.width, box: box) }
    }

    func find(_ t: FaceTemplate, in picture: [UInt8], around box: FaceRect) -> FaceRect? {
        picture.withUnsafeBufferPointer { t.find(in: $0.baseAddress!, width: Self.width, height: Self.height, stride: Self.width, around: box)?.box }
    }

    func testAFaceThatMovedIsFoundWhereItWent() throws {
        let picture = texture(seed: 1)
        let box = FaceRect(x: 120, y: 90, width: 40, height: 48)
        let t = try XCTUnwrap(template(picture, box))
        for (dx, dy) in [(0, 0), (6, -4), (-11, 9), (15, 3)] {
            let found = try XCTUnwrap(find(t, in: shifted(picture, dx: dx, dy: dy), around: box), "moved by (\(dx), \(dy))")
            XCTAssertEqual(found.x, box.x + Double(dx), accuracy: 2.5, "moved by (\(dx), \(dy))")
            XCTAssertEqual(found.y, box.y + Double(dy), accuracy: 2.5, "moved by (\(dx), \(dy))")
            XCTAssertEqual(found.width, box.width)
        }
    }

    func testAFaceThatIsNotThereIsLeftToTheNetwork() throws {
        let box = FaceRect(x: 120, y: 90, width: 40, height: 48)
        let t = try XCTUnwrap(template(texture(seed: 1), box))
        XCTAssertNil(find(t, in: texture(seed: 2), around: box), "another picture: no match")
        XCTAssertNil(find(t, in: shifted(texture(seed: 1), dx: 45, dy: 0), around: box),
                     "moved further than the search reaches: the network must look")
        let flat = [UInt8](repeating: 90, count: Self.width * Self.height)
        XCTAssertNil(find(t, in: flat, around: box), "a flat picture matches nothing")
    }

    func testFlatOrOutsideBoxesHaveNoTemplate() {
        let flat = [UInt8](repeating: 90, count: Self.width * Self.height)
        XCTAssertNil(template(flat, FaceRect(x: 120, y: 90, width: 40, height: 48)), "nothing to match by")
        XCTAssertNil(template(texture(seed: 1), FaceRect(x: 300, y: 90, width: 40, height: 48)), "not wholly in the picture")
        XCTAssertNil(template(texture(seed: 1), FaceRect(x: 10, y: 10, width: 6, height: 6)), "too small to match reliably")
    }
}
