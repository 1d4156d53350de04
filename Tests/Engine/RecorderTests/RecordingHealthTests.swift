import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Issue 21: health says how recording really goes: the frame rate written
/// to chunks, the privacy stage's state over the last minute, CPU and
/// temperature, and "degraded" (with what) when the stage is behind or
/// frames are lost.
final class RecordingHealthTests: XCTestCase {
    /// Passes frames on, and reports every tenth as late with a fifth of its picture hidden, as an overloaded face blur stage would.
    final class BehindStage: FrameProcessor, PrivacyStageReporting {
        private let lock = NSLock()
        private var counts = PrivacyStageCounts()
        var name: String { "behind" }
        func process(_ frame: Sample) -> [Sample] {
            lock.withLock {
                counts.frames += 1
                if counts.frames % 10 == 0 { counts.late += 1; counts.unconfirmedArea += 0.2 }
            }
            return [frame]
        }
        func drain() -> [Sample] { [] }
        func close() {}
        var privacyCounts: PrivacyStageCounts { lock.withLock { counts } }
    }

    final class KeepingUpStage: FrameProcessor, PrivacyStageReporting {
        private let lock = NSLock()
        private var frames = 0
        var name: String { "keeping up" }
        func process(_ frame: Sample) -> [Sample] { lock.withLock { frames += 1 }; return [frame] }
        func drain() -> [Sample] { [] }
        func close() {}
        var privacyCounts: PrivacyStageCounts { lock.withLock { PrivacyStageCounts(frames: frames) } }
    }

    func record(for seconds: Double, _ makeStage: @escaping () -> FrameProcessor) throws -> RecordingHealth {
        let storage = TemporaryDirectory()
        let recorder = try Recorder(config: testConfig(storage: storage.path), makeProcessor: { _ in makeStage() })
        try recorder.start()
        XCTAssertTrue(waitOnMainLoop(15) { recorder.state == .recording })
        runMainLoop(seconds: seconds)
        let health = recorder.health
        XCTAssertTrue(stopAndWait(recorder))
        return health
    }

    func testAStageThatKeepsUpIsHealthyAndTheRecordedRateIsTheSources() throws {
        let health = try record(for: 6) { KeepingUpStage() }
        XCTAssertEqual(health.problems, [])
        XCTAssertEqual(health.sourceFramesPerSecond, 30)
        XCTAssertEqual(try XCTUnwrap(health.recordedFramesPerSecond), 30, accuracy: 3, "frames written to chunks per second")
        XCTAssertNotNil(health.cpuPercent)
        let privacy = try XCTUnwrap(health.privacy)
        XCTAssertFalse(privacy.behind)
        XCTAssertEqual(privacy.lateLastMinute, 0)
        XCTAssertEqual(privacy.hiddenShareLastMinute, 0)
        if FileManager.default.fileExists(atPath: "/sys/class/thermal/thermal_zone0/temp") {
            XCTAssertNotNil(health.temperatureCelsius)
        }
    }

    func testAStageBehindMakesRecordingDegradedAndSaysHowMuchItHid() throws {
        let health = try record(for: 6) { BehindStage() }
        let privacy = try XCTUnwrap(health.privacy)
        XCTAssertTrue(privacy.behind)
        XCTAssertGreaterThan(privacy.lateLastMinute, 5)
        // One frame in ten late with a fifth hidden: 2 % of the picture.
        XCTAssertEqual(privacy.hiddenShareLastMinute, 0.02, accuracy: 0.005)
        XCTAssertTrue(health.problems.contains { $0.hasPrefix("the privacy stage is behind") }, "\(health.problems)")
    }

    func testWithoutAReportingStageThereIsNoPrivacySection() throws {
        let health = try record(for: 3) { PassThroughProcessor() }
        XCTAssertNil(health.privacy)
        XCTAssertEqual(health.problems, [])
    }

    func testProcessCPUAndThermalZonesAreRead() throws {
        XCTAssertNotNil(HealthSampler.processCPUSeconds())
        let root = TemporaryDirectory()
        for (zone, milli) in [("thermal_zone0", "41500\n"), ("thermal_zone1", "63250\n"), ("cooling_device0", "")] {
            try FileManager.default.createDirectory(at: root.file(zone), withIntermediateDirectories: true)
            if !milli.isEmpty { try milli.write(to: root.file(zone).appendingPathComponent("temp"), atomically: true, encoding: .utf8) }
        }
        XCTAssertEqual(HealthSampler.hottestThermalZone(root: root.path), 63.25)
        XCTAssertNil(HealthSampler.hottestThermalZone(root: root.file("none").path))
    }
}
