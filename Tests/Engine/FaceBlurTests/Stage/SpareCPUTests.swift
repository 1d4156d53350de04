import XCTest
@testable import FaceBlur

/// The spare-time searches' claim on the CPU: the kernel's idle class (real
/// threads on the real scheduler), and a meter that counts as spare what the
/// machine leaves idle plus what the idle-class thread itself got.
final class SpareCPUTests: XCTestCase {
    /// Runs `body` on a thread of its own and returns what it returned.
    private func onNewThread<T>(_ body: @escaping () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<T?>(nil)
        let thread = Thread { result.value = body(); done.signal() }
        thread.start()
        done.wait()
        return result.value!
    }

    /// The scheduling policy of the calling thread, as the kernel reports it
    /// (`/proc/thread-self/stat`, field 41: 0 normal, 3 batch, 5 idle).
    private static func policyOfThisThread() -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .ascii),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may hold spaces) start at field 3.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return Int(fields[41 - 3])
    }

    func testAThreadEntersTheKernelsIdleClass() {
        let (refused, policy) = onNewThread { (IdlePriority.enterForThisThread(), Self.policyOfThisThread()) }
        XCTAssertNil(refused)
        XCTAssertEqual(policy, 5, "SCHED_IDLE")
        XCTAssertEqual(Self.policyOfThisThread(), 0, "only the thread that asked left the normal class")
    }

    /// The idle class yields: with a normal thread spinning on every core,
    /// an idle-class thread spinning beside them gets next to nothing
    /// (measured as each thread's own CPU time, so other work on the
    /// machine, such as other tests, does not change the comparison).
    func testAnIdleClassThreadYieldsToEveryOtherThread() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let stop = Locked(false)
        let hogTimes = Locked<[Double]>([])
        let hogs = (0..<cores).map { _ in
            Thread {
                var y = 2.0
                while !stop.value { y = y.squareRoot() + 1 }
                let used = SpareCPUMeter.threadCPUSeconds()
                hogTimes.update { $0.append(used) }
            }
        }
        hogs.forEach { $0.start() }
        let idleUsed = onNewThread { () -> Double in
            XCTAssertNil(IdlePriority.enterForThisThread())
            let until = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
            while DispatchTime.now().uptimeNanoseconds < until {}
            return SpareCPUMeter.threadCPUSeconds()
        }
        stop.value = true
        let deadline = Date().addingTimeInterval(5)
        while hogTimes.value.count < cores, Date() < deadline { usleep(10_000) }
        let times = hogTimes.value
        let hogMean = times.reduce(0, +) / Double(max(1, times.count))
        XCTAssertGreaterThan(hogMean, 0.1, "the hogs ran")
        XCTAssertLessThan(idleUsed, hogMean / 10, "the idle-class thread got \(idleUsed) s of CPU, each hog \(hogMean) s")
    }

    /// Spare cores are the machine's idle cores plus, for a thread in the
    /// idle class, its own use: a thread that took the one core left has it
    /// counted as spare, one at normal priority does not.
    func testSpareCoresAreIdleTimePlusTheIdleClassThreadsOwn() {
        typealias Sample = SpareCPUMeter.Sample
        let before = Sample(idle: 1000, total: 4000, own: 5, wall: 1_000_000_000)
        // One second later on two cores: 200 jiffies, none idle; the thread used 1 s.
        let tookTheLastCore = Sample(idle: 1000, total: 4200, own: 6, wall: 2_000_000_000)
        XCTAssertEqual(SpareCPUMeter.spareCores(from: before, to: tookTheLastCore, cores: 2, countsOwnTime: true), 1, accuracy: 1e-9)
        XCTAssertEqual(SpareCPUMeter.spareCores(from: before, to: tookTheLastCore, cores: 2, countsOwnTime: false), 0, accuracy: 1e-9)
        // Half the machine idle, the thread used a quarter second: 1.25 cores spare.
        let halfIdle = Sample(idle: 1100, total: 4200, own: 5.25, wall: 2_000_000_000)
        XCTAssertEqual(SpareCPUMeter.spareCores(from: before, to: halfIdle, cores: 2, countsOwnTime: true), 1.25, accuracy: 1e-9)
        // Never more than the machine has; nothing without a window.
        let allIdle = Sample(idle: 1200, total: 4200, own: 6, wall: 2_000_000_000)
        XCTAssertEqual(SpareCPUMeter.spareCores(from: before, to: allIdle, cores: 2, countsOwnTime: true), 2, accuracy: 1e-9)
        XCTAssertEqual(SpareCPUMeter.spareCores(from: before, to: before, cores: 2, countsOwnTime: true), 0)
        // The real meter, from its own readings: a number of cores the machine has.
        var meter = SpareCPUMeter(.measured, countsOwnTime: true)
        meter.start()
        usleep(100_000)
        let measured = meter.spareCores()
        XCTAssertTrue((0...Double(ProcessInfo.processInfo.activeProcessorCount)).contains(measured), "\(measured)")
    }
}

/// A value several threads read and write, under a lock.
private final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func update(_ change: (inout T) -> Void) { lock.withLock { change(&stored) } }
}
