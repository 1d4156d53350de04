import Foundation
import Logging
import RecorderCore

#if canImport(Glibc)
import Glibc
#endif

/// The box's wall clock as the recorder sees it: read against the monotonic
/// clock the pipelines run on, its steps noticed, logged and counted, and
/// whether it can be trusted yet (`TimeSync`).
///
/// The pipeline runs on the monotonic clock (`Pipeline.useMonotonicClock`), so
/// `base time + running time` of a frame is CLOCK_MONOTONIC; its wall-clock
/// time is that plus the offset read when the frame went to the encoder.
///
/// Threading: `observe` runs on the capture thread for every frame; the
/// counters and the sync state are read from the main loop. State is under `lock`.
public final class WallClock: @unchecked Sendable {
    private let lock = NSLock()
    private var tracker: WallClockTracker
    private var stepCount = 0
    private var lastStep: ClockStep?
    private let logger: Logger
    private let sync: TimeSync
    private var synchronized: Bool?
    private var saidSyncState = false

    /// Reads both clocks; a test may give a reader of its own.
    private let read: () -> ClockReading

    public init(syncFlag: String?, logger: Logger, thresholdNs: Int64 = WallClockTracker.defaultThresholdNs,
                read: @escaping () -> ClockReading = WallClock.systemReading) {
        self.tracker = WallClockTracker(thresholdNs: thresholdNs)
        self.logger = logger
        self.sync = TimeSync(flagPath: syncFlag)
        self.read = read
    }

    /// Reads the clocks now and notices a step (logged, counted); returns the
    /// offset in force and the step, if there was one since the last reading.
    @discardableResult
    public func observe() -> (offsetNs: Int64, step: ClockStep?) {
        let reading = read()
        let step = lock.withLock { () -> ClockStep? in
            let step = tracker.observe(reading)
            if let step {
                stepCount += 1
                lastStep = step
            }
            return step
        }
        if let step {
            logger.warning("the wall clock was set \(step); the chunk being written ends here and the next is named in the new time (the recording itself runs on the monotonic clock and goes on)")
        }
        return (reading.offsetNs, step)
    }

    /// The offset in force now (reads the clocks; no step is noticed here).
    public var currentOffsetNs: Int64 { read().offsetNs }

    /// Steps of the wall clock noticed since the recorder started.
    public var steps: Int { lock.withLock { stepCount } }
    public var latestStep: ClockStep? { lock.withLock { lastStep } }

    /// Whether chunks opened now carry a time the box can trust: true once the
    /// clock is synchronised, false before, nil where synchronisation is not
    /// visible. The first answer and every change are logged.
    public func isSynchronized() -> Bool? {
        let now = sync.state()
        let (changed, first) = lock.withLock { () -> (Bool, Bool) in
            defer { synchronized = now; saidSyncState = true }
            return (saidSyncState && synchronized != now, !saidSyncState)
        }
        switch (now, first || changed) {
        case (true?, true) where !first:
            logger.notice("the wall clock is synchronised now (\(sync.flagPath ?? "-") appeared); chunks from here on carry trusted times")
        case (true?, true):
            logger.info("the wall clock is synchronised (\(sync.flagPath ?? "-"))")
        case (false?, true):
            logger.warning("the wall clock is not synchronised yet (no \(sync.flagPath ?? "-")): chunks recorded until it is are marked as such in the catalog")
        case (nil, true) where first:
            logger.info("whether the wall clock is synchronised is not visible here (\(sync.flagPath.map { "no folder for \($0)" } ?? "no sync flag configured")); chunk times are taken as they are")
        default:
            break
        }
        return now
    }

    /// Both system clocks, read so that the two monotonic readings around the
    /// wall-clock one are close (a thread descheduled between them would make
    /// a jump of the offset out of nothing).
    public static func systemReading() -> ClockReading {
        var best: (spread: UInt64, reading: ClockReading)?
        for _ in 0..<3 {
            let before = monotonicNow(), wall = wallNow(), after = monotonicNow()
            let reading = ClockReading(monotonicNs: before + (after - before) / 2, wallNs: wall)
            if best == nil || after - before < best!.spread { best = (after - before, reading) }
            if after - before < 1_000_000 { break }
        }
        return best!.reading
    }

    public static func monotonicNow() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    static func wallNow() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }
}

/// Whether the wall clock is synchronised, where the box shows it:
/// systemd-timesyncd creates `/run/systemd/timesync/synchronized` once it has
/// synchronised the clock (and the folder while it runs). A flag whose
/// folder does not exist means no such client runs here: not visible (nil).
public struct TimeSync: Sendable {
    public static let systemdFlag = "/run/systemd/timesync/synchronized"
    public let flagPath: String?

    public init(flagPath: String?) {
        self.flagPath = flagPath.flatMap { $0.isEmpty ? nil : $0 }
    }

    public func state() -> Bool? {
        guard let flagPath else { return nil }
        if FileManager.default.fileExists(atPath: flagPath) { return true }
        var isFolder: ObjCBool = false
        let folder = (flagPath as NSString).deletingLastPathComponent
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else { return nil }
        return false
    }
}
