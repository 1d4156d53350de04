import XCTest
import RecorderCore
import RecorderTestSupport
@testable import FaceBlur

/// YuNet (libfacedetection, fetched by scripts/fetch-face-model) on real
/// images, and the rule that puts it in front of CenterFace for follows.
final class YuNetFollowTests: XCTestCase {
    var yuNetPath: String { (faceModelPath as NSString).deletingLastPathComponent + "/" + YuNetDetector.libraryName }

    func detect(_ image: RawImage, region: FaceRect? = nil, input: (width: Int, height: Int), threshold: Float = 0.5) throws -> [FaceDetection] {
        let detector = try YuNetDetector(libraryPath: yuNetPath)
        let r = region ?? FaceRect(x: 0, y: 0, width: Double(image.width), height: Double(image.height))
        return try image.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                region: r, input: input, keepAspect: true, threshold: threshold)
        }
    }

    func testYuNetFindsTheAstronautInAFollowSquareAndNoFaceOnTheNegatives() throws {
        let astronaut = try XCTUnwrap(decodeFrames(try testAsset("astronaut.png")).first)
        // A follow square around the face (2.5 × its size, clipped), at YuNet's follow input.
        let known = FaceRect(x: 183, y: 45, width: 86, height: 135)
        let square = FaceRect(x: 57, y: 0, width: 338, height: 338)
        let input = PrivacyTuning.live.searches.yuNetFollowInput
        let faces = try detect(astronaut, region: square, input: (input, input))
        XCTAssertEqual(faces.count, 1, "\(faces.map(\.rect))")
        let face = try XCTUnwrap(faces.first).rect
        XCTAssertGreaterThan(face.intersectionOverUnion(known), 0.5, "frame pixels, not the square's: \(face)")
        for name in ["coffee.png", "chelsea.png"] {
            let image = try XCTUnwrap(decodeFrames(try testAsset(name)).first)
            XCTAssertEqual(try detect(image, input: (image.width, image.height)).count, 0, name)
        }
    }

    /// On the group photo YuNet finds every face CenterFace finds at full resolution, boxes of the same size.
    func testYuNetFindsTheFacesCenterFaceFindsOnTheGroupPhoto() throws {
        let group = try XCTUnwrap(decodeFrames(try testAsset("t1.jpg")).first)
        let whole = FaceRect(x: 0, y: 0, width: Double(group.width), height: Double(group.height))
        let centerFace = try FaceDetector(modelPath: faceModelPath, threads: 1)
        let reference = try group.y.withUnsafeBufferPointer {
            try centerFace.detect(luma: $0.baseAddress!, width: group.width, height: group.height, stride: group.width,
                                  region: whole, input: (1280, 896), keepAspect: true, threshold: 0.5)
        }
        XCTAssertGreaterThanOrEqual(reference.count, 6, "the photo's six people")
        let found = try detect(group, input: (group.width, group.height))
        for face in reference {
            let best = try XCTUnwrap(found.max { $0.rect.intersectionOverUnion(face.rect) < $1.rect.intersectionOverUnion(face.rect) })
            XCTAssertGreaterThan(best.rect.intersectionOverUnion(face.rect), 0.6, "CenterFace \(face.rect), YuNet \(best.rect)")
        }
    }

    /// Follows run on CenterFace unless a config names YuNet (and its threshold).
    func testAConfigChoosesTheFollowNetwork() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("follow-network-\(getpid()).toml")
        defer { try? FileManager.default.removeItem(at: file) }
        try "[recording]\npipeline = \"p\"\n".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(FaceBlurSettings(try ConfigLoader.load(file: file.path).privacy).followNetwork, .centerFace)
        try "[recording]\npipeline = \"p\"\n[privacy]\nfollow_network = \"yunet\"\nyunet_threshold = 0.6\n"
            .write(to: file, atomically: true, encoding: .utf8)
        let settings = FaceBlurSettings(try ConfigLoader.load(file: file.path).privacy, offline: true)
        XCTAssertEqual(settings.followNetwork, .yuNet)
        XCTAssertEqual(settings.tuning.searches.yuNetThreshold, 0.6, accuracy: 1e-6)
    }

    func testAMissingLibraryIsAClearError() {
        XCTAssertThrowsError(try YuNetDetector(libraryPath: "/nonexistent/libfacedetection.so")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("/nonexistent/libfacedetection.so") && text.contains("fetch-face-model"), text)
        }
    }

    /// YuNet answers a follow; CenterFace searches again whenever YuNet
    /// did not find the face looked for (another face is not it).
    func testCenterFaceSearchesAgainWhenYuNetMissesTheFace() throws {
        let expected = FaceRect(x: 40, y: 40, width: 30, height: 38)
        let there = FaceDetection(rect: FaceRect(x: 44, y: 42, width: 29, height: 36), score: 0.9)
        let elsewhere = FaceDetection(rect: FaceRect(x: 0, y: 0, width: 20, height: 24), score: 0.9)
        let fromCenterFace = FaceDetection(rect: FaceRect(x: 41, y: 41, width: 31, height: 39), score: 0.4)
        var centerFaceRuns = 0
        let centerFace = { () -> [FaceDetection] in centerFaceRuns += 1; return [fromCenterFace] }

        var result = FaceBlurStage.follow(expecting: expected, yuNet: { [elsewhere, there] }, centerFace: centerFace)
        XCTAssertEqual(result.faces.map(\.rect), [elsewhere.rect, there.rect], "YuNet's answer, other faces included")
        XCTAssertFalse(result.retried)
        XCTAssertEqual(centerFaceRuns, 0)
        for yuNet in [[elsewhere], []] {
            result = FaceBlurStage.follow(expecting: expected, yuNet: { yuNet }, centerFace: centerFace)
            XCTAssertEqual(result.faces.map(\.rect), [fromCenterFace.rect], "YuNet missed it: CenterFace's answer")
            XCTAssertTrue(result.retried)
        }
        XCTAssertEqual(centerFaceRuns, 2)
    }
}
