import Foundation
import GLibSupport
import RecorderTestSupport
import XCTest

/// `MainLoop.isOnLoopThread`, behind `preconditionOnLoop()`: the check the
/// main-loop-owned types (Recorder, RecordingSession, ChunkSink) make at entry.
final class MainLoopOwnershipTests: XCTestCase {
    func testTheMainThreadOwnsTheLoopAndOtherThreadsDoNot() {
        XCTAssertTrue(MainLoop.isOnLoopThread, "tests drive main-loop objects from the main thread")
        let onWorker = Answer()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { onWorker.set(MainLoop.isOnLoopThread); done.signal() }
        done.wait()
        XCTAssertEqual(onWorker.value, false)

        // While the loop runs, work posted to it is on the loop; a worker still is not.
        var posted: Bool?
        let workerWhileRunning = Answer()
        runMainLoop(seconds: 0.3, actions: [(at: 0.05, run: {
            posted = MainLoop.isOnLoopThread
            DispatchQueue.global().async { workerWhileRunning.set(MainLoop.isOnLoopThread) }
        })])
        XCTAssertEqual(posted, true)
        XCTAssertTrue(waitUntil(5) { workerWhileRunning.value != nil })
        XCTAssertEqual(workerWhileRunning.value, false)
    }

    func testAThreadRunningTheLoopOwnsItAndTheMainThreadThenDoesNot() {
        let running = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        let workerOwns = Answer()
        let thread = Thread {
            let loop = MainLoop()
            MainLoop.post { workerOwns.set(MainLoop.isOnLoopThread); running.signal() }
            DispatchQueue.global().async { finish.wait(); MainLoop.post { loop.quit() } }
            loop.run()
        }
        thread.start()
        running.wait()
        XCTAssertEqual(workerOwns.value, true)
        XCTAssertFalse(MainLoop.isOnLoopThread, "another thread runs the loop now")
        finish.signal()
        XCTAssertTrue(waitUntil(5) { MainLoop.isOnLoopThread }, "the main thread owns it again once that loop ended")
    }

    private func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }
}

/// A value one thread sets and another reads.
private final class Answer: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Bool?
    func set(_ value: Bool) { lock.withLock { stored = value } }
    var value: Bool? { lock.withLock { stored } }
}
