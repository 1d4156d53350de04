import Foundation
import GLibSupport

/// What a privacy stage counts about itself since it started (one pipeline
/// run), for health reports. `FaceBlurStage` conforms.
public struct PrivacyStageCounts: Equatable, Sendable {
    public var frames = 0
    /// Frames that left before every search they needed was done.
    public var late = 0
    /// Frames that could not be anonymised and were not recorded.
    public var dropped = 0
    /// Frames blacked out whole (the detector failed).
    public var blackedOut = 0
    /// Sum over late frames of the share of their picture hidden as unconfirmed.
    public var unconfirmedArea = 0.0
    /// Frames held back now, and how long the oldest has waited.
    public var heldFrames = 0
    public var oldestHeldSeconds = 0.0

    public init(frames: Int = 0, late: Int = 0, dropped: Int = 0, blackedOut: Int = 0, unconfirmedArea: Double = 0,
                heldFrames: Int = 0, oldestHeldSeconds: Double = 0) {
        self.frames = frames
        self.late = late
        self.dropped = dropped
        self.blackedOut = blackedOut
        self.unconfirmedArea = unconfirmedArea
        self.heldFrames = heldFrames
        self.oldestHeldSeconds = oldestHeldSeconds
    }
}

/// A privacy stage that reports its counts (read from any thread).
public protocol PrivacyStageReporting: AnyObject {
    var privacyCounts: PrivacyStageCounts { get }
}

/// How recording is going now: what `/healthz` and `/api/v1/status` say.
public struct RecordingHealth: Equatable, Sendable {
    public struct Privacy: Equatable, Sendable {
        /// The stage could not keep up in the last minute (late frames) or holds a frame for long now.
        public var behind: Bool
        public var heldFrames: Int
        public var lateLastMinute: Int
        public var droppedLastMinute: Int
        public var blackedOutLastMinute: Int
        /// Of all the picture recorded in the last minute, the share hidden as
        /// unconfirmed by late frames (0…1; faces found are hidden besides).
        public var hiddenShareLastMinute: Double
    }
    /// Frames written to chunks per second over the last ~10 s; nil before two samples.
    public var recordedFramesPerSecond: Double?
    /// The frame rate the source announces (its caps).
    public var sourceFramesPerSecond: Double?
    /// Nil with no privacy stage (face blur off).
    public var privacy: Privacy?
    /// This process's CPU use over the last sample interval, in % of one core.
    public var cpuPercent: Double?
    /// The hottest thermal zone the box exposes (/sys/class/thermal), in °C; nil if none.
    public var temperatureCelsius: Double?
    /// Why recording is degraded (empty: it is not).
    public var problems: [String] = []
}

/// Samples the recorder's counters, the privacy stage's, the process's CPU
/// time and the box's temperature every few seconds and keeps a minute of
/// them, so health can speak of "the last minute".
///
/// Threading: main loop only; the file reads (/proc, /sys) run on a
/// utility queue and post back.
final class HealthSampler {
    struct Sample {
        var uptime: Double
        var captured: Int
        var recorded: Int
        /// Cumulative over every pipeline run (a new stage starts from zero).
        var stage: PrivacyStageCounts?
        var cpuSeconds: Double?
    }

    static let interval = 2.0
    static let window = 60.0
    private var samples: [Sample] = []
    private var timer: MainLoop.Source?
    private var temperature: Double?
    /// The stage counts of runs that ended, and the last counts of the current run, to make totals across runs.
    private var stageBase = PrivacyStageCounts()
    private var lastStage: PrivacyStageCounts?
    private let read: () -> (frames: FrameStatistics, stage: PrivacyStageCounts?)
    private let files = DispatchQueue(label: "allspark.recorder.health", qos: .utility)

    init(read: @escaping () -> (frames: FrameStatistics, stage: PrivacyStageCounts?)) {
        self.read = read
    }

    func start() {
        MainLoop.preconditionOnLoop()
        guard timer == nil else { return }
        sample()
        timer = MainLoop.every(Self.interval) { [weak self] in
            self?.sample()
            return self != nil
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private static var uptime: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    private func sample() {
        let (frames, stage) = read()
        let now = Self.uptime
        files.async { [weak self] in
            let cpu = Self.processCPUSeconds(), temperature = Self.hottestThermalZone()
            MainLoop.post { [weak self] in
                guard let self else { return }
                self.temperature = temperature
                self.samples.append(Sample(uptime: now, captured: frames.captured, recorded: frames.recorded,
                                           stage: self.cumulative(stage), cpuSeconds: cpu))
                self.samples.removeAll { $0.uptime < now - Self.window - Self.interval }
            }
        }
    }

    /// Stage counts summed over pipeline runs: counts that went down belong to a new stage.
    private func cumulative(_ stage: PrivacyStageCounts?) -> PrivacyStageCounts? {
        guard let stage else { return nil }
        if let last = lastStage, stage.frames < last.frames {
            stageBase.frames += last.frames
            stageBase.late += last.late
            stageBase.dropped += last.dropped
            stageBase.blackedOut += last.blackedOut
            stageBase.unconfirmedArea += last.unconfirmedArea
        }
        lastStage = stage
        var total = stage
        total.frames += stageBase.frames
        total.late += stageBase.late
        total.dropped += stageBase.dropped
        total.blackedOut += stageBase.blackedOut
        total.unconfirmedArea += stageBase.unconfirmedArea
        return total
    }

    /// The report now. `recording`: frames are expected to reach the chunks.
    func health(recording: Bool, sourceFPS: Double?, stageNow: PrivacyStageCounts?) -> RecordingHealth {
        var health = RecordingHealth()
        health.temperatureCelsius = temperature
        health.sourceFramesPerSecond = sourceFPS.flatMap { $0 > 0 ? $0 : nil }
        guard let last = samples.last else { return health }
        // Frame rate over the last ~10 s (at least one interval).
        if let recent = samples.last(where: { $0.uptime <= last.uptime - 10 }) ?? samples.first, last.uptime - recent.uptime >= Self.interval / 2 {
            health.recordedFramesPerSecond = Double(last.recorded - recent.recorded) / (last.uptime - recent.uptime)
        }
        if samples.count >= 2, let a = samples[samples.count - 2].cpuSeconds, let b = last.cpuSeconds {
            health.cpuPercent = max(0, (b - a) / (last.uptime - samples[samples.count - 2].uptime) * 100)
        }
        if let stageNow, let first = samples.first(where: { $0.stage != nil }), let firstStage = first.stage, let lastStage = last.stage {
            let frames = lastStage.frames - firstStage.frames
            let late = lastStage.late - firstStage.late
            let privacy = RecordingHealth.Privacy(
                behind: late > 0 || stageNow.oldestHeldSeconds > 2,
                heldFrames: stageNow.heldFrames, lateLastMinute: late,
                droppedLastMinute: lastStage.dropped - firstStage.dropped,
                blackedOutLastMinute: lastStage.blackedOut - firstStage.blackedOut,
                hiddenShareLastMinute: frames > 0 ? (lastStage.unconfirmedArea - firstStage.unconfirmedArea) / Double(frames) : 0)
            health.privacy = privacy
            if privacy.behind {
                health.problems.append("the privacy stage is behind: \(late) late frames in the last minute (\(String(format: "%.1f", privacy.hiddenShareLastMinute * 100)) % of the picture hidden as unconfirmed), \(stageNow.heldFrames) held now")
            }
            if privacy.droppedLastMinute > 0 { health.problems.append("\(privacy.droppedLastMinute) frames dropped by the privacy stage in the last minute") }
            if privacy.blackedOutLastMinute > 0 { health.problems.append("\(privacy.blackedOutLastMinute) frames blacked out in the last minute (the face detector failed)") }
        }
        // Frames lost before the chunks: recording much slower than the source sends.
        if recording, let fps = health.recordedFramesPerSecond, let source = health.sourceFramesPerSecond, fps < 0.8 * source {
            health.problems.append("recording \(String(format: "%.1f", fps)) frames per second of the source's \(String(format: "%g", source))")
        }
        return health
    }

    /// User + system CPU time of this process, from /proc/self/stat.
    static func processCPUSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return ticks > 0 ? (user + system) / ticks : nil
    }

    /// The highest reading of /sys/class/thermal/thermal_zone*/temp (millidegrees), in °C.
    static func hottestThermalZone(root: String = "/sys/class/thermal") -> Double? {
        guard let zones = try? FileManager.default.contentsOfDirectory(atPath: root) else { return nil }
        let readings = zones.filter { $0.hasPrefix("thermal_zone") }.compactMap { zone -> Double? in
            guard let text = try? String(contentsOfFile: "\(root)/\(zone)/temp", encoding: .utf8),
                  let milli = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
            return milli / 1000
        }
        return readings.max()
    }
}
