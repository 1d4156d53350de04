import XCTest
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// The recorder's `config` is the config in force: every recording setting in it is the
/// recorder's one copy (`tuning`), not the value it started with. It copied 3 of the 7 (issue 23).
final class RecorderConfigTests: XCTestCase {
    func testTheConfigInForceCarriesEveryRecordingSetting() throws {
        let storage = TemporaryDirectory()
        let recorder = try Recorder(config: try testConfig(storage: storage.path), makeProcessor: { _ in PassThroughProcessor() })
        let tuning = RecordingTuning(videoFormat: .mov, chunkDurationMs: 3000, bufferMaxMB: 77, recordsVideo: false,
                                     audioFormat: .wav, timestampFormat: .txt, framerate: 12)
        recorder.retune(tuning)
        XCTAssertEqual(recorder.currentTuning, tuning)
        XCTAssertEqual(recorder.config.tuning, tuning, "the config in force holds all seven")
    }
}
