import Foundation

/// One reading of both system clocks at (nearly) the same instant.
public struct ClockReading: Equatable, Sendable {
    /// CLOCK_MONOTONIC: the pipeline's clock, which never jumps.
    public var monotonicNs: UInt64
    /// CLOCK_REALTIME: the wall clock, nanoseconds since the epoch (negative before 1970).
    public var wallNs: Int64

    public init(monotonicNs: UInt64, wallNs: Int64) {
        self.monotonicNs = monotonicNs
        self.wallNs = wallNs
    }

    /// Wall clock minus monotonic clock: constant while nobody sets the wall clock
    /// (NTP's slewing moves both clocks alike).
    public var offsetNs: Int64 { wallNs &- Int64(truncatingIfNeeded: monotonicNs) }
}

/// The wall clock was set: it moved by `sizeNs` (negative: back) against the monotonic clock.
public struct ClockStep: Equatable, Sendable, CustomStringConvertible {
    public var sizeNs: Int64
    /// When it was noticed, on the monotonic clock.
    public var noticedAtMonotonicNs: UInt64

    public init(sizeNs: Int64, noticedAtMonotonicNs: UInt64) {
        self.sizeNs = sizeNs
        self.noticedAtMonotonicNs = noticedAtMonotonicNs
    }

    public var seconds: Double { Double(sizeNs) / 1e9 }

    /// "back 1 h 0 min 0.000 s", "forward 3.250 s".
    public var description: String {
        let ms = (sizeNs.magnitude + 500_000) / 1_000_000   // to the millisecond shown
        let days = ms / 86_400_000
        let hours = ms / 3_600_000 % 24
        let minutes = ms / 60_000 % 60
        let seconds = String(format: "%d.%03d s", ms / 1000 % 60, ms % 1000)
        var parts: [String] = []
        if days > 0 { parts.append("\(days) d") }
        if days > 0 || hours > 0 { parts.append("\(hours) h") }
        if !parts.isEmpty || minutes > 0 { parts.append("\(minutes) min") }
        parts.append(seconds)
        return (sizeNs < 0 ? "back " : "forward ") + parts.joined(separator: " ")
    }
}

/// Follows the wall clock against the monotonic one and notices when it is set.
///
/// The recording runs on the monotonic clock, so a wall clock set back or
/// forward (NTP correcting a clock that ran ahead, `date -s`, a box without a
/// real-time clock learning the time) never stops or bursts it; the wall-clock
/// time of a frame is its monotonic time plus the offset in force when it was
/// recorded. An offset change of at least `threshold` is a step: the chunk
/// being written ends there, and the next one is named in the new time.
/// Smaller changes (reading jitter, a tiny correction) are followed silently.
///
/// Pure value; `WallClock` (the recorder's) feeds it readings.
public struct WallClockTracker: Equatable, Sendable {
    /// The smallest offset change taken for a step of the wall clock.
    public static let defaultThresholdNs: Int64 = 100_000_000

    public let thresholdNs: Int64
    /// The offset in force (wall minus monotonic); nil before the first reading.
    public private(set) var offsetNs: Int64?

    public init(thresholdNs: Int64 = defaultThresholdNs) {
        self.thresholdNs = thresholdNs
    }

    /// Takes a reading; returns the step when the wall clock was set since the last one.
    public mutating func observe(_ reading: ClockReading) -> ClockStep? {
        let offset = reading.offsetNs
        defer { offsetNs = offset }
        guard let previous = offsetNs else { return nil }
        let change = offset &- previous
        guard change.magnitude >= thresholdNs.magnitude else { return nil }
        return ClockStep(sizeNs: change, noticedAtMonotonicNs: reading.monotonicNs)
    }

    /// The wall-clock time of `monotonicNs` with the offset in force (nil before the first reading).
    public func wallNs(atMonotonicNs monotonicNs: UInt64) -> Int64? {
        offsetNs.map { Int64(truncatingIfNeeded: monotonicNs) &+ $0 }
    }
}

/// The offsets in force over one pipeline run, by the running time of the
/// frame from which each applies: what names a chunk after the wall-clock
/// time of its first frame as the box knew it then. Bounded: steps are rare,
/// and a chunk is named within a few seconds of its first frame.
public struct WallClockOffsets: Equatable, Sendable {
    public static let kept = 32

    private var entries: [(fromRunningTime: UInt64, offsetNs: Int64)] = []

    public init() {}

    public static func == (a: Self, b: Self) -> Bool {
        a.entries.elementsEqual(b.entries) { $0.fromRunningTime == $1.fromRunningTime && $0.offsetNs == $1.offsetNs }
    }

    /// From the frame at `runningTime` on, `offsetNs` is in force.
    public mutating func set(_ offsetNs: Int64, from runningTime: UInt64) {
        if let last = entries.last, last.offsetNs == offsetNs { return }
        entries.removeAll { $0.fromRunningTime >= runningTime }
        entries.append((runningTime, offsetNs))
        if entries.count > Self.kept { entries.removeFirst(entries.count - Self.kept) }
    }

    /// The offset in force for the frame at `runningTime` (the earliest known for older frames).
    public func offsetNs(atRunningTime runningTime: UInt64) -> Int64? {
        entries.last { $0.fromRunningTime <= runningTime }?.offsetNs ?? entries.first?.offsetNs
    }

    public var isEmpty: Bool { entries.isEmpty }
}
