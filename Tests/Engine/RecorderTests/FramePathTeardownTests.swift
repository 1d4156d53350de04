import XCTest
import GStreamerSupport
import RecorderTestSupport
import Logging
@testable import Recorder

/// Issue 21: tearing the frame path down must never wait for a streaming
/// thread stuck downstream of `blur_out` (a splitmuxsink whose next file
/// could not be opened, a sink that stopped taking frames). The old
/// `unblock` set appsrc to NULL on its own: that holds appsrc's STATE_LOCK
/// until appsrc's streaming thread returns, which it cannot while the sink
/// downstream holds it, and the pushing thread then hung in
/// `gst_element_send_event` (which takes the same lock) for its keyframe request.
final class FramePathTeardownTests: XCTestCase {
    func testUnblockAndStopReturnWhileTheSinkDownstreamHoldsTheStreamingThread() throws {
        // The sink waits 1000 s before taking each frame: the queue before it fills, and
        // appsrc's streaming thread sits in the queue's chain until the pipeline flushes it.
        let pipeline = try Pipeline.parse("""
            videotestsrc is-live=true ! video/x-raw,format=I420,width=160,height=120,framerate=30/1 ! appsink name=blur_in
            appsrc name=blur_out ! queue max-size-buffers=1 max-size-bytes=0 max-size-time=0 ! fakesink sync=true async=false ts-offset=1000000000000
            """)
        let sink = try XCTUnwrap(pipeline.element(named: "blur_in").flatMap(AppSink.init))
        let source = try XCTUnwrap(pipeline.element(named: "blur_out").flatMap(AppSource.init))
        let path = FramePath(sink: sink, source: source, processor: PassThroughProcessor())
        // A chunk every 100 ms: keyframe requests keep coming from the pushing thread.
        path.chunkCuts = ChunkCuts(lengthMs: 100, wallClock: WallClock(syncFlag: nil, logger: Logger(label: "test")))
        path.start()
        pipeline.useMonotonicClock()
        XCTAssertTrue(pipeline.setState(.playing))
        let deadline = Date().addingTimeInterval(20)
        while path.statistics.recorded < 15, Date() < deadline { usleep(20_000) }
        XCTAssertGreaterThanOrEqual(path.statistics.recorded, 15, "frames went through")

        // As `RecordingSession.finishStop` does, on another thread so that a deadlock fails the test rather than hanging it.
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            path.unblock()
            pipeline.setState(.null)
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success,
                       "unblock and stopping the pipeline returned (a deadlock leaves them waiting for ever)")
        path.detach()
        let stats = path.statistics
        XCTAssertEqual(stats.captured, stats.recorded + stats.afterStop, "every frame captured was recorded or counted as after the stop")
    }
}
