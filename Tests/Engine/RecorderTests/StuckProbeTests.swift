import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Issue 23, item 2: after a pipeline error the chunk closed is probed
/// (a synchronous discoverer run of up to 10 s) before it is named, and the
/// repair probes every unknown file. Neither may hold the main loop: a
/// probe that does not return leaves timers and posted work running.
final class StuckProbeTests: XCTestCase {
    final class Times: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String: [Double]] = [:]
        func note(_ key: String) { lock.withLock { stored[key, default: []].append(Date().timeIntervalSince1970) } }
        func of(_ key: String) -> [Double] { lock.withLock { stored[key] ?? [] } }
    }

    func testAProbeThatHangsAfterAPipelineErrorLeavesTheMainLoopAnswering() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        // The source fails after 2.5 s (identity's error-after): a pipeline error, so the chunk closed next is probed.
        let pipeline = pipelines.file("failing.pipeline")
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "  ! appsink name=blur_in", with: "  ! identity error-after=75\n  ! appsink name=blur_in")
            .write(to: pipeline, atomically: true, encoding: .utf8)
        let config = try testConfig(storage: storage.path, extra: ["recording.pipeline=\(pipeline.path)"])
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        let times = Times()
        let release = DispatchSemaphore(value: 0)
        // The first probe hangs (for at most 8 s, so that a main loop it blocks comes back and the test can fail).
        recorder.mediaProbe = { url in
            times.note("probe started")
            if times.of("probe started").count == 1 { _ = release.wait(timeout: .now() + 8) }
            times.note("probe ended")
            return MediaProbe.duration(of: url)
        }
        try recorder.start()
        let ticking = MainLoop.every(0.1) { times.note("tick"); return true }
        XCTAssertTrue(waitOnMainLoop(20) { !times.of("probe started").isEmpty }, "the chunk closed after the error is probed: \(recorder.state)")
        runMainLoop(seconds: 3)   // the probe hangs meanwhile
        let started = try XCTUnwrap(times.of("probe started").first)
        XCTAssertTrue(times.of("probe ended").isEmpty, "still probing")
        release.signal()
        XCTAssertTrue(waitOnMainLoop(20) { !times.of("probe ended").isEmpty })
        ticking.cancel()
        XCTAssertTrue(stopAndWait(recorder))
        let ended = try XCTUnwrap(times.of("probe ended").first)
        let ticksWhileStuck = times.of("tick").filter { $0 > started + 0.5 && $0 < ended - 0.5 }
        XCTAssertGreaterThan(ticksWhileStuck.count, 10, "timers ran on the main loop while the probe hung (\(String(format: "%.1f", ended - started)) s)")
        // What the probe was for still happened: the chunk closed after the error is catalogued, playable.
        XCTAssertFalse(recorder.catalog.all.isEmpty)
        for chunk in recorder.catalog.all {
            XCTAssertNotNil(try discover(recorder.catalog.url(of: chunk)).duration, chunk.file)
        }
    }

    func testTheRepairProbesOutsideTheCatalogLock() throws {
        let storage = TemporaryDirectory()
        // An unfinished chunk left by a crash: the repair must probe it.
        try writeClip((0..<15).map { RawImage(width: 64, height: 64, luma: UInt8(30 + 10 * $0)) },
                      to: storage.file(ChunkName.partial(startMs: 1_700_000_000_000, format: .mp4)))
        let catalog = try ChunkCatalog(directory: storage.url)
        let probing = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let repaired = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            catalog.reconcile(probe: { file in
                probing.signal()
                _ = release.wait(timeout: .now() + 10)
                return MediaProbe.duration(of: file)
            })
            repaired.signal()
        }
        XCTAssertEqual(probing.wait(timeout: .now() + 10), .success)
        // While the probe hangs, the catalog answers (the console and the link read it on the main loop).
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread { _ = catalog.all; _ = catalog.totalBytes; answered.signal() }
        XCTAssertEqual(answered.wait(timeout: .now() + 5), .success, "the catalog answered while a probe hung")
        release.signal()
        XCTAssertEqual(repaired.wait(timeout: .now() + 20), .success)
        XCTAssertEqual(catalog.all.map(\.file), [ChunkName.final(startMs: 1_700_000_000_000, format: .mp4)])
    }
}
