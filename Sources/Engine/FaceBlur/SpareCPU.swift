import Foundation

/// How much CPU the machine leaves unused: what the stage's spare-time
/// searches may take without slowing the camera, the encoder or anything
/// else that runs on the box.
///
/// `measured` reads the kernel's idle time (`/proc/stat`) over a pause in
/// which the spare-time thread itself runs nothing, so a CPU hog that soaks
/// up every idle cycle (another service, `stress-ng`) leaves nothing spare,
/// and the spare-time searches do not count themselves as spare. `fixed`
/// (tests) reports the same number of idle cores every time.
public enum SpareCPU: Sendable, Equatable {
    case measured
    case fixed(cores: Double)
}

/// Reads idle CPU time between two samples. Owned by one thread (the stage's
/// spare-time thread): a value type, never shared.
struct IdleCPUMeter {
    private let source: SpareCPU
    private var last: (idle: Double, total: Double)?
    private let cores: Double

    init(_ source: SpareCPU) {
        self.source = source
        cores = Double(max(1, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// Starts a measurement window.
    mutating func start() {
        last = Self.read()
    }

    /// Idle cores, on average, since `start` (0 when unknown: no spare time without proof).
    mutating func idleCores() -> Double {
        if case .fixed(let n) = source { return n }
        guard let before = last, let now = Self.read(), now.total > before.total else { return 0 }
        last = now
        return cores * (now.idle - before.idle) / (now.total - before.total)
    }

    /// Idle (idle + iowait) and total jiffies of all CPUs, from `/proc/stat`'s first line.
    private static func read() -> (idle: Double, total: Double)? {
        guard let handle = FileHandle(forReadingAtPath: "/proc/stat") else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 256), let text = String(data: data, encoding: .ascii),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 5 else { return nil }
        // user nice system idle iowait irq softirq steal (guest time is in user already).
        return (fields[3] + fields[4], fields.prefix(8).reduce(0, +))
    }
}
