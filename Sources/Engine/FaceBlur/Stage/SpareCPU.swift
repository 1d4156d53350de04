import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How much CPU the machine leaves unused: what the stage's spare-time
/// searches may take without slowing the camera, the encoder or anything
/// else that runs on the box.
///
/// `measured` reads the kernel's idle time (`/proc/stat`) and adds what the
/// spare-time thread itself used: that thread runs in the kernel's idle
/// class (`IdlePriority`), so every cycle it got was one nobody else wanted.
/// A CPU hog that soaks up every idle cycle (another service, `stress-ng`)
/// leaves nothing spare. `fixed` (tests) reports the same number of spare
/// cores every time.
public enum SpareCPU: Sendable, Equatable {
    case measured
    case fixed(cores: Double)
}

/// Spare cores over a window: the machine's idle time, plus the calling
/// thread's own CPU time when that thread runs in the idle class (every
/// cycle it got, nobody else wanted). Owned by one thread (the stage's
/// spare-time thread): a value type, never shared.
struct SpareCPUMeter {
    /// One reading: the machine's idle and total jiffies, the thread's own
    /// CPU seconds, and the monotonic clock (nanoseconds).
    struct Sample {
        var idle: Double, total: Double, own: Double, wall: UInt64
    }

    private let source: SpareCPU
    private let countsOwnTime: Bool
    private var last: Sample?
    private let cores: Double

    init(_ source: SpareCPU, countsOwnTime: Bool) {
        self.source = source
        self.countsOwnTime = countsOwnTime
        cores = Double(max(1, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Starts a measurement window.
    mutating func start() {
        last = Self.sample()
    }

    /// Seconds since `start` (infinity before it).
    var elapsed: Double {
        guard let last else { return .infinity }
        return Double(DispatchTime.now().uptimeNanoseconds - last.wall) / 1e9
    }

    /// Spare cores, on average, since `start`: idle cores, plus this thread's
    /// own use if it counts (0 when unknown: no spare time without proof).
    mutating func spareCores() -> Double {
        if case .fixed(let n) = source { return n }
        guard let before = last, let now = Self.sample() else { return 0 }
        last = now
        return Self.spareCores(from: before, to: now, cores: cores, countsOwnTime: countsOwnTime)
    }

    /// Spare cores between two samples on a machine of `cores` cores.
    static func spareCores(from before: Sample, to now: Sample, cores: Double, countsOwnTime: Bool) -> Double {
        guard now.total > before.total, now.wall > before.wall else { return 0 }
        let idle = cores * (now.idle - before.idle) / (now.total - before.total)
        let own = countsOwnTime ? (now.own - before.own) / (Double(now.wall - before.wall) / 1e9) : 0
        return min(cores, idle + own)
    }

    private static func sample() -> Sample? {
        guard let (idle, total) = readProcStat() else { return nil }
        return Sample(idle: idle, total: total, own: threadCPUSeconds(), wall: DispatchTime.now().uptimeNanoseconds)
    }

    /// Idle (idle + iowait) and total jiffies of all CPUs, from `/proc/stat`'s first line.
    private static func readProcStat() -> (idle: Double, total: Double)? {
        guard let handle = FileHandle(forReadingAtPath: "/proc/stat") else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 256), let text = String(data: data, encoding: .ascii),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is in user already).
        return (fields[3] + fields[4], fields.prefix(8).reduce(0, +))
    }

    /// CPU time the calling thread has used.
    static func threadCPUSeconds() -> Double {
        var t = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 else { return 0 }
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// The kernel's idle scheduling class (`SCHED_IDLE`) for the calling
/// thread: it runs only when no other thread of any process wants the core,
/// and is set aside the moment one does. The spare-time searches run in it,
/// so the camera, the encoder and everything else on the box keep their
/// CPU, and no pacing of its own has to guess how much is free.
/// A thread cannot leave the class again without privileges, so it is set
/// once, for the whole life of a thread made for it.
enum IdlePriority {
    /// `SCHED_IDLE` from <sched.h>, which Swift's Glibc module does not
    /// import (it needs `_GNU_SOURCE`); part of the Linux ABI since 2.6.23.
    private static let schedIdle: Int32 = 5

    /// Moves the calling thread to the idle class: nil, or why it could
    /// not (a seccomp filter, another kernel), and the thread stays where it was.
    static func enterForThisThread() -> String? {
        #if os(Linux)
        var param = sched_param()
        param.sched_priority = 0
        return sched_setscheduler(0, schedIdle, &param) == 0 ? nil : String(cString: strerror(errno))
        #else
        return "not Linux"
        #endif
    }
}
