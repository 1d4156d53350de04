import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Issue 21: a graceful stop landing just after a chunk boundary once
/// catalogued a chunk as 2.07–2.2 s while its file held 3.0 s. Whenever the
/// stop lands, every chunk's catalogued span must be its file's media span.
final class StopNearBoundaryTests: XCTestCase {
    let frame = 1.0 / 30

    /// Holds back `depth` frames, as the privacy stage holds frames while
    /// detection runs, and hands them all on at the end of the stream.
    final class DelayingProcessor: FrameProcessor {
        let depth: Int
        private var held: [Sample] = []
        init(depth: Int) { self.depth = depth }
        var name: String { "delay \(depth)" }
        func process(_ frame: Sample) -> [Sample] {
            held.append(frame)
            guard held.count > depth else { return [] }
            return [held.removeFirst()]
        }
        func drain() -> [Sample] { defer { held = [] }; return held }
        func close() {}
    }

    /// Records 2 s chunks and stops `offset` seconds after the second boundary; returns the chunks.
    func recordAndStop(offset: Double, processor: @escaping () -> FrameProcessor) throws -> (Recorder, TemporaryDirectory) {
        let storage = TemporaryDirectory()
        let recorder = try Recorder(config: testConfig(storage: storage.path), makeProcessor: { _ in processor() })
        try recorder.start()
        XCTAssertTrue(waitOnMainLoop(20) { !recorder.catalog.all.isEmpty }, "a first chunk")
        let boundary = try XCTUnwrap(recorder.catalog.all.first).end + 2.0
        let wait = boundary + offset - Date().timeIntervalSince1970
        if wait > 0 { runMainLoop(seconds: wait) }
        XCTAssertTrue(stopAndWait(recorder))
        return (recorder, storage)
    }

    func assertSpansMatchMedia(_ recorder: Recorder, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for chunk in recorder.catalog.all {
            let media = try XCTUnwrap(discover(recorder.catalog.url(of: chunk)).duration, "\(label): \(chunk.file) is playable", file: file, line: line)
            XCTAssertEqual(chunk.duration, media, accuracy: frame + 0.002,
                           "\(label): \(chunk.file) catalogued \(chunk.duration) s, its file holds \(media) s", file: file, line: line)
        }
    }

    func testStopsAroundABoundaryCatalogueWhatTheFilesHold() throws {
        for offset in [-0.05, 0.0, 0.05, 0.1, 0.15, 0.2, 0.3] {
            let (recorder, storage) = try recordAndStop(offset: offset) { PassThroughProcessor() }
            try assertSpansMatchMedia(recorder, "stop \(offset) s after a boundary")
            _ = storage
        }
    }

    func testStopsAroundABoundaryWithAStageHoldingFramesBack() throws {
        // About a second held back, as the face blur stage can while detection runs.
        for offset in [0.0, 0.1, 0.15, 0.2, 0.5, 0.9, 1.1] {
            let (recorder, storage) = try recordAndStop(offset: offset) { DelayingProcessor(depth: 30) }
            try assertSpansMatchMedia(recorder, "stop \(offset) s after a boundary, 30 frames held")
            _ = storage
        }
    }
}
