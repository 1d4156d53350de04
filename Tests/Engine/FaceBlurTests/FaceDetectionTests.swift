import XCTest
import RecorderTestSupport
@testable import FaceBlur

/// The real detector on real images from scikit-image.
final class FaceDetectionTests: XCTestCase {
    func detect(_ image: RawImage, inputWidth: Int = 640, threshold: Float = 0.5) throws -> [FaceDetection] {
        let detector = try FaceDetector(modelPath: faceModelPath)
        return try image.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                inputWidth: inputWidth, threshold: threshold)
        }
    }

    func testFindsTheAstronautsFaceOnLuma() throws {
        let astronaut = try XCTUnwrap(decodeFrames(try testAsset("astronaut.png")).first)
        let faces = try detect(astronaut, inputWidth: 512)
        XCTAssertEqual(faces.count, 1)
        // Where the face is in the 512×512 photo (eyebrows to chin, ear to ear).
        let known = FaceRect(x: 183, y: 45, width: 86, height: 135)
        let face = try XCTUnwrap(faces.first).rect
        XCTAssertGreaterThan(face.intersectionOverUnion(known), 0.5, "\(face)")
    }

    func testFindsNoFaceOnTheNegatives() throws {
        for name in ["coffee.png", "chelsea.png"] {
            let image = try XCTUnwrap(decodeFrames(try testAsset(name)).first)
            XCTAssertEqual(try detect(image, threshold: 0.3).count, 0, name)
        }
    }

    func testMissingModelIsAClearError() {
        XCTAssertThrowsError(try FaceDetector(modelPath: "/nonexistent/centerface.onnx")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/centerface.onnx is missing"), "\(error)")
        }
        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("junk-\(UUID()).onnx")
        XCTAssertTrue(FileManager.default.createFile(atPath: junk.path, contents: Data("not a model".utf8)))
        defer { try? FileManager.default.removeItem(at: junk) }
        XCTAssertThrowsError(try FaceDetector(modelPath: junk.path)) { error in
            XCTAssertTrue("\(error)".contains("cannot load the face model"), "\(error)")
        }
    }
}
