import XCTest
import Console
import GLibSupport
import RecorderService
import RecorderTestSupport

/// Issue 21: /healthz and /api/v1/status carry how recording really goes
/// (the frame rate written to chunks, CPU, temperature, the privacy stage
/// when there is one), and the page shows REC.
final class ConsoleHealthTests: XCTestCase {
    func testHealthCarriesTheRecordedFrameRateAndThePageShowsREC() throws {
        let fixture = try ConsoleFixture()
        defer { fixture.stop() }
        XCTAssertTrue(waitOnMainLoop(15) { fixture.service.recorder?.state == .recording })
        runMainLoop(seconds: 5)   // a few samples
        let health = try consoleRequest(fixture.base, "/healthz")
        XCTAssertEqual(health.status, 200, health.text)
        let body = health.json()
        XCTAssertEqual(body["status"] as? String, "ok", health.text)
        let details = try XCTUnwrap(body["health"] as? [String: Any], health.text)
        let fps = try XCTUnwrap(details["recorded_frames_per_second"] as? Double, health.text)
        XCTAssertEqual(fps, 30, accuracy: 4, "the frame rate written to chunks")
        XCTAssertNotNil(details["cpu_percent"] as? Double, health.text)
        XCTAssertNil(details["privacy"], "face blur is off in the fixture: no privacy stage to report")

        let status = try consoleRequest(fixture.base, "/api/v1/status", ["-u", "admin:\(fixture.password)"]).json()
        XCTAssertEqual((status["health"] as? [String: Any])?["status"] as? String, "ok")
        let page = try consoleRequest(fixture.base, "/").text
        XCTAssertTrue(page.contains(#"id="rec""#) && page.contains("REC degraded"), "the page has the REC indicator")
    }
}
