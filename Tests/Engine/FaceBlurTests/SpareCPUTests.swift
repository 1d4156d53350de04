import XCTest
@testable import FaceBlur

/// The spare-time searches' claim on the CPU: the kernel's idle class, and
/// a meter that counts as spare what the machine leaves idle plus what the
/// idle-class thread itself got. Real threads on the real scheduler.
final class SpareCPUTests: XCTestCase {
    /// Runs `body` on a thread of its own and returns what it returned.
    private func onNewThread<T>(_ body: @escaping () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        let thread = Thread { result.value = body(); done.signal() }
        thread.start()
        done.wait()   // the semaphore orders the write before this read
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

    /// An idle-class thread that searches without pause counts its own time
    /// as spare: with a hog on all cores but one, it takes that core (the
    /// machine shows no idle time) and the meter still says a core is
    /// spare. With a hog on every core it gets next to nothing, and the
    /// meter says so: the stage stops searching.
    func testSpareCoresAreIdleTimePlusTheIdleClassThreadsOwn() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        func spareWhileSpinning(besideHogs hogs: Int) -> Double {
            let stop = Flag()
            let threads = (0..<hogs).map { _ in Thread { var y = 2.0; while !stop.isSet { y = y.squareRoot() + 1 } } }
            threads.forEach { $0.start() }
            defer { stop.set() }
            return onNewThread {
                XCTAssertNil(IdlePriority.enterForThisThread())
                var meter = SpareCPUMeter(.measured, countsOwnTime: true)
                meter.start()
                while meter.elapsed < 0.5 {}   // spins: reading the clock is the work
                return meter.spareCores()
            }
        }
        let oneLeft = spareWhileSpinning(besideHogs: cores - 1)
        let noneLeft = spareWhileSpinning(besideHogs: cores)
        XCTAssertGreaterThan(oneLeft, 0.6, "the core it took was spare (every core busy: \(noneLeft))")
        XCTAssertLessThan(noneLeft, FaceBlurStage.spareMinimum, "a hog on every core leaves nothing spare (one core left: \(oneLeft))")
    }
}

/// A flag one thread sets and others poll.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// What a thread hands back to the one that waits for it.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
