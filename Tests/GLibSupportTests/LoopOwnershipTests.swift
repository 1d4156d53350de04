import XCTest
import Foundation
import GLibSupport

/// The check main-loop-owned types make at their entry.
final class LoopOwnershipTests: XCTestCase {
    func testOnlyTheThreadRunningTheLoopOwnsItWhileItRuns() {
        XCTAssertTrue(MainLoop.isOnLoopThread, "before any loop runs, the caller is the owner to be")
        let loop = MainLoop()
        var onLoop: Bool?
        let fromWorker = WorkerAnswer()
        MainLoop.post {
            onLoop = MainLoop.isOnLoopThread
            Thread.detachNewThread {
                fromWorker.set(MainLoop.isOnLoopThread)
                MainLoop.post { loop.quit() }
            }
        }
        XCTAssertTrue(loop.run(forAtMost: 5))
        XCTAssertEqual(onLoop, true)
        XCTAssertEqual(fromWorker.value, false, "a streaming or worker thread is caught while the loop runs")
        XCTAssertTrue(MainLoop.isOnLoopThread, "released again once the loop returns")
    }
}

private final class WorkerAnswer: @unchecked Sendable {
    private let lock = NSLock()
    private var answer: Bool?
    func set(_ value: Bool) { lock.withLock { answer = value } }
    var value: Bool? { lock.withLock { answer } }
}
