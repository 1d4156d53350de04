import XCTest
import Console
import Foundation
import GLibSupport
import GStreamerSupport
import Recorder
import RecorderService
import RecorderTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Glass-to-client latency of the RTSP stream against the privacy stage's own (bench/rtsp-latency;
/// skipped unless ALLSPARK_RTSP_BENCH is set).
///
/// The face clip is played live through the privacy stage (face_blur on) into the recording, and
/// GStreamer's rtspsrc (latency=0, TCP) pulls the stream in this process. For every frame:
/// - glass: its capture time, `base time + running time` of its timestamp (a live source stamps
///   the running time at capture; the pipeline runs on the monotonic clock);
/// - tap: when its H.264 reached the chunks and the stream (after the privacy stage and the encoder);
/// - client: when rtspsrc's depayloader handed out the same access unit (matched by its last bytes).
/// Printed: the medians and 95th percentiles of tap − glass (the privacy stage and encoder) and
/// client − glass (glass to client), and their difference (what the stream adds).
final class RTSPLatencyBench: RTSPStreamTestCase {
    override func setUpWithError() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["ALLSPARK_RTSP_BENCH"] != nil, "bench/rtsp-latency runs this")
    }

    static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func testGlassToClientLatency() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["ALLSPARK_RTSP_BENCH"] ?? "") ?? 20
        let faceBlur = ProcessInfo.processInfo.environment["ALLSPARK_RTSP_BENCH_BLUR"] != "0"
        let clipDir = TemporaryDirectory()
        // The clip loops: longer than the run, so the source never ends mid-measure.
        let clip = try faceClip(in: clipDir)
        let running = try start(pipeline: "pipelines/file.pipeline", variables: "input = \"\(clip.path)\"\nbitrate_kbps = 2000",
                                faceBlur: faceBlur)
        defer { stop(running) }
        let recorder = try XCTUnwrap(running.service.recorder)
        let lock = NSLock()
        var sent: [Data: (glass: UInt64, tap: UInt64)] = [:]
        var received: [(glass: UInt64, tap: UInt64, client: UInt64)] = []
        let server = recorder.streamTap.consumer
        recorder.streamTap.consumer = { frame in
            let now = Self.monotonicNow()
            if let running = frame.runningTime, let base = frame.baseTime {
                let key = frame.copyBytes().suffix(24)
                lock.withLock { sent[Data(key)] = (UInt64(base + running), now) }
            }
            server?(frame)
        }
        let client = try Pipeline.parse("""
            rtspsrc location=\(running.url) user-id=viewer user-pw="\(Self.password)" protocols=tcp latency=0 \
            ! rtph264depay ! video/x-h264,stream-format=byte-stream,alignment=au ! appsink name=out sync=false
            """)
        let sink = try XCTUnwrap(client.element(named: "out").flatMap(AppSink.init))
        sink.setHandlers(onSample: { sample in
            let now = Self.monotonicNow()
            guard let bytes = sample.bytes else { return true }
            let key = Data(bytes.suffix(24))
            lock.withLock { if let s = sent.removeValue(forKey: key) { received.append((s.glass, s.tap, now)) } }
            return true
        }, onEndOfStream: {})
        XCTAssertTrue(client.setState(.playing))
        defer { sink.clearHandlers(); client.setState(.null) }
        waitOnMainLoop(seconds) { false }
        let samples = lock.withLock { received }
        XCTAssertGreaterThan(samples.count, Int(seconds * 10), "the client received matched frames")
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
        }
        // The first seconds fill the privacy stage's delay line and the client's start: left out.
        let steady = Array(samples.dropFirst(samples.count / 5))
        let stage = steady.map { Double(Int64(bitPattern: $0.tap &- $0.glass)) / 1e6 }
        let glassToClient = steady.map { Double(Int64(bitPattern: $0.client &- $0.glass)) / 1e6 }
        let stream = steady.map { Double(Int64(bitPattern: $0.client &- $0.tap)) / 1e6 }
        let line = { (name: String, values: [Double]) in
            String(format: "%-34@ median %7.1f ms   p95 %7.1f ms", name as NSString, percentile(values, 0.5), percentile(values, 0.95))
        }
        print("""
            rtsp-latency: \(steady.count) frames matched (of \(samples.count)), face_blur = \(faceBlur), 640x360 file camera, x264 2 Mbit/s, rtspsrc latency=0 over TCP
            \(line("privacy stage + encoder (glass→tap)", stage))
            \(line("glass → client", glassToClient))
            \(line("added by the stream (tap→client)", stream))
            """)
    }
}
