import GLibSupport
import GStreamerSupport
import XCTest
@testable import FaceBlur
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// The stage in the live recorder: every captured frame goes through it
/// and into a chunk, in real time.
final class LiveFaceBlurTests: XCTestCase {
    /// Keeps every stage the recorder builds (the first only validates) so the test can read its counters.
    final class Stages { var all: [FaceBlurStage] = []; var last: FaceBlurStage? { all.last } }

    func recorderWithStages(_ config: RecorderConfig, spareCPU: SpareCPU = .measured,
                            makeDetector: ((FaceBlurSettings) throws -> any FaceDetecting)? = nil) throws -> (Recorder, Stages) {
        let stages = Stages()
        let recorder = try Recorder(config: config, makeProcessor: { config in
            let stage = try FaceBlurStage(settings: FaceBlurSettings(config.privacy), realTime: true, logger: stageTestLogger(), spareCPU: spareCPU,
                                          makeDetector: makeDetector)
            stages.all.append(stage)
            return stage
        })
        return (recorder, stages)
    }

    func testLiveRecordingThroughTheStageKeepsEveryFrame() throws {
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: ["privacy.face_blur=true", "privacy.model=\(faceModelPath)"])
        let (recorder, stages) = try recorderWithStages(config)
        try recorder.start()
        runMainLoop(seconds: 6.5)
        XCTAssertTrue(stopAndWait(recorder))
        let stats = recorder.frameStatistics
        XCTAssertGreaterThan(stats.captured, 150)
        XCTAssertEqual(stats.captured, stats.recorded, "the delay line gives back every frame")
        let counters = try XCTUnwrap(stages.last).counters
        XCTAssertEqual(counters.frames, stats.captured)
        XCTAssertGreaterThan(counters.wholeFramePasses, 10, "detection keeps running")
        XCTAssertLessThan(Double(counters.blackedOut), Double(counters.frames) * 0.05, "\(counters)")
        var framesInChunks = 0
        for chunk in recorder.catalog.all { framesInChunks += try countFrames(in: recorder.catalog.url(of: chunk)) }
        XCTAssertEqual(framesInChunks, stats.recorded)
    }

    func testDetectorErrorBlacksOutInsteadOfPassingFrames() throws {
        // A frame format the stage cannot read (RGB) is an error it must not pass through.
        let dir = TemporaryDirectory()
        let pipeline = dir.file("rgb.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "format=I420", with: "format=RGB")
            .write(to: pipeline, atomically: true, encoding: .utf8)
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: ["privacy.face_blur=true", "privacy.model=\(faceModelPath)",
                                                                   "recording.pipeline=\(pipeline.path)"])
        let (recorder, stages) = try recorderWithStages(config)
        try recorder.start()
        runMainLoop(seconds: 3)
        XCTAssertTrue(stopAndWait(recorder))
        let counters = try XCTUnwrap(stages.last).counters
        XCTAssertGreaterThan(counters.frames, 30)
        XCTAssertEqual(counters.wholeFramePasses, 0, "nothing could be detected")
        XCTAssertEqual(counters.dropped, counters.frames, "every frame was refused: \(counters)")
        XCTAssertEqual(recorder.frameStatistics.recorded, 0, "no frame reached the encoder")
        XCTAssertEqual(recorder.catalog.all, [], "nothing was recorded")
    }

    struct InjectedFailure: Error {}

    /// The real detector, slowed down (an overloaded machine, or `delays` per search), or failing
    /// after `failAfter` passes. One per detection thread (its state is not shared).
    final class ImpairedDetector: FaceDetecting {
        let real: FaceDetector
        let delays: () -> Double
        let failAfter: Int?
        private var passes = 0
        init(_ settings: FaceBlurSettings, delays: @escaping () -> Double, failAfter: Int? = nil) throws {
            real = try FaceDetector(modelPath: settings.modelPath, threads: settings.threads)
            self.delays = delays
            self.failAfter = failAfter
        }
        convenience init(_ settings: FaceBlurSettings, delay: Double, failAfter: Int? = nil) throws {
            try self.init(settings, delays: { delay }, failAfter: failAfter)
        }
        func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, region: FaceRect,
                    input: (width: Int, height: Int), keepAspect: Bool, threshold: Float) throws -> [FaceDetection] {
            passes += 1
            if let failAfter, passes > failAfter { throw InjectedFailure() }
            Thread.sleep(forTimeInterval: delays())
            return try real.detect(luma: luma, width: width, height: height, stride: stride, region: region,
                                   input: input, keepAspect: keepAspect, threshold: threshold)
        }
    }

    static let (clipWidth, clipHeight, clipFrames) = (640, 360, 150)

    /// A fixed camera: the coffee photo, and the astronaut walking in from
    /// the left and across, growing from 40 to 110 px; its face box in each frame.
    func walkingFaceClip(in dir: TemporaryDirectory) throws -> (URL, [RawImage], [Rect]) {
        let background = try decodeFrames(testAsset("coffee.png"))[0].resized(width: Self.clipWidth, height: Self.clipHeight)
        let astronaut = try decodeFrames(testAsset("astronaut.png"))[0]
        let detector = try FaceDetector(modelPath: faceModelPath)
        let found = try astronaut.y.withUnsafeBufferPointer {
            try detector.detect(luma: $0.baseAddress!, width: astronaut.width, height: astronaut.height, stride: astronaut.width,
                                inputWidth: 512, threshold: 0.5)
        }
        let face = try XCTUnwrap(found.first?.rect)
        var frames: [RawImage] = [], faces: [Rect] = []
        for i in 0..<Self.clipFrames {
            let t = Double(i) / Double(Self.clipFrames - 1)
            let h = 40 + 70 * t, s = h / face.height
            let (fx, fy) = (-60 + 560 * t, 150 - 60 * t)
            var frame = background
            frame.draw(astronaut, x: fx - face.x * s, y: fy - face.y * s, scale: s)
            frames.append(frame)
            faces.append(Rect(x: fx, y: fy, width: face.width * s, height: h))
        }
        let url = dir.file("walking.mp4")
        try writeClip(frames, to: url)
        return (url, frames, faces)
    }

    /// Plays the first `frames` of `clip` live through the recorder with face blur and `detector`
    /// (waiting for them to be captured, however loaded the machine); returns the stage's counters and the recorded frames.
    func recordLive(_ clip: URL, frames count: Int, extra: [String] = [], spareCPU: SpareCPU = .measured,
                    detector: ((FaceBlurSettings) throws -> any FaceDetecting)?) throws -> (FaceBlurStage.Counters, [RawImage]) {
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: [
            "privacy.face_blur=true", "privacy.model=\(faceModelPath)", "recording.pipeline=\(repoPath("pipelines/file.pipeline"))",
            "pipeline.vars.input=\(clip.path)", "pipeline.vars.bitrate_kbps=6000", "recording.chunk_duration_ms=60000",
        ] + extra)
        let (recorder, stages) = try recorderWithStages(config, spareCPU: spareCPU, makeDetector: detector)
        try recorder.start()
        XCTAssertTrue(waitOnMainLoop(60) { recorder.frameStatistics.captured >= count }, "\(count) frames captured: \(recorder.frameStatistics)")
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertEqual(recorder.frameStatistics.captured, recorder.frameStatistics.recorded, "every captured frame is recorded")
        var frames: [RawImage] = []
        for chunk in recorder.catalog.all { frames += try decodeFrames(recorder.catalog.url(of: chunk)) }
        return (try XCTUnwrap(stages.last).counters, frames)
    }

    func testASlowDetectorHidesWhatItCouldNotConfirmAndNoFace() throws {
        let dir = TemporaryDirectory()
        let (clip, input, faces) = try walkingFaceClip(in: dir)
        // Every search takes 120 ms more and a frame may wait 400 ms: the stage cannot keep up.
        let (counters, output) = try recordLive(clip, frames: Self.clipFrames, extra: ["privacy.max_latency_ms=400"]) {
            try ImpairedDetector($0, delay: 0.12)
        }
        XCTAssertGreaterThan(counters.late, 20, "the detector was too slow: \(counters)")
        XCTAssertEqual(counters.blackedOut, 0, "late is not failed: no frame is blacked out whole")
        XCTAssertGreaterThanOrEqual(output.count, 120)
        let detector = try FaceDetector(modelPath: faceModelPath)
        // The corners never change. A late frame hides what changed since it was last searched and where a
        // face not yet looked for on it may have gone (`PrivacyTuning.live.hiding.pendingReach`: sightings up to the
        // tracker's hold before, grown by at most the margin and the reach of a face of unknown motion).
        // A corner out of every such reach is kept as it was.
        let grown = PrivacyTuning.Tracking().margin + PrivacyTuning.live.hiding.pendingReach.unknownMotion.growth
        let history = Int(Double(PrivacyTuning.Tracking().holdNs) / 1e9 * 30)
        let (w, h) = (Double(Self.clipWidth), Double(Self.clipHeight))
        let corners = [Rect(x: 0, y: 0, width: 190, height: 30), Rect(x: w - 190, y: 0, width: 190, height: 30),
                       Rect(x: 0, y: h - 30, width: 190, height: 30), Rect(x: w - 190, y: h - 30, width: 190, height: 30)]
        func withinReach(_ c: Rect, frame i: Int) -> Bool {
            faces[max(0, i - history)...i].contains { f in
                f.x - grown * f.width < c.x + c.width && f.x + f.width + grown * f.width > c.x
                    && f.y - grown * f.height < c.y + c.height && f.y + f.height + grown * f.height > c.y
            }
        }
        var faceFrames = 0, cornersJudged = 0, blurredCorners: [String] = []
        for (i, frame) in output.prefix(Self.clipFrames).enumerated() {
            // Only frames of the first second (before the first searches finished, nothing is confirmed) may be hidden whole.
            for (k, corner) in corners.enumerated() where i >= 30 && !withinReach(corner, frame: i) {
                guard let a = detail(of: input[i], in: corner), a > 1, let b = detail(of: frame, in: corner) else { continue }
                cornersJudged += 1
                if b < 0.6 * a { blurredCorners.append("frame \(i) corner \(k)") }
            }
            let face = faces[i]
            guard let visible = face.clipped(width: frame.width, height: frame.height),
                  Double((visible.x1 - visible.x0) * (visible.y1 - visible.y0)) >= 0.3 * face.area else { continue }
            faceFrames += 1
            let found = try frame.y.withUnsafeBufferPointer {
                try detector.detect(luma: $0.baseAddress!, width: frame.width, height: frame.height, stride: frame.width,
                                    inputWidth: 640, threshold: 0.5)
            }
            let truth = FaceRect(x: face.x, y: face.y, width: face.width, height: face.height)
            XCTAssertFalse(found.contains { $0.rect.intersectionOverUnion(truth) > 0.3 }, "frame \(i): the face is still found")
            let before = detail(of: input[i], in: face) ?? 0, after = detail(of: frame, in: face) ?? 0
            XCTAssertLessThan(after, 0.5 * before, "frame \(i): the face kept its detail")
        }
        XCTAssertGreaterThan(faceFrames, 100)
        XCTAssertEqual(blurredCorners, [], "the unchanged part of late frames out of the faces' reach is left as it was: \(counters)")
        XCTAssertGreaterThan(cornersJudged, 60, "corners out of reach were judged")
        print("slow detector: \(cornersJudged) corners out of the faces' reach judged")  // test report
    }

    /// Spare-time tiles run only with CPU to spare, and a small face (17 px,
    /// below what the regular tiles find on a still picture) in a slow pan is
    /// hidden. With none to spare they never run. (`SpareCPU.fixed` stands
    /// for the machine's idle time, which a test cannot control. The pan
    /// matters: spare-time tiles search frames the stage holds, and a still
    /// picture holds none once it was searched.)
    func testSpareTimeTilesRunOnlyWithCPUToSpareAndASmallFaceIsHidden() throws {
        let dir = TemporaryDirectory()
        let background = try decodeFrames(testAsset("coffee.png"))[0].resized(width: Self.clipWidth, height: Self.clipHeight)
        let astronaut = try decodeFrames(testAsset("astronaut.png"))[0]
        let found = try astronaut.y.withUnsafeBufferPointer {
            try FaceDetector(modelPath: faceModelPath).detect(luma: $0.baseAddress!, width: astronaut.width, height: astronaut.height,
                                                              stride: astronaut.width, inputWidth: 512, threshold: 0.5)
        }
        let face = try XCTUnwrap(found.first?.rect)
        // The camera pans slowly over the scene (a still picture holds no frame
        // back once searched, and spare-time tiles search only frames held).
        let scene = background.resized(width: Self.clipWidth + 300, height: Self.clipHeight)
        let (h, fx, fy) = (17.0, 400.0, 170.0)
        let s = h / face.height
        var frames: [RawImage] = [], faces: [Rect] = []
        for i in 0..<Self.clipFrames {
            let pan = 2.0 * Double(i)
            var frame = background
            frame.draw(scene, x: -pan, y: 0, scale: 1)
            frame.draw(astronaut, x: fx - pan - face.x * s, y: fy - face.y * s, scale: s)
            frames.append(frame)
            faces.append(Rect(x: fx - pan, y: fy, width: face.width * s, height: h))
        }
        let clip = dir.file("small.mp4")
        try writeClip(frames, to: clip)
        func detailKept(_ output: [RawImage]) -> Double {
            zip(output, zip(frames, faces)).suffix(60).map { out, source in
                (detail(of: out, in: source.1) ?? 0) / max(1e-6, detail(of: source.0, in: source.1) ?? 0)
            }.max() ?? 1
        }

        let (spare, withSpare) = try recordLive(clip, frames: Self.clipFrames, spareCPU: .fixed(cores: 2), detector: nil)
        XCTAssertGreaterThan(spare.spareTilePasses, 0, "\(spare)")
        XCTAssertLessThan(detailKept(withSpare), 0.5, "the small face is hidden once the spare-time tiles found it: \(spare)")

        let (busy, _) = try recordLive(clip, frames: Self.clipFrames, spareCPU: .fixed(cores: 0), detector: nil)
        XCTAssertEqual(busy.spareTilePasses, 0, "no CPU to spare: no spare-time search")
        XCTAssertGreaterThan(busy.tilePasses + busy.wholeFramePasses, 0, "the regular searches ran")
    }

    func testADetectorThatFailsBlacksOutEverythingAfter() throws {
        let dir = TemporaryDirectory()
        let (clip, _, _) = try walkingFaceClip(in: dir)
        let (counters, output) = try recordLive(clip, frames: 120) { try ImpairedDetector($0, delay: 0, failAfter: 12) }
        XCTAssertGreaterThan(counters.blackedOut, 30, "\(counters)")
        // Once black, black to the end: no frame after the failure shows anything.
        let black = output.map { frame in frame.y.allSatisfy { $0 <= 24 } }
        let first = try XCTUnwrap(black.firstIndex(of: true), "some frames are blacked out")
        XCTAssertTrue(black[first...].allSatisfy { $0 }, "every frame after the failure is black")
        XCTAssertEqual(black.filter { $0 }.count, counters.blackedOut)
    }

    func testLowerFPSRecordsOnlyFramesSearchedCompletelyWithTrueTimestamps() throws {
        let dir = TemporaryDirectory()
        let (clip, input, faces) = try walkingFaceClip(in: dir)
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: [
            "privacy.face_blur=true", "privacy.model=\(faceModelPath)", "recording.pipeline=\(repoPath("pipelines/file.pipeline"))",
            "pipeline.vars.input=\(clip.path)", "pipeline.vars.bitrate_kbps=6000", "recording.chunk_duration_ms=60000",
            "privacy.max_latency_ms=600", "privacy.whole_every=6", "privacy.tile_every=6", "privacy.when_behind=lower_fps",
        ])
        // Every search takes 50 ms more, each part of the picture is searched every 6 frames while it changes,
        // and a frame may wait 600 ms: the stage can search some frames completely in time, not all.
        let (recorder, stages) = try recorderWithStages(config) { try ImpairedDetector($0, delay: 0.05) }
        try recorder.start()
        // The whole clip, however long the start takes on a loaded machine.
        XCTAssertTrue(waitOnMainLoop(60) { recorder.frameStatistics.captured >= Self.clipFrames }, "\(recorder.frameStatistics)")
        XCTAssertTrue(stopAndWait(recorder))
        let counters = try XCTUnwrap(stages.last).counters
        let stats = recorder.frameStatistics
        XCTAssertGreaterThan(counters.skipped, 0, "the detector was too slow: \(counters)")
        XCTAssertEqual(counters.late, 0, "no frame left unconfirmed: those are not recorded")
        XCTAssertEqual(counters.blackedOut, 0)
        XCTAssertEqual(stats.recorded + counters.skipped, stats.captured, "every frame is recorded or counted as not: \(stats), \(counters)")
        var output: [(time: UInt64, image: RawImage)] = []
        for chunk in recorder.catalog.all { output += try decodeTimedFrames(recorder.catalog.url(of: chunk)) }
        XCTAssertEqual(output.count, stats.recorded)
        // How many a machine can search completely in time depends on its load (tests run side by side): some.
        XCTAssertGreaterThan(output.count, 0, "the frames searched completely are recorded")
        // True timestamps: frames keep their capture times, so what was not recorded leaves gaps of whole frames.
        let period = 1_000_000_000.0 / 30
        var gaps = 0
        for (a, b) in zip(output, output.dropFirst()) {
            let frames = Double(b.time - a.time) / period
            XCTAssertEqual(frames, frames.rounded(), accuracy: 0.1, "timestamps \(a.time) → \(b.time) are whole frames apart")
            gaps += max(0, Int(frames.rounded()) - 1)
        }
        // Frames left out between two recorded ones show as gaps in time (on a machine this slow they may all be at the end).
        XCTAssertLessThanOrEqual(gaps, counters.skipped)
        // No recorded frame shows the face: the network does not find it where it is, and its detail is gone.
        // (Anywhere else is not her face: now and then the check finds a "face" 58 px below hers, over the
        // bottom of the pixelated region and her collar.) The clip frame a recorded one shows: the first by
        // its picture, the rest by their true timestamps from it.
        let first = try XCTUnwrap(output.first)
        let distances = input.map { meanDifference($0, first.image, excluding: []) }
        let start = try XCTUnwrap(distances.indices.min { distances[$0] < distances[$1] })
        let detector = try FaceDetector(modelPath: faceModelPath)
        var faceFrames = 0
        for (i, frame) in output.enumerated() {
            let k = start + Int((Double(frame.time - first.time) / period).rounded())
            guard faces.indices.contains(k) else { XCTFail("recorded frame \(i) at \(frame.time / 1_000_000) ms is not of the clip"); continue }
            let face = faces[k]
            guard let visible = face.clipped(width: frame.image.width, height: frame.image.height),
                  Double((visible.x1 - visible.x0) * (visible.y1 - visible.y0)) >= 0.3 * face.area else { continue }
            faceFrames += 1
            let found = try frame.image.y.withUnsafeBufferPointer {
                try detector.detect(luma: $0.baseAddress!, width: frame.image.width, height: frame.image.height, stride: frame.image.width,
                                    inputWidth: 640, threshold: 0.5)
            }
            let truth = FaceRect(x: face.x, y: face.y, width: face.width, height: face.height)
            XCTAssertFalse(found.contains { $0.rect.intersectionOverUnion(truth) > 0.3 },
                           "recorded frame \(i) (clip frame \(k)): the face is still found: \(found.map(\.rect))")
            let before = detail(of: input[k], in: face) ?? 0, after = detail(of: frame.image, in: face) ?? 0
            XCTAssertLessThan(after, 0.5 * before, "recorded frame \(i) (clip frame \(k)): the face kept its detail")
        }
        XCTAssertGreaterThan(faceFrames, 0, "recorded frames with the face were judged")
    }
}
