import XCTest
@testable import Console
import Foundation
import GLibSupport
import RecorderTestSupport

/// The console page in a real browser (Debian's headless chromium): log in,
/// see the live picture and the recorder's state, and change the layout
/// from phone portrait to phone landscape to desktop without the picture
/// being fetched again.
final class ConsolePageTests: XCTestCase {
    var fixture: ConsoleFixture!
    var browser: HeadlessBrowser!

    override func setUpWithError() throws {
        fixture = try ConsoleFixture()
        browser = try HeadlessBrowser()
    }

    override func tearDown() {
        browser?.close()
        fixture?.stop()
    }

    func testLogInWatchLiveAndChangeLayoutWithoutReloadingThePicture() throws {
        try browser.open(fixture.base + "/")
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"),
                      "the page asks for the password: \(String(describing: try? browser.evaluate("location.href + ' ' + document.readyState + ' ' + document.body.innerHTML.slice(0, 200)")))")
        XCTAssertEqual(fixture.console.previewStreamsServed, 0, "no picture before logging in")

        // A wrong password is refused on the page.
        _ = try browser.evaluate("document.getElementById('password').value = 'not it'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('login-error').textContent.length > 0"))
        _ = try browser.evaluate("document.getElementById('password').value = '\(fixture.password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(15, until: "!document.getElementById('app').classList.contains('hidden')"), "logged in")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('device').textContent === 'front-door'"))
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('recording').textContent.includes('recording')"), "the recorder's state is shown")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('preview').naturalWidth > 0 && document.getElementById('live').className === ''"),
                      "the live picture plays, no overlay")
        XCTAssertTrue(browser.wait(15, until: "document.querySelectorAll('#chunks a').length > 0"), "recordings are listed with download links")
        XCTAssertEqual(try browser.evaluate("document.cookie.includes('allspark_session')") as? Bool, false, "the session cookie is HttpOnly")
        XCTAssertEqual(fixture.console.previewStreamsServed, 1)

        // Phone portrait, phone landscape, desktop: the layout changes, the picture is never fetched again.
        _ = try browser.evaluate("document.getElementById('preview').dataset.mark = 'first'; true")
        var columns: [String] = []
        let shots = TemporaryDirectory("allspark-console-shots")
        for (name, width, height, mobile) in [("portrait", 390, 844, true), ("landscape", 844, 390, true), ("desktop", 1280, 800, false)] {
            try browser.resize(width: width, height: height, mobile: mobile)
            runMainLoop(seconds: 0.7)
            columns.append(try browser.evaluate("getComputedStyle(document.querySelector('main')).gridTemplateColumns") as? String ?? "")
            try browser.screenshot().write(to: shots.file("console-\(name).png"))
        }
        XCTAssertEqual(Set(columns.map { $0.split(separator: " ").count }).count, 2, "one column on a phone held upright, two otherwise: \(columns)")
        XCTAssertEqual(try browser.evaluate("document.getElementById('preview').dataset.mark") as? String, "first", "the same picture element")
        XCTAssertEqual(try browser.evaluate("document.getElementById('preview').naturalWidth > 0") as? Bool, true)
        XCTAssertEqual(fixture.console.previewStreamsServed, 1, "no layout change fetched the picture again")
        if let keep = ProcessInfo.processInfo.environment["ALLSPARK_CONSOLE_SHOTS"] {
            for name in ["portrait", "landscape", "desktop"] {
                try? FileManager.default.removeItem(atPath: "\(keep)/console-\(name).png")
                try FileManager.default.copyItem(atPath: shots.file("console-\(name).png").path, toPath: "\(keep)/console-\(name).png")
            }
        }

        // Logging out stops the picture and asks for the password again.
        _ = try browser.evaluate("document.getElementById('logout').click(); true")
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        XCTAssertTrue(waitOnMainLoop(10) { self.fixture.service.recorder?.preview.watcherCount == 0 }, "nobody watches: the JPEG pipeline is gone")
    }
}
