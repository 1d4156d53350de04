import RecorderCore
import XCTest

/// The chunk timeline alone: the order in which container switches and
/// length changes reach a chunk sink, with no GStreamer.
final class ChunkTimelineTests: XCTestCase {
    let mp4_2s = ChunkSettings(format: .mp4, chunkDurationMs: 2000)

    func testALengthChangeAppliesAtOnce() {
        var timeline = ChunkTimeline(mp4_2s)
        XCTAssertEqual(timeline.request(ChunkSettings(format: .mp4, chunkDurationMs: 3000)), [.setChunkLength(ms: 3000)])
        XCTAssertEqual(timeline.written, ChunkSettings(format: .mp4, chunkDurationMs: 3000))
        XCTAssertTrue(timeline.isSettled)
        XCTAssertEqual(timeline.request(timeline.written), [], "asking for what is written changes nothing")
    }

    func testASwitchAskedWithALengthGetsTheNewLength() {
        var timeline = ChunkTimeline(mp4_2s)
        let target = ChunkSettings(format: .mov, chunkDurationMs: 3000)
        XCTAssertEqual(timeline.request(target), [.setChunkLength(ms: 3000), .switchSink(to: target)])
        XCTAssertEqual(timeline.written, ChunkSettings(format: .mp4, chunkDurationMs: 3000), "the old sink writes on until the keyframe")
        XCTAssertEqual(timeline.requested, target)
        XCTAssertFalse(timeline.isSettled)
        XCTAssertEqual(timeline.switchCompleted(), [])
        XCTAssertEqual(timeline.written, target)
        XCTAssertTrue(timeline.isSettled)
    }

    /// Two switches and a length change while the first swap waits for its
    /// keyframe: nothing starts until it completed; then one switch at a time.
    func testChangesDuringAPendingSwitchWaitAndApplyInOrder() {
        var timeline = ChunkTimeline(mp4_2s)
        let mov = ChunkSettings(format: .mov, chunkDurationMs: 2000)
        XCTAssertEqual(timeline.request(mov), [.switchSink(to: mov)])
        XCTAssertEqual(timeline.request(mp4_2s), [], "the second switch waits for the first")
        let final = ChunkSettings(format: .mp4, chunkDurationMs: 3000)
        XCTAssertEqual(timeline.request(final), [], "so does a length change")
        XCTAssertEqual(timeline.pendingSwitch, mov)
        XCTAssertEqual(timeline.queued, [.container(.mp4), .chunkLength(ms: 3000)])
        XCTAssertEqual(timeline.requested, final)

        XCTAssertEqual(timeline.switchCompleted(), [.switchSink(to: mp4_2s)])
        XCTAssertEqual(timeline.written, mov)
        XCTAssertEqual(timeline.switchCompleted(), [.setChunkLength(ms: 3000)], "the length follows the switch it was asked after")
        XCTAssertEqual(timeline.written, final)
        XCTAssertTrue(timeline.isSettled)
    }

    func testALengthAskedBeforeAQueuedSwitchGoesToItsNewSink() {
        var timeline = ChunkTimeline(mp4_2s)
        let mov = ChunkSettings(format: .mov, chunkDurationMs: 2000)
        _ = timeline.request(mov)
        _ = timeline.request(ChunkSettings(format: .mov, chunkDurationMs: 5000))
        _ = timeline.request(ChunkSettings(format: .mp4, chunkDurationMs: 5000))
        XCTAssertEqual(timeline.switchCompleted(), [.setChunkLength(ms: 5000), .switchSink(to: ChunkSettings(format: .mp4, chunkDurationMs: 5000))])
    }

    func testASwitchBackToWhatIsWrittenOnceTheQueueRunsIsSkipped() {
        var timeline = ChunkTimeline(mp4_2s)
        let mov = ChunkSettings(format: .mov, chunkDurationMs: 2000)
        _ = timeline.request(mov)
        _ = timeline.request(mp4_2s)
        _ = timeline.request(mov)
        XCTAssertEqual(timeline.queued, [.container(.mp4), .container(.mov)])
        XCTAssertEqual(timeline.switchCompleted(), [.switchSink(to: mp4_2s)])
        XCTAssertEqual(timeline.switchCompleted(), [.switchSink(to: mov)], "each switch asked is made, in order")
        XCTAssertEqual(timeline.switchCompleted(), [])
        XCTAssertEqual(timeline.written, mov)
        XCTAssertEqual(timeline.switchCompleted(), [], "a completion with nothing pending is ignored")
    }

    func testAbandonDropsWhatIsPendingAndSaysWhatWasAsked() {
        var timeline = ChunkTimeline(mp4_2s)
        _ = timeline.request(ChunkSettings(format: .mov, chunkDurationMs: 2000))
        _ = timeline.request(ChunkSettings(format: .mov, chunkDurationMs: 4000))
        XCTAssertEqual(timeline.abandon(), ChunkSettings(format: .mov, chunkDurationMs: 4000))
        XCTAssertEqual(timeline.written, mp4_2s, "the old sink still writes")
        XCTAssertTrue(timeline.isSettled)
    }

    /// videoFormat "none": a switch to no sink; a container asked meanwhile
    /// waits for the sink made when video resumes.
    func testStoppingAndResumingVideoAreSwitches() {
        var timeline = ChunkTimeline(mp4_2s)
        let off = ChunkSettings(format: .mp4, chunkDurationMs: 2000, recordsVideo: false)
        XCTAssertEqual(timeline.request(off), [.switchSink(to: off)])
        XCTAssertEqual(timeline.switchCompleted(), [])
        XCTAssertEqual(timeline.written, off)
        XCTAssertEqual(timeline.request(ChunkSettings(format: .mov, chunkDurationMs: 2000, recordsVideo: false)), [],
                       "no sink to switch while no video is recorded")
        let on = ChunkSettings(format: .mov, chunkDurationMs: 2000)
        XCTAssertEqual(timeline.request(on), [.switchSink(to: on)], "video resumes in the container asked")
        XCTAssertEqual(timeline.switchCompleted(), [])
        XCTAssertEqual(timeline.written, on)
        XCTAssertTrue(timeline.isSettled)
    }
}
