import XCTest
@testable import Console
import Foundation
import GLibSupport
import RecorderCore
import RecorderService
import RecorderTestSupport

/// The console page in a real browser (Debian's headless chromium): log in,
/// see the live picture and the recorder's state, and change the layout
/// from phone portrait to phone landscape to desktop without the picture
/// being fetched again; connect to a server and watch the indicator follow
/// it; change a setting; download a chunk.
final class ConsolePageTests: XCTestCase {
    var fixture: ConsoleFixture!
    var browser: HeadlessBrowser!

    override func setUpWithError() throws {
        // Reconnects soon after the test server comes back.
        fixture = try ConsoleFixture(serverConfig: "reconnect_delay_s = 0.5")
        browser = try HeadlessBrowser()
    }

    /// Opens the page and logs in with the fixture's password.
    func logIn() throws {
        try browser.open(fixture.base + "/")
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        _ = try browser.evaluate("document.getElementById('password').value = '\(fixture.password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(15, until: "!document.getElementById('app').classList.contains('hidden')"), "logged in")
    }

    func js(_ expression: String) throws -> Any? { try browser.evaluate(expression) }

    func testConnectWatchTheIndicatorFollowTheServerAndDisconnect() throws {
        let server = try AllSparkTestServer()
        try logIn()
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('indicator').className === 'none'"), "no server configured")
        XCTAssertEqual(try js("document.getElementById('host').value") as? String, "")

        // Type the test server's address and connect.
        _ = try js("document.getElementById('host').value = '\(server.address)'; document.getElementById('verify-tls').checked = false; document.getElementById('connect').click(); true")
        XCTAssertTrue(browser.wait(20, until: "document.getElementById('indicator').className === 'connected'"),
                      "green: \(String(describing: try? js("document.getElementById('indicator').className + ' ' + document.getElementById('server-result').textContent")))")
        XCTAssertEqual(try js("document.getElementById('lock').classList.contains('on')") as? Bool, false, "ws, no lock")
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('send-row').classList.contains('hidden')"), "a server: Send to server shows")
        XCTAssertTrue(waitOnMainLoop(10) { server.clientNames.contains("front-door") }, "the server got clientInfo: \(server.texts)")
        XCTAssertEqual(fixture.service.configuration.server.host, server.address)
        XCTAssertEqual(fixture.service.configuration.server.verifyTLS, false)
        XCTAssertEqual(ServerLinkStore(storageDirectory: fixture.storage.file("chunks").path).load()?.host, server.address, "kept for the next start")

        // The server goes away: the indicator leaves green; it comes back on the same port: green again.
        server.kill()
        XCTAssertTrue(browser.wait(20, until: "['disconnected', 'connecting'].includes(document.getElementById('indicator').className)"), "red or orange")
        try server.restart()
        XCTAssertTrue(browser.wait(25, until: "document.getElementById('indicator').className === 'connected'"), "green again")
        XCTAssertTrue(waitOnMainLoop(10) { server.clientNames.count >= 2 }, "introduced again: \(server.clientNames)")

        // Disconnect: no host, no discovery, no link.
        _ = try js("document.getElementById('disconnect').click(); true")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('indicator').className === 'none' && document.getElementById('host').value === ''"))
        XCTAssertNil(fixture.service.link)
        XCTAssertTrue(waitOnMainLoop(10) { server.connections.isEmpty }, "the server sees the recorder go")
        XCTAssertEqual(try js("document.getElementById('server-result').textContent") as? String, "disconnected")
    }

    func testChangeTheChunkLengthThenAStaleChangeIsRefusedAndShown() throws {
        try logIn()
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('chunk-seconds').value === '1'"), "the form shows the running settings")
        guard let recorder = fixture.service.recorder else { return XCTFail("not recording") }

        // Two-second chunks from the page: the chunk after the one being written follows.
        _ = try js("document.getElementById('chunk-seconds').value = '2'; document.getElementById('settings-form').requestSubmit(); true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('settings-result').textContent.startsWith('Saved')"),
                      "\(String(describing: try? js("document.getElementById('settings-result').textContent")))")
        // A chunk whose first frame was captured after the change was cut by the new length. Chosen by
        // capture time, not by counting the catalogue: under load the encoder and muxer can finish a chunk
        // cut before the change after the page says "Saved", so the catalogue lags capture by a chunk or more.
        let changed = Date().timeIntervalSince1970
        XCTAssertEqual(recorder.currentTuning.chunkDurationMs, 2000)
        XCTAssertTrue(waitOnMainLoop(15) { recorder.catalog.all.contains { $0.start >= changed } }, "a chunk started after the change")
        let next = try XCTUnwrap(recorder.catalog.all.first { $0.start >= changed })
        XCTAssertEqual(next.duration, 2, accuracy: 0.5, "the next chunk is two seconds long: \(recorder.catalog.all.map(\.duration))")

        // Changed elsewhere (as the server's clientConfig would) after the page read the settings:
        // the page's change is refused with 409, said so, and the form shows the new values.
        var tuning = recorder.currentTuning
        tuning.chunkDurationMs = 3000
        recorder.retune(tuning)
        _ = try js("document.getElementById('chunk-seconds').value = '1'; document.getElementById('settings-form').requestSubmit(); true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('settings-result').textContent.includes('changed elsewhere')"),
                      "\(String(describing: try? js("document.getElementById('settings-result').textContent")))")
        XCTAssertEqual(try js("document.getElementById('settings-result').classList.contains('error-text')") as? Bool, true, "shown as an error")
        XCTAssertEqual(try js("document.getElementById('chunk-seconds').value") as? String, "3", "reloaded")
        XCTAssertEqual(recorder.currentTuning.chunkDurationMs, 3000, "the stale change changed nothing")
    }

    /// The form's bounds are the API's: half a second is refused by the form (the API refuses it too),
    /// one second is the least both take; the buffer size is set from the form.
    func testTheSettingsFormTakesWhatTheAPITakesAndSetsTheBuffer() throws {
        try logIn()
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('chunk-seconds').value === '1'"))
        XCTAssertEqual(try js("document.getElementById('chunk-seconds').value = '0.5'; document.getElementById('chunk-seconds').checkValidity()") as? Bool, false,
                       "0.5 s is refused by the form, as by the API (chunk_duration_ms 1000…)")
        XCTAssertEqual(try js("document.getElementById('chunk-seconds').value = '1'; document.getElementById('chunk-seconds').checkValidity()") as? Bool, true)
        let recorder = try XCTUnwrap(fixture.service.recorder)
        let bounds = fixture.service.configuration.server.bounds
        _ = try js("document.getElementById('buffer-mb').value = '\(bounds.minBufferMB)'; document.getElementById('settings-form').requestSubmit(); true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('settings-result').textContent.startsWith('Saved')"),
                      "\(String(describing: try? js("document.getElementById('settings-result').textContent")))")
        XCTAssertEqual(recorder.currentTuning.bufferMaxMB, bounds.minBufferMB)
    }

    /// The password from the page: the current one is checked, the new one works, the old one no longer does.
    func testChangeThePasswordFromThePage() throws {
        try logIn()
        _ = try js("document.getElementById('password-panel').open = true; true")
        let set = { (old: String, new: String, again: String) in
            _ = try self.js("document.getElementById('old-password').value = '\(old)'; document.getElementById('new-password').value = '\(new)'; document.getElementById('new-password-again').value = '\(again)'; document.getElementById('password-form').requestSubmit(); true")
        }
        try set("wrong one", "a new secret", "a new secret")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('password-result').textContent.includes('wrong')"), "a wrong current password is said so")
        XCTAssertFalse(try js("document.getElementById('app').classList.contains('hidden')") as? Bool ?? true, "still logged in")
        try set(fixture.password, "a new secret", "another one")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('password-result').textContent.includes('differ')"))
        try set(fixture.password, "a new secret", "a new secret")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('password-result').textContent.startsWith('Changed')"),
                      "\(String(describing: try? js("document.getElementById('password-result').textContent")))")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/status", ["-u", "admin:\(fixture.password)"]).status, 401, "the old password no longer works")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/status", ["-u", "admin:a new secret"]).status, 200, "the new one does")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('recording').textContent.includes('recording')"), "this page's session goes on")
    }

    /// The pipeline, read-only, with check-pipeline's verdict; "Send to server" only with a server; an icon without a password.
    func testThePipelineViewTheServerOnlyControlsAndTheIcon() throws {
        try logIn()
        _ = try js("document.getElementById('pipeline-panel').open = true; true")
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('pipeline-info').textContent.includes('OK: blur_in, blur_out and chunks found')"),
                      "\(String(describing: try? js("document.getElementById('pipeline-info').textContent")))")
        XCTAssertTrue(try js("document.getElementById('pipeline-text').textContent.includes('appsink name=blur_in')") as? Bool ?? false)
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('send-row').classList.contains('hidden')"), "no server: nothing to send to")
        XCTAssertEqual(try consoleRequest(fixture.base, "/favicon.ico").status, 200, "the icon without a password")
        try browser.command("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]])
        XCTAssertTrue(browser.wait(5, until: "getComputedStyle(document.body).backgroundColor === 'rgb(17, 17, 17)'"), "dark when the system is dark")
        try browser.command("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "light"]]])
        XCTAssertTrue(browser.wait(5, until: "getComputedStyle(document.body).backgroundColor === 'rgb(242, 242, 247)'"), "light when the system is light")
    }

    func testDownloadAChunkThroughThePageLink() throws {
        try logIn()
        XCTAssertTrue(browser.wait(15, until: "document.querySelectorAll('#chunks a').length > 0"), "recordings are listed")
        // The page's own link, fetched by the page with its session (the cookie is HttpOnly).
        let fetched = try js("""
            (async () => {
              const a = document.querySelector('#chunks a');
              const r = await fetch(a.href, { credentials: 'same-origin' });
              const bytes = new Uint8Array(await r.arrayBuffer());
              let text = ''; for (const b of bytes) text += String.fromCharCode(b);
              return JSON.stringify({ status: r.status, type: r.headers.get('content-type'), href: a.getAttribute('href'), data: btoa(text) });
            })()
            """) as? String ?? ""
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(fetched.utf8)) as? [String: Any], fetched)
        XCTAssertEqual(answer["status"] as? Int, 200)
        XCTAssertEqual(answer["type"] as? String, "video/mp4")
        let href = try XCTUnwrap(answer["href"] as? String)
        let data = try XCTUnwrap(Data(base64Encoded: answer["data"] as? String ?? ""))
        let name = String(href.dropFirst("/api/v1/chunks/".count))
        let record = try XCTUnwrap(fixture.service.recorder?.catalog.all.first { $0.file == name }, "the link names a chunk of the catalog: \(href)")
        XCTAssertEqual(Int64(data.count), record.size, "the whole chunk")
        let scratch = TemporaryDirectory()
        let file = scratch.file(name)
        try data.write(to: file)
        let report = try discover(file)
        XCTAssertEqual(report.duration ?? 0, record.duration, accuracy: 0.3, report.output)
        XCTAssertTrue(report.container.lowercased().contains("mp4") || report.container.lowercased().contains("quicktime"), report.output)
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
