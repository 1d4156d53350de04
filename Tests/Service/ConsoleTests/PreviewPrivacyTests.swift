import XCTest
import Console
import FaceBlur
import Foundation
import GLibSupport
import RecorderCore
import RecorderService
import RecorderTestSupport

/// The live preview shows what is recorded, after the privacy stage: a clip
/// with a real face played live, the preview read over HTTP as a browser
/// would, and every picture searched for the face with the same detector.
/// The same run with blurring off finds the face, so the check can fail.
final class PreviewPrivacyTests: XCTestCase {
    /// A fixed camera on the coffee photo with the astronaut standing in it, face about 110 px high.
    func faceClip(in dir: TemporaryDirectory) throws -> URL {
        try standingAstronautClip(in: dir) { try faces(in: $0, inputWidth: 512) }
    }

    func faces(in image: RawImage, inputWidth: Int = 640) throws -> [FaceRect] {
        let detector = try FaceDetector(modelPath: faceModelPath)
        return try image.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: image.width, height: image.height, stride: image.width,
                                inputWidth: inputWidth, threshold: 0.5)
        }.map(\.rect)
    }

    /// Records `clip` live with the console on and returns the preview pictures a viewer got in `seconds`,
    /// and the console's metrics at the end.
    func previewPictures(of clip: URL, faceBlur: Bool, seconds: Double) throws -> (pictures: [RawImage], metrics: String) {
        let dir = TemporaryDirectory()
        let config = dir.file("recorder.toml")
        try """
            [server]
            host = ""
            discovery = false
            [recording]
            pipeline = "\(repoPath("pipelines/file.pipeline"))"
            storage_dir = "\(dir.file("chunks").path)"
            chunk_duration_ms = 60000
            [privacy]
            face_blur = \(faceBlur)
            model = "\(faceModelPath)"
            [console]
            listen = "127.0.0.1:0"
            preview_fps = 10
            [pipeline.vars]
            input = "\(clip.path)"
            bitrate_kbps = 4000
            """.write(to: config, atomically: true, encoding: .utf8)
        let service = try RecorderService(settings: ServiceSettings(configFile: config.path))
        try ConsolePassword(storageDirectory: dir.file("chunks").path).set("preview test password")
        try service.start()
        let console = try Console(service: service)
        defer {
            console.stop()
            var stopped = false
            service.stop(reason: "test") { stopped = true }
            waitOnMainLoop(30) { stopped }
        }
        XCTAssertTrue(waitOnMainLoop(15) { service.recorder?.state == .recording })
        let stream = dir.file("preview.mjpeg")
        _ = try runWhileServing("/usr/bin/curl", ["-s", "-u", "admin:preview test password", "--max-time", "\(seconds)", "-o", stream.path,
                                                  "http://127.0.0.1:\(console.port)/api/v1/preview.mjpeg"], timeout: seconds + 10)
        let metrics = try runWhileServing("/usr/bin/curl", ["-s", "-u", "admin:preview test password",
                                                            "http://127.0.0.1:\(console.port)/metrics"], timeout: 10).output
        var pictures: [RawImage] = []
        for (i, jpeg) in try jpegParts(of: Data(contentsOf: stream)).enumerated() {
            let file = dir.file("picture-\(i).jpg")
            try jpeg.write(to: file)
            pictures += try decodeFrames(file)
        }
        return (pictures, metrics)
    }

    /// The value of the metric line that starts with `name` (labels included), if any.
    func metric(_ name: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    /// The JPEG pictures of a multipart/x-mixed-replace body, by each part's Content-Length.
    func jpegParts(of body: Data) throws -> [Data] {
        var parts: [Data] = []
        var index = body.startIndex
        let marker = Data("Content-Length: ".utf8), blank = Data("\r\n\r\n".utf8)
        while let found = body.range(of: marker, in: index..<body.endIndex),
              let lineEnd = body.range(of: Data("\r\n".utf8), in: found.upperBound..<body.endIndex),
              let length = Int(String(decoding: body[found.upperBound..<lineEnd.lowerBound], as: UTF8.self)),
              let headerEnd = body.range(of: blank, in: found.lowerBound..<body.endIndex) {
            let end = headerEnd.upperBound + length
            guard end <= body.endIndex else { break }   // the last picture, cut by the client's timeout
            parts.append(body.subdata(in: headerEnd.upperBound..<end))
            index = end
        }
        return parts
    }

    func testThePreviewNeverShowsAFaceThatIsRecordedPixelated() throws {
        let dir = TemporaryDirectory()
        let clip = try faceClip(in: dir)
        // Face detection keeps both cores busy: the preview gets what is left, never more than its 10 pictures/s.
        let (blurred, metrics) = try previewPictures(of: clip, faceBlur: true, seconds: 5)
        XCTAssertGreaterThan(blurred.count, 8, "the preview played")
        for (i, picture) in blurred.enumerated() {
            XCTAssertEqual(try faces(in: picture), [], "preview picture \(i) shows a face")
        }
        // The privacy stage's own counts reach /metrics: it saw the face and hid it.
        let frames = try XCTUnwrap(metric("allspark_privacy_frames_total", in: metrics), metrics)
        XCTAssertGreaterThan(frames, 20, metrics)
        XCTAssertGreaterThan(metric("allspark_privacy_frames_with_faces_total", in: metrics) ?? 0, 0, metrics)
        XCTAssertGreaterThanOrEqual(metric("allspark_privacy_faces_hidden_total", in: metrics) ?? 0,
                                    metric("allspark_privacy_frames_with_faces_total", in: metrics) ?? .infinity, metrics)
        XCTAssertEqual(metric("allspark_privacy_frames_blacked_out_total", in: metrics), 0, metrics)
        XCTAssertGreaterThan(metric(#"allspark_face_detection_seconds_count{pass="whole"}"#, in: metrics) ?? 0, 0, metrics)
        XCTAssertGreaterThan(metric("allspark_frames_captured_total", in: metrics) ?? 0, 0, metrics)
        // The control: the same scene without the privacy stage shows the face in the preview.
        let (plain, plainMetrics) = try previewPictures(of: clip, faceBlur: false, seconds: 2)
        XCTAssertGreaterThan(plain.count, 5)
        let withFace = try plain.filter { try !faces(in: $0).isEmpty }.count
        XCTAssertGreaterThan(withFace, plain.count / 2, "the detector sees the face in an unblurred preview")
        XCTAssertNil(metric("allspark_privacy_frames_total", in: plainMetrics), "no privacy stage, no counts of one")
    }
}
