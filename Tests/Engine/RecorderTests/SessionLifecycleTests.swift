import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import RecorderCore
import RecorderTestSupport
import XCTest
@testable import Recorder

/// A privacy stage that passes frames through and records what was asked
/// of it and on which thread: whether every one made is closed, and
/// whether its slow calls (drain, close) stay off the main loop.
final class RecordingProcessor: FrameProcessor {
    private let lock = NSLock()
    private var _drains: [Bool] = []
    private var _closes: [Bool] = []
    var name: String { "recording-processor" }
    func process(_ frame: Sample) -> [Sample] { [frame] }
    func drain() -> [Sample] {
        lock.withLock { _drains.append(MainLoop.isOnLoopThread) }
        return []
    }
    func close() { lock.withLock { _closes.append(MainLoop.isOnLoopThread) } }
    /// For each call, whether it ran on the main loop's thread.
    var drains: [Bool] { lock.withLock { _drains } }
    var closes: [Bool] { lock.withLock { _closes } }
}

final class SessionLifecycleTests: XCTestCase {
    /// `ChunkSink.install()` failing used to leave the processor open (with
    /// face blur: its detection threads running), one more set per retry.
    func testAStartThatFailsClosesTheProcessor() throws {
        let storage = TemporaryDirectory()
        let config = try testConfig(storage: storage.path)
        let loaded = try PipelineLoader.load(file: config.recording.pipeline, variables: config.pipelineVariables,
                                             privacyBoundary: false)
        // The chunk sink cannot be installed: its input was taken away.
        let input = try XCTUnwrap(loaded.chunkSink.staticPad("video"))
        try XCTUnwrap(input.peer).unlink(from: input)
        let processor = RecordingProcessor()
        let worker = DispatchQueue(label: "test.worker")
        let session = RecordingSession(loaded: loaded, storage: storage.url, settings: ChunkSettings(config.tuning),
                                       frameTimeout: 5, processor: processor,
                                       wallClock: WallClock(syncFlag: nil, logger: Logger(label: "test")), worker: worker,
                                       logger: Logger(label: "test"))
        XCTAssertThrowsError(try session.start())
        worker.sync {}
        XCTAssertEqual(processor.closes.count, 1, "the processor is closed when the start fails")
    }

    /// Every processor the recorder makes is closed by the time `stop`
    /// completes, through a normal run and through failed starts and
    /// retries; its drain and close never run on the main loop.
    func testEveryProcessorIsClosedOffTheMainLoopByTheTimeStopCompletes() throws {
        for pipeline in ["pipelines/test.pipeline", "pipelines/file.pipeline"] {
            let storage = TemporaryDirectory()
            // file.pipeline reads a file that is not there: the start fails and is retried.
            let config = try testConfig(storage: storage.path, extra: [
                "recording.pipeline=\(repoPath(pipeline))", "pipeline.vars.input=\(storage.file("missing.mp4").path)"])
            let made = NSMutableArray()
            // The retries only wait (1 s, 2 s …): in virtual time.
            let clock = TestClock()
            let recorder = try Recorder(config: config, clock: clock, makeProcessor: { _ in
                let processor = RecordingProcessor()
                made.add(processor)
                return processor
            })
            try recorder.start()
            let missing = pipeline.hasSuffix("file.pipeline")
            XCTAssertTrue(waitOnMainLoop(10, skipping: clock) {
                missing ? made.count >= 3 : !recorder.catalog.all.isEmpty
            }, "\(pipeline): two failed starts, or a chunk")
            XCTAssertTrue(stopAndWait(recorder))
            let processors = made.compactMap { $0 as? RecordingProcessor }
            // Checked at start, then one run, or (the file missing) at least two failed starts.
            XCTAssertGreaterThanOrEqual(processors.count, missing ? 3 : 2, "\(pipeline)")
            XCTAssertTrue(processors.allSatisfy { $0.closes.count == 1 }, "\(pipeline): each closed once: \(processors.map(\.closes))")
            XCTAssertFalse(processors.dropFirst().flatMap { $0.closes + $0.drains }.contains(true),
                           "\(pipeline): a session's drain and close run on the worker")
            if pipeline.hasSuffix("test.pipeline") {
                XCTAssertFalse(recorder.catalog.all.isEmpty)
                XCTAssertEqual(processors.last?.drains.count, 1, "the last run was drained")
            }
        }
    }
}
