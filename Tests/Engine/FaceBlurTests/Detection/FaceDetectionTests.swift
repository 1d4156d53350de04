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

    /// Detectors sharing their networks (the stage's detection threads)
    /// find exactly what a detector with its own networks finds, at every
    /// input size the stage uses, also while they run side by side and the
    /// shared set drops and reloads sizes (one sharer: room for one large
    /// network only, so every change of size reloads).
    func testSharedNetworksDetectExactlyAsOwnOnes() throws {
        for runtime in [InferenceRuntime.openCV, .onnxRuntime] {
            try checkSharedNetworksDetectExactlyAsOwnOnes(runtime: runtime)
        }
    }

    /// The stage's passes over the group photo (whole frame stretched to 640
    /// wide, two tiles and a follow-sized square).
    func groupPhotoPasses(width w: Int, height h: Int) -> [(region: FaceRect, input: (width: Int, height: Int), keepAspect: Bool)] {
        [
            (FaceRect(x: 0, y: 0, width: Double(w), height: Double(h)),
             FaceDetector.inputSize(forRegionWidth: w, height: h, inputWidth: 640), false),
            (FaceRect(x: 0, y: 0, width: 480, height: 416), (480, 416), true),
            (FaceRect(x: Double(w - 480), y: Double(h - 416), width: 480, height: 416), (480, 416), true),
            (FaceRect(x: 300, y: 100, width: 300, height: 300), (96, 96), true),
        ]
    }

    /// ONNX Runtime runs the same network as OpenCV: on every pass the same
    /// faces, boxes and scores to float rounding (the two sum in different orders).
    func testONNXRuntimeFindsWhatOpenCVFinds() throws {
        let group = try XCTUnwrap(decodeFrames(try testAsset("t1.jpg")).first)
        let openCV = try FaceDetector(modelPath: faceModelPath, threads: 1, runtime: .openCV)
        let onnxRuntime = try FaceDetector(modelPath: faceModelPath, runtime: .onnxRuntime)
        var faces = 0
        for (i, p) in groupPhotoPasses(width: group.width, height: group.height).enumerated() {
            let (a, b) = try group.y.withUnsafeBufferPointer { y in
                try [openCV, onnxRuntime].map {
                    try $0.detect(luma: y.baseAddress!, width: group.width, height: group.height, stride: group.width,
                                  region: p.region, input: p.input, keepAspect: p.keepAspect, threshold: 0.3)
                }.pair
            }
            XCTAssertEqual(a.count, b.count, "pass \(i): \(a.map(\.rect)) vs \(b.map(\.rect))")
            for (x, y) in zip(a, b) {
                XCTAssertGreaterThan(x.rect.intersectionOverUnion(y.rect), 0.98, "pass \(i): \(x.rect) vs \(y.rect)")
                XCTAssertEqual(x.score, y.score, accuracy: 0.005, "pass \(i)")
            }
            faces += a.count
        }
        XCTAssertGreaterThanOrEqual(faces, 8, "the group photo's faces over the four passes")
    }

    /// The 8-bit network (`scripts/fetch-face-model` quantises it, the stage
    /// runs every search on it) finds what the float one finds on the
    /// whole-frame, tile and follow passes: on the group photo, and on a
    /// photo left out of its calibration (biden.jpg) searched whole and cut
    /// into a tile and a follow square.
    func testEightBitNetworkFindsWhatTheFloatOneFinds() throws {
        try XCTSkipUnless(eightBitModelInstalled || !FileManager.default.fileExists(atPath: faceModelPath.replacingOccurrences(
            of: "centerface.onnx", with: "\(FaceDetector.quantizedModelName).rejected")),
            "scripts/fetch-face-model found the 8-bit network losing faces on this CPU and did not install it")
        let quantized = try XCTUnwrap(FaceDetector.SharedNets.quantized(besideModel: faceModelPath),
                                      "\(FaceDetector.quantizedModelName) beside \(faceModelPath) (scripts/fetch-face-model)")
        let eightBit = try FaceDetector(sharing: quantized)
        let float = try FaceDetector(modelPath: faceModelPath, runtime: .onnxRuntime)
        let group = try XCTUnwrap(decodeFrames(try testAsset("t1.jpg")).first)
        let biden = try XCTUnwrap(decodeFrames(try testAsset("biden.jpg")).first)
        let (bw, bh) = (Double(biden.width), Double(biden.height))
        let cases: [(image: RawImage, region: FaceRect, input: (width: Int, height: Int), keepAspect: Bool)] =
            groupPhotoPasses(width: group.width, height: group.height).map { (group, $0.region, $0.input, $0.keepAspect) } + [
                (biden, FaceRect(x: 0, y: 0, width: bw, height: bh),
                 FaceDetector.inputSize(forRegionWidth: biden.width, height: biden.height, inputWidth: 640), false),
                (biden, FaceRect(x: 0, y: 0, width: bw, height: bh), (480, 416), true),
                (biden, FaceRect(x: bw * 0.25, y: 0, width: bw * 0.5, height: bw * 0.5), (96, 96), true),
            ]
        var sure = 0
        for (i, c) in cases.enumerated() {
            let (reference, found) = try c.image.y.withUnsafeBufferPointer { y in
                try [float, eightBit].map {
                    try $0.detect(luma: y.baseAddress!, width: c.image.width, height: c.image.height, stride: c.image.width,
                                  region: c.region, input: c.input, keepAspect: c.keepAspect, threshold: 0.3)
                }.pair
            }
            func matched(_ face: FaceDetection, in others: [FaceDetection]) -> Bool {
                others.contains { $0.rect.intersectionOverUnion(face.rect) > 0.5 }
            }
            for face in reference where face.score >= 0.5 {
                XCTAssertTrue(matched(face, in: found), "pass \(i): \(face.rect) (\(face.score)) missed in 8 bits: \(found.map(\.rect))")
                sure += 1
            }
            for face in found where face.score >= 0.5 {
                XCTAssertTrue(matched(face, in: reference), "pass \(i): \(face.rect) (\(face.score)) found in 8 bits only")
            }
        }
        XCTAssertGreaterThanOrEqual(sure, 12, "faces the float network is sure of over the passes (the group photo whole: six)")
        // On OpenCV DNN there is no 8-bit network.
        XCTAssertNil(try FaceDetector.SharedNets.quantized(besideModel: faceModelPath, runtime: .openCV))
    }

    /// What the fast network is unsure of is the float network's call: an
    /// unsure find on the astronaut's face is kept (with the float box), an
    /// unsure find on the wall behind her is dropped, a sure one is kept as is.
    func testUnsureFindsOfTheScreenAreSettledByTheReference() throws {
        let astronaut = try XCTUnwrap(decodeFrames(try testAsset("astronaut.png")).first)
        let face = FaceRect(x: 183, y: 45, width: 86, height: 135)
        let wall = FaceRect(x: 20, y: 300, width: 90, height: 120)
        let elsewhere = FaceRect(x: 400, y: 380, width: 60, height: 80)
        final class Scripted: FaceDetecting {
            let faces: [FaceDetection]
            init(_ faces: [FaceDetection]) { self.faces = faces }
            func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, region: FaceRect,
                        input: (width: Int, height: Int), keepAspect: Bool, threshold: Float) throws -> [FaceDetection] { faces }
        }
        let screened = ScreenedDetector(
            screen: Scripted([FaceDetection(rect: face, score: 0.4), FaceDetection(rect: wall, score: 0.34),
                              FaceDetection(rect: elsewhere, score: 0.9)]),
            reference: try FaceDetector(modelPath: faceModelPath))
        let whole = FaceRect(x: 0, y: 0, width: Double(astronaut.width), height: Double(astronaut.height))
        let found = try astronaut.y.withUnsafeBufferPointer {
            try screened.detect(luma: $0.baseAddress!, width: astronaut.width, height: astronaut.height, stride: astronaut.width,
                                region: whole, input: (480, 480), keepAspect: true, threshold: 0.3)
        }
        XCTAssertEqual(found.count, 2, "\(found.map(\.rect))")
        XCTAssertTrue(found.contains { $0.rect == elsewhere && $0.score == 0.9 }, "the sure find, untouched: \(found.map(\.rect))")
        let settled = try XCTUnwrap(found.first { $0.rect.intersectionOverUnion(face) > 0.5 }, "\(found.map(\.rect))")
        XCTAssertNotEqual(settled.rect, face, "the float network's box replaces the unsure one")
        XCTAssertFalse(found.contains { $0.rect.intersectionOverUnion(wall) > 0 }, "\(found.map(\.rect))")
    }

    /// Two networks agreeing is evidence enough: an unsure find of the 8-bit
    /// screen (0.3 to 0.5) is kept where the float network scores it from
    /// the settle threshold (0.2) up, below the search threshold (a 20 px
    /// face at dusk scores 0.25 to 0.3 in the follow square), and dropped
    /// below it (the wall the 8-bit network took for a face: 0.14).
    func testTheReferenceSettlesUnsureFindsAtItsOwnThreshold() throws {
        /// Answers like a network: what scores at least the threshold asked for.
        final class Scored: FaceDetecting {
            let faces: [FaceDetection]
            init(_ faces: [FaceDetection]) { self.faces = faces }
            func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, region: FaceRect,
                        input: (width: Int, height: Int), keepAspect: Bool, threshold: Float) throws -> [FaceDetection] {
                faces.filter { $0.score >= threshold && $0.rect.intersectionOverUnion(region) > 0 }
            }
        }
        let dusk = FaceRect(x: 100, y: 100, width: 20, height: 24)
        let wall = FaceRect(x: 300, y: 100, width: 40, height: 48)
        let screened = ScreenedDetector(
            screen: Scored([FaceDetection(rect: dusk, score: 0.45), FaceDetection(rect: wall, score: 0.34)]),
            reference: Scored([FaceDetection(rect: dusk.offsetBy(dx: 1, dy: 1), score: 0.25),
                               FaceDetection(rect: wall, score: 0.14)]))
        let luma = [UInt8](repeating: 0, count: 640 * 480)
        let found = try luma.withUnsafeBufferPointer {
            try screened.detect(luma: $0.baseAddress!, width: 640, height: 480, stride: 640,
                                region: FaceRect(x: 0, y: 0, width: 640, height: 480), input: (640, 480),
                                keepAspect: true, threshold: 0.3)
        }
        XCTAssertEqual(found.map(\.rect), [dusk.offsetBy(dx: 1, dy: 1)], "the dusk face with the float box, not the wall")
    }

    /// Asked for by name, ONNX Runtime's missing files are an error naming
    /// them; `auto` falls back to OpenCV and says why.
    func testMissingONNXRuntimeIsAClearErrorOrAnAnnouncedFallback() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ort-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let model = folder.appendingPathComponent("centerface.onnx").path
        try FileManager.default.copyItem(atPath: faceModelPath, toPath: model)
        XCTAssertThrowsError(try FaceDetector.SharedNets(modelPath: model, sharers: 1, runtime: .onnxRuntime)) { error in
            XCTAssertTrue("\(error)".contains(folder.appendingPathComponent(FaceDetector.onnxRuntimeLibraryName).path), "\(error)")
            XCTAssertTrue("\(error)".contains("fetch-face-model"), "\(error)")
        }
        let fallback = try FaceDetector.SharedNets(modelPath: model, sharers: 1, runtime: .auto)
        XCTAssertEqual(fallback.runtime, .openCV)
        XCTAssertTrue(fallback.fallbackReason?.contains(FaceDetector.dynamicModelName) == true, "\(String(describing: fallback.fallbackReason))")
        // Beside the installed model both files are there: auto picks ONNX Runtime.
        let installed = try FaceDetector.SharedNets(modelPath: faceModelPath, sharers: 1, runtime: .auto)
        XCTAssertEqual(installed.runtime, .onnxRuntime)
        XCTAssertNil(installed.fallbackReason)
    }

    func checkSharedNetworksDetectExactlyAsOwnOnes(runtime: InferenceRuntime) throws {
        let group = try XCTUnwrap(decodeFrames(try testAsset("t1.jpg")).first)
        let (w, h) = (group.width, group.height)
        let passes = groupPhotoPasses(width: w, height: h)
        func run(_ detector: FaceDetector, _ pass: Int) throws -> [FaceDetection] {
            let p = passes[pass]
            return try group.y.withUnsafeBufferPointer {
                try detector.detect(luma: $0.baseAddress!, width: w, height: h, stride: w, region: p.region,
                                    input: p.input, keepAspect: p.keepAspect, threshold: 0.3)
            }
        }
        func same(_ a: [FaceDetection], _ b: [FaceDetection]) -> Bool {
            a.count == b.count && zip(a, b).allSatisfy { $0.rect == $1.rect && $0.score == $1.score }
        }
        // One OpenCV thread for both, as the stage (the thread count is
        // process-wide and changes the sums' order, so the last bits of scores).
        let own = try FaceDetector(modelPath: faceModelPath, threads: 1, runtime: runtime)
        let expected = try passes.indices.map { try run(own, $0) }
        XCTAssertGreaterThanOrEqual(expected[0].count, 5, "\(runtime): the group photo's faces, whole frame: \(expected[0].map(\.rect))")

        let shared = try FaceDetector.SharedNets(modelPath: faceModelPath, threads: 1, sharers: 1, runtime: runtime)
        XCTAssertEqual(shared.runtime, runtime)
        let detectors = try (0..<2).map { _ in try FaceDetector(sharing: shared) }
        // One after the other: each size change drops the large network loaded before.
        for round in 0..<2 {
            for i in passes.indices {
                XCTAssertTrue(same(try run(detectors[(i + round) % 2], i), expected[i]), "\(runtime): pass \(i), round \(round)")
            }
        }
        // Side by side, in different orders.
        let mismatches = NSLock()
        var wrong: [String] = []
        DispatchQueue.concurrentPerform(iterations: 2) { t in
            for k in 0..<(3 * passes.count) {
                let i = t == 0 ? k % passes.count : passes.count - 1 - k % passes.count
                let found = Result { try run(detectors[t], i) }
                if case .success(let faces) = found, same(faces, expected[i]) { continue }
                mismatches.withLock { wrong.append("\(runtime): thread \(t) pass \(i): \(found)") }
            }
        }
        XCTAssertEqual(wrong, [])
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

private extension Array {
    var pair: (Element, Element) { (self[0], self[1]) }
}
