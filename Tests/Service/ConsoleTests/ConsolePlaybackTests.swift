import XCTest
@testable import Console
import Foundation
import GLibSupport
import RecorderTestSupport

/// Playback in a real browser: the day's timeline shows what is on the box,
/// a click plays that moment in the page's <video> and playback runs on
/// into the next chunk; thumbnails come from the recorded chunks; a range
/// downloads as ONE MP4 whose length is the range's.
final class ConsolePlaybackTests: XCTestCase {
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

    func js(_ expression: String) throws -> Any? { try browser.evaluate(expression) }
    func text(_ expression: String) -> String { String(describing: (try? js(expression)) ?? "nil") }

    /// What the player is doing, for failure messages.
    let playerState = """
        (() => { const p = document.getElementById('player'); const b = [];
          for (let i = 0; i < p.buffered.length; i++) b.push(p.buffered.start(i).toFixed(2) + '-' + p.buffered.end(i).toFixed(2));
          return JSON.stringify({ playing: playing && playing.name, t: p.currentTime, paused: p.paused, ready: p.readyState, network: p.networkState,
                                  duration: p.duration, buffered: b, error: p.error && p.error.message, src: p.currentSrc }); })()
        """

    func logIn() throws {
        try browser.open(fixture.base + "/")
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        _ = try js("document.getElementById('password').value = '\(fixture.password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(15, until: "!document.getElementById('app').classList.contains('hidden')"), "logged in")
    }

    func testFindAMomentPlayItOnAcrossChunksAndDownloadARangeAsOneMP4() throws {
        let recorder = try XCTUnwrap(fixture.service.recorder)
        XCTAssertTrue(waitOnMainLoop(30) { recorder.catalog.all.count >= 8 }, "eight 1 s chunks")
        try logIn()
        XCTAssertTrue(browser.wait(15, until: "document.querySelectorAll('#timeline .span').length > 0 && document.querySelectorAll('#zoom .span').length > 0"),
                      "the day's timeline shows the recording: \(text("document.getElementById('day-summary').textContent"))")

        // A moment: half a second into the third chunk, clicked on the hour's bar.
        let chunks = recorder.catalog.all
        let moment = (chunks[2].start + 0.5) * 1000
        _ = try js("""
            (() => { const [from, to] = zoomWindow(), bar = document.getElementById('zoom'), box = bar.getBoundingClientRect();
              const x = box.left + box.width * (\(moment) - from) / (to - from);
              bar.dispatchEvent(new MouseEvent('click', { clientX: x, clientY: box.top + 5, bubbles: true })); return true; })()
            """)
        XCTAssertTrue(browser.wait(20, until: "!!playing && document.getElementById('player').readyState >= 2"),
                      "the chunk loads: \(text("JSON.stringify({ playing: playing && playing.name, error: document.getElementById('player').error && document.getElementById('player').error.message })"))")
        let clicked = try XCTUnwrap(try js("playing.startMs") as? Double)
        XCTAssertLessThanOrEqual(abs(clicked - moment), 3000 * 1.5 + 1000, "the chunk at (about) the moment clicked: a pixel is ~3 s of the hour")
        // Plays: the <video>'s currentTime advances (counted as it moves forward within a chunk; a
        // chunk lasts 1 s here, so the next may take over at any moment), and the next chunk follows.
        _ = try js("""
            window.advanced = 0; window.lastTime = -1;
            document.getElementById('player').addEventListener('timeupdate', () => { const t = document.getElementById('player').currentTime;
              if (window.lastTime >= 0 && t > window.lastTime) window.advanced += t - window.lastTime; window.lastTime = t; });
            document.getElementById('player').addEventListener('emptied', () => { window.lastTime = -1; }); true
            """)
        XCTAssertTrue(browser.wait(15, until: "window.advanced > 0.3"),
                      "currentTime advances: \(text(playerState))")
        let first = try XCTUnwrap(try js("playing.name") as? String)
        XCTAssertTrue(browser.wait(20, until: "playing.name !== '\(first)' && document.getElementById('player').currentTime > 0.2"),
                      "playback went on into the next chunk: \(text("playing.name"))")
        XCTAssertGreaterThan(try XCTUnwrap(try js("chosen") as? Double), clicked + 1000, "the moment shown moved past the boundary")

        // Seeking across a boundary: a click further on loads that chunk and plays on from there.
        // The page's choice is checked as it is made; what plays is recorded as it plays (chunks last
        // 1 s here: on a loaded machine the player may be on into the next chunk before it reports a
        // time past the seek point in the one clicked).
        let later = (chunks[6].start + 0.2) * 1000
        let loaded = try js("""
            window.playedAfterSeek = []; document.getElementById('player').addEventListener('timeupdate', () => {
              const name = playing && playing.name;
              if (document.getElementById('player').currentTime > 0.2 && window.playedAfterSeek.at(-1) !== name) window.playedAfterSeek.push(name); });
            playAt(\(later)); playing.name
            """) as? String
        XCTAssertEqual(loaded, chunks[6].file, """
            the chunk clicked is the one loaded: moment \(later), catalog \(chunks[5...7].map { "\($0.file) \($0.start * 1000)…\($0.end * 1000)" }),             page \(text("JSON.stringify(dayChunks.filter((c) => Math.abs(c.startMs - \(later)) < 3000).map((c) => [c.name, c.startMs, c.endMs]))"))
            """)
        XCTAssertTrue(browser.wait(15, until: "window.playedAfterSeek.length > 0"), "played after the seek: \(text(playerState))")
        let playedFirst = try js("window.playedAfterSeek[0]") as? String
        XCTAssertTrue([chunks[6].file, chunks[7].file].contains(playedFirst ?? ""),
                      "played from the chunk clicked, not on from before: \(text("JSON.stringify(window.playedAfterSeek)"))")

        // Thumbnails of the hour come from the recorded chunks.
        XCTAssertTrue(browser.wait(20, until: "[...document.querySelectorAll('#thumbs img')].some((i) => i.complete && i.naturalWidth === 320)"),
                      "a thumbnail 320 pixels wide: \(text("[...document.querySelectorAll('#thumbs img')].map((i) => i.src + ' ' + i.naturalWidth).join(', ')"))")

        // One clock, 24 h: the range fields and every time shown (headless chromium's locale is en-US, 12 h by default).
        XCTAssertEqual(try js("/^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$/.test(document.getElementById('export-from').value)") as? Bool, true,
                       text("document.getElementById('export-from').value"))
        XCTAssertEqual(try js("/\\b(AM|PM)\\b/.test(document.body.innerText)") as? Bool, false, "no 12 h time on the page")

        // Download chunks 2…5 as one MP4: 4 s, with the page's own form and URL.
        let from = chunks[2].start, to = chunks[5].end
        _ = try js("document.getElementById('export-from').value = clock(\(from * 1000)); document.getElementById('export-to').value = clock(\(to * 1000)); true")
        let fetched = try js("""
            (async () => {
              const r = await fetch(exportURL(), { credentials: 'same-origin' });
              const bytes = new Uint8Array(await r.arrayBuffer());
              let text = ''; for (const b of bytes) text += String.fromCharCode(b);
              return JSON.stringify({ status: r.status, type: r.headers.get('content-type'), disposition: r.headers.get('content-disposition'), data: btoa(text) });
            })()
            """) as? String ?? ""
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(fetched.utf8)) as? [String: Any], fetched)
        XCTAssertEqual(answer["status"] as? Int, 200, fetched.prefix(300).description)
        XCTAssertEqual(answer["type"] as? String, "video/mp4")
        XCTAssertTrue((answer["disposition"] as? String ?? "").contains("front-door_"), "\(answer["disposition"] ?? "")")
        let data = try XCTUnwrap(Data(base64Encoded: answer["data"] as? String ?? ""))
        let scratch = TemporaryDirectory()
        let file = scratch.file("range.mp4")
        try data.write(to: file)
        let report = try discover(file)
        // The range is whole seconds of clock time; the clip's own length is its frames' (cuts on frames).
        let expected = floor(to) - floor(from)
        XCTAssertEqual(report.duration ?? 0, expected, accuracy: 1.1, "one MP4 as long as the range: \(report.output)")
        XCTAssertTrue(report.output.contains("H.264"), report.output)
        XCTAssertEqual(Double(try countFrames(in: file)), ((report.duration ?? 0) * 30).rounded(), accuracy: 3, "every frame of the range, once")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.storage.file("chunks").path).filter { $0.hasPrefix(".export-") }
        XCTAssertEqual(leftovers, [], "the joined file is gone once sent")
    }

    /// The documentation's pictures (opt-in): `ALLSPARK_CONSOLE_SHOTS=docs swift test --filter ConsolePlaybackTests/testScreenshots`
    /// writes docs/console-desktop.png and docs/console-portrait.png, the page in the dark theme playing a recorded moment.
    func testScreenshots() throws {
        guard let folder = ProcessInfo.processInfo.environment["ALLSPARK_CONSOLE_SHOTS"] else { throw XCTSkip("set ALLSPARK_CONSOLE_SHOTS to a folder") }
        let recorder = try XCTUnwrap(fixture.service.recorder)
        XCTAssertTrue(waitOnMainLoop(40) { recorder.catalog.all.count >= 12 })
        fixture.console.logs.append(level: .notice, label: "allspark.console", message: "console: admin logged in from 192.168.1.23")
        try browser.command("Emulation.setEmulatedMedia", ["features": [["name": "prefers-color-scheme", "value": "dark"]]])
        try logIn()
        XCTAssertTrue(browser.wait(15, until: "document.getElementById('preview').naturalWidth > 0 && document.querySelectorAll('#zoom .span').length > 0"))
        let moment = (recorder.catalog.all[4].start + 0.4) * 1000
        _ = try js("playAt(\(moment)); document.getElementById('log-panel').open = true; true")
        XCTAssertTrue(browser.wait(20, until: "document.getElementById('player').readyState >= 2 && [...document.querySelectorAll('#thumbs img')].some((i) => i.complete && i.naturalWidth > 0)"))
        for (name, width, mobile) in [("desktop", 1280, false), ("portrait", 390, true)] {
            try browser.resize(width: width, height: 800, mobile: mobile)
            runMainLoop(seconds: 1.5)
            let height = try XCTUnwrap(try js("Math.ceil(document.documentElement.scrollHeight)") as? Int)
            try browser.resize(width: width, height: min(height, 2400), mobile: mobile)
            runMainLoop(seconds: 1.5)
            _ = try js("document.getElementById('player').pause(); true")
            try browser.screenshot().write(to: URL(fileURLWithPath: "\(folder)/console-\(name).png"))
        }
    }

    func testThumbnailsAndDownloadsRefuseWhatTheyCannotServe() throws {
        let recorder = try XCTUnwrap(fixture.service.recorder)
        XCTAssertTrue(waitOnMainLoop(30) { recorder.catalog.all.count >= 2 })
        let auth = ["-u", "admin:\(fixture.password)"]
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/thumbnail.jpg?t=yesterday", auth).status, 422)
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/thumbnail.jpg?t=-1&width=5000", auth).status, 422)
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/thumbnail.jpg?t=-3", []).status, 401, "behind the login")
        let chunk = recorder.catalog.all[0]
        let picture = try consoleRequest(fixture.base, "/api/v1/thumbnail.jpg?t=\(chunk.start + 0.5)&width=64", auth)
        XCTAssertEqual(picture.status, 200)
        XCTAssertEqual(picture.headers["content-type"], "image/jpeg")
        XCTAssertEqual(Array(picture.body.prefix(2)), [0xFF, 0xD8], "a JPEG")
        XCTAssertEqual(fixture.console.media.thumbnails.count, 1, "kept in the cache")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/export.mp4?from=-10", auth).status, 422, "to is required")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/export.mp4?from=-10&to=-20", auth).status, 422, "from before to")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/export.mp4?from=-90000&to=-1", auth).status, 422, "at most 3 hours")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/export.mp4?from=1000&to=2000", auth).status, 404, "nothing recorded in 1970")
    }

    /// The day is fetched once; the polls after it ask only for what is newer than the last chunk known.
    func testTheDayIsFetchedOnceThenOnlyWhatIsNew() throws {
        let recorder = try XCTUnwrap(fixture.service.recorder)
        XCTAssertTrue(waitOnMainLoop(30) { recorder.catalog.all.count >= 2 })
        try browser.open(fixture.base + "/")
        _ = try js("""
            window.asked = []; const plain = window.fetch;
            window.fetch = (url, options) => { if (String(url).startsWith('/api/v1/chunks?')) window.asked.push(String(url)); return plain(url, options); }; true
            """)
        XCTAssertTrue(browser.wait(10, until: "!document.getElementById('login').classList.contains('hidden')"))
        _ = try js("document.getElementById('password').value = '\(fixture.password)'; document.getElementById('login').requestSubmit(); true")
        XCTAssertTrue(browser.wait(20, until: "window.asked.length >= 3"), "the page polls: \(text("JSON.stringify(window.asked)"))")
        let asked = try XCTUnwrap(try js("window.asked.map((u) => Date.parse(decodeURIComponent(new URL(u, location.href).searchParams.get('from'))))") as? [Double])
        let midnight = try XCTUnwrap(try js("startOfDay(Date.now())") as? Double)
        XCTAssertEqual(asked.first, midnight, "the first asks for the whole day")
        XCTAssertTrue(asked.dropFirst().allSatisfy { $0 > midnight }, "later ones only for what is newer: \(asked)")
    }

    func testTheLogViewShowsRecentLinesFilteredAndEscaped() throws {
        let logs = fixture.console.logs
        logs.append(level: .warning, label: "allspark.test", message: "a <b>bold</b> line\nwith a second line")
        logs.append(level: .debug, label: "allspark.test", message: "quiet detail")
        try logIn()
        _ = try js("document.getElementById('log-level').value = 'info'; document.getElementById('log-panel').open = true; true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('log-lines').textContent.includes('a <b>bold</b> line')"),
                      "the line is shown as text: \(text("document.getElementById('log-lines').innerHTML.slice(-400)"))")
        XCTAssertEqual(try js("document.querySelectorAll('#log-lines b').length") as? Int, 0, "nothing in a line is markup")
        XCTAssertEqual(try js("document.getElementById('log-lines').textContent.includes('with a second line') && document.getElementById('log-lines').textContent.includes('\\\\n')") as? Bool, true,
                       "one record, one line: the line break escaped")
        XCTAssertEqual(try js("document.getElementById('log-lines').textContent.includes('quiet detail')") as? Bool, false, "below the level chosen")
        _ = try js("document.getElementById('log-level').value = 'trace'; document.getElementById('log-filter').value = 'quiet'; document.getElementById('log-filter').dispatchEvent(new Event('input')); true")
        XCTAssertTrue(browser.wait(10, until: "document.getElementById('log-lines').textContent.includes('quiet detail') && !document.getElementById('log-lines').textContent.includes('bold')"),
                      "filtered: \(text("document.getElementById('log-lines').textContent.slice(-300)"))")
        let auth = ["-u", "admin:\(fixture.password)"]
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/logs", []).status, 401, "behind the login")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/logs?level=loud", auth).status, 422)
    }
}

/// The log view's ring and the thumbnail cache stay bounded.
final class ConsoleMemoryBoundsTests: XCTestCase {
    func testTheLogRingKeepsTheNewestRecordsOnly() {
        let ring = RecentLogs(capacity: 5)
        for i in 1...12 { ring.append(level: i % 2 == 0 ? .warning : .info, label: "t", message: "line \(i)") }
        XCTAssertEqual(ring.records().map(\.message), (8...12).map { "line \($0)" }, "the last five, oldest first")
        XCTAssertEqual(ring.records(atLeast: .warning).map(\.message), ["line 8", "line 10", "line 12"])
        XCTAssertEqual(ring.records(after: 10).map(\.sequence), [11, 12])
        XCTAssertEqual(ring.records(containing: "LINE 1", limit: 2).map(\.message), ["line 11", "line 12"])
        ring.append(level: .info, label: "t", message: String(repeating: "x", count: 10_000))
        XCTAssertLessThanOrEqual(ring.records().last?.message.count ?? 0, 4001, "a runaway line is cut")
    }

    func testTheThumbnailCacheIsBoundedByCountAndBytes() {
        let cache = BoundedCache(maximumCount: 3, maximumBytes: 100)
        for key in ["a", "b", "c"] { cache.insert(Data(count: 10), for: key) }
        _ = cache.value(for: "a")                       // used: "b" is now the oldest
        cache.insert(Data(count: 10), for: "d")
        XCTAssertNil(cache.value(for: "b"))
        XCTAssertNotNil(cache.value(for: "a"))
        cache.insert(Data(count: 90), for: "e")          // bytes: drops the oldest until it fits
        XCTAssertLessThanOrEqual(cache.bytes, 100)
        XCTAssertNotNil(cache.value(for: "e"))
        XCTAssertLessThanOrEqual(cache.count, 3)
    }
}
