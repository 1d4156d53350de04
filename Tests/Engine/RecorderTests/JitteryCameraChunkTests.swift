import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Chunk lengths with a real camera, whose frame timestamps jitter by a few
/// milliseconds (the RTSP test camera, through rtspsrc's jitter buffer),
/// unlike the test source's exact ones.
extension RecordingTests {
    func testChunksFromACameraWithJitteryTimestampsAreTheirFullLength() throws {
        let port = Int.random(in: 30_000..<40_000)
        let camera = try ServiceProcessTests.RTSPCamera(port: port, user: "camera", password: "secret")
        defer { camera.kill() }
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage, extra: [
            "recording.pipeline=\(repoPath("pipelines/rtsp.pipeline"))",
            "pipeline.vars.rtsp_url=rtsp://127.0.0.1:\(port)/cam", "pipeline.vars.rtsp_transport=tcp",
            "pipeline.vars.rtsp_user=camera", "pipeline.vars.rtsp_password=secret", "pipeline.vars.framerate=15",
        ])
        try recorder.start()
        // Three full chunks, then the stop finishes a fourth.
        XCTAssertTrue(waitOnMainLoop(20) { recorder.catalog.all.count >= 3 }, "\(recorder.state)")
        XCTAssertTrue(stopAndWait(recorder))
        // Names, contiguity, catalog against file durations, no frame lost.
        let chunks = try checkChunks(recorder, storage: storage)
        XCTAssertGreaterThanOrEqual(chunks.count, 4, "\(chunks.map(\.file))")
        let cameraFrame = 1.0 / 15
        for chunk in chunks.dropLast() {
            // Cut at the first frame at or after 2 s: up to one frame (and its jitter) longer, never a GOP shorter.
            let duration = try XCTUnwrap(discover(recorder.catalog.url(of: chunk)).duration)
            XCTAssertGreaterThanOrEqual(duration, 2.0 - 0.01, "\(chunk.file) is a full 2 s chunk")
            XCTAssertLessThanOrEqual(duration, 2.0 + cameraFrame + 0.01, "\(chunk.file) is 2 s to within a frame")
        }
    }
}
