import Foundation
import GLibSupport
import RecorderTestSupport
import XCTest

/// `MainLoop.isOnLoopThread`, behind `preconditionOnLoop()`: the check the
/// main-loop-owned types (Recorder, RecordingSession, ChunkSink) make at entry.
final class MainLoopOwnershipTests: XCTestCase {
    func testTheMainThreadOwnsTheLoopAndOtherThreadsDoNot() {
        XCTAssertTrue(MainLoop.isOnLoopThread, "tests drive main-loop objects from the main thread")
        var onWorker: Bool?
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { onWorker = MainLoop.isOnLoopThread; done.signal() }
        done.wait()
        XCTAssertEqual(onWorker, false)

        // While the loop runs, work posted to it is on the loop; a worker still is not.
        var posted: Bool?
        var workerWhileRunning: Bool?
        runMainLoop(seconds: 0.3, actions: [(at: 0.05, run: {
            posted = MainLoop.isOnLoopThread
            DispatchQueue.global().async { workerWhileRunning = MainLoop.isOnLoopThread }
        })])
        XCTAssertEqual(posted, true)
        XCTAssertEqual(workerWhileRunning, false)
    }

    func testAThreadRunningTheLoopOwnsItAndTheMainThreadThenDoesNot() {
        let running = DispatchSemaphore(value: 0)
        let finish = DispatchSemaphore(value: 0)
        var workerOwns: Bool?
        let thread = Thread {
            let loop = MainLoop()
            MainLoop.post { workerOwns = MainLoop.isOnLoopThread; running.signal() }
            DispatchQueue.global().async { finish.wait(); MainLoop.post { loop.quit() } }
            loop.run()
        }
        thread.start()
        running.wait()
        XCTAssertEqual(workerOwns, true)
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
