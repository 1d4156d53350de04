import XCTest
import Console
import Foundation
import GLibSupport
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport

/// The console over real HTTP: the service records the test source, the
/// console listens on loopback, and curl (a real client, in its own process)
/// asks while the main loop serves.
final class ConsoleTests: XCTestCase {
    typealias Answer = ConsoleAnswer

    var fixture: ConsoleFixture!
    var service: RecorderService { fixture.service }
    var console: Console { fixture.console }
    var storage: TemporaryDirectory { fixture.storage }
    var password: String { fixture.password }

    override func setUpWithError() throws {
        fixture = try ConsoleFixture()
        XCTAssertTrue(waitOnMainLoop(10) { (self.service.recorder?.catalog.all.count ?? 0) >= 2 }, "chunks to look at")
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
    }

    var base: String { "http://127.0.0.1:\(console.port)" }

    /// One request with curl; `arguments` are curl's (headers, method, data).
    func request(_ path: String, _ arguments: [String] = []) throws -> Answer {
        try consoleRequest(base, path, arguments)
    }

    func login() throws -> (cookie: String, csrf: String, token: String) {
        let answer = try request("/api/v1/login", ["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"password":"\#(password)"}"#])
        XCTAssertEqual(answer.status, 200, answer.text)
        let cookie = answer.headers["set-cookie"] ?? ""
        XCTAssertTrue(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), cookie)
        let json = answer.json()
        return (String(cookie.split(separator: ";")[0]), json["csrf_token"] as? String ?? "", json["token"] as? String ?? "")
    }

    /// The page and the API document are embedded at build time (EmbedResources), so the
    /// executable copied alone to another folder, with no resource bundle beside it (as the
    /// Debian package installs it), still serves them.
    func testTheExecutableAloneServesThePageAndTheDocument() throws {
        let folder = TemporaryDirectory()
        let copy = folder.file("allspark-recorder").path
        try FileManager.default.copyItem(atPath: recorderExecutable, toPath: copy)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["allspark-recorder"])
        try ConsolePassword(storageDirectory: folder.file("chunks").path).set("alone and fine")
        let port = try freeTCPPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: copy)
        process.arguments = ["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(folder.file("chunks").path)",
                             "--set", "console.listen=127.0.0.1:\(port)", "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240",
                             "--duration", "30", "--log-level", "warning"]
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        var page = ""
        for _ in 0..<80 where !page.contains("id=\"timeline\"") {
            page = (try? runTool("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/"]).output) ?? ""
            Thread.sleep(forTimeInterval: 0.25)
        }
        XCTAssertTrue(page.hasPrefix("<!doctype html>") && page.contains("id=\"timeline\""), "the page: \(page.prefix(200))")
        let document = try runTool("/usr/bin/curl", ["-s", "-u", "admin:alone and fine", "http://127.0.0.1:\(port)/api/v1/openapi.json"]).output
        XCTAssertTrue(document.contains("\"openapi\": \"3.0.3\""), String(document.prefix(200)))
        let icon = try runTool("/usr/bin/curl", ["-s", "http://127.0.0.1:\(port)/favicon.ico"]).output
        XCTAssertTrue(icon.hasPrefix("<svg"), "the icon, without a password: \(icon.prefix(100))")
    }

    func testEveryWayInIsCheckedAndOnlyHealthIsOpen() throws {
        let hash = storage.file("chunks").appendingPathComponent(StorageLayout.consolePasswordFileName).path
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: hash)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o777, 0o600, "only the service's user reads the password's hash")
        XCTAssertEqual(try request("/healthz").status, 200, "health needs no password")
        XCTAssertEqual(try request("/api/v1/status").status, 401)
        XCTAssertEqual(try request("/metrics").status, 401)
        XCTAssertEqual(try request("/api/v1/chunks").status, 401)

        // Scripts: Basic and bearer.
        let basic = try request("/api/v1/status", ["-u", "admin:\(password)"])
        XCTAssertEqual(basic.status, 200)
        XCTAssertEqual((basic.json()["recording"] as? [String: Any])?["state"] as? String, "recording")
        XCTAssertEqual(try request("/api/v1/status", ["-u", "admin:wrong password"]).status, 401)
        XCTAssertEqual(try request("/api/v1/status", ["-u", "root:\(password)"]).status, 401, "only admin")
        let session = try login()
        XCTAssertEqual(try request("/api/v1/status", ["-H", "Authorization: Bearer \(session.token)"]).status, 200)
        XCTAssertEqual(try request("/api/v1/status", ["-H", "Authorization: Bearer \(session.token)x"]).status, 401)

        // The browser: a cookie, and the CSRF token on every change.
        XCTAssertEqual(try request("/api/v1/status", ["-H", "Cookie: \(session.cookie)"]).status, 200)
        let upload = ["-X", "POST", "-H", "Content-Type: application/json", "--data", #"{"from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:01:00Z"}"#]
        let noToken = try request("/api/v1/uploads", upload + ["-H", "Cookie: \(session.cookie)"])
        XCTAssertEqual(noToken.status, 403, noToken.text)
        let withToken = try request("/api/v1/uploads", upload + ["-H", "Cookie: \(session.cookie)", "-H", "X-CSRF-Token: \(session.csrf)"])
        XCTAssertEqual(withToken.status, 409, "past the checks: no server to send to — \(withToken.text)")
        XCTAssertEqual((withToken.json()["error"] as? [String: Any])?["code"] as? String, "no_server")
        let crossSite = try request("/api/v1/uploads", upload + ["-H", "Cookie: \(session.cookie)", "-H", "X-CSRF-Token: \(session.csrf)",
                                                                  "-H", "Origin: http://evil.example"])
        XCTAssertEqual(crossSite.status, 403, "another site's page cannot change anything, even with the user's cookie")
        XCTAssertEqual(try request("/api/v1/uploads", upload + ["-u", "admin:\(password)", "-H", "Origin: http://evil.example"]).status, 403)

        // Logging out ends the session for the cookie and the token alike.
        XCTAssertEqual(try request("/api/v1/logout", ["-X", "POST", "-H", "Cookie: \(session.cookie)", "-H", "X-CSRF-Token: \(session.csrf)"]).status, 204)
        XCTAssertEqual(try request("/api/v1/status", ["-H", "Cookie: \(session.cookie)"]).status, 401)
        XCTAssertEqual(try request("/api/v1/status", ["-H", "Authorization: Bearer \(session.token)"]).status, 401)
    }

    func testRepeatedFailuresAreSlowedDownEvenWithTheRightPasswordAfter() throws {
        for _ in 0..<3 { XCTAssertEqual(try request("/api/v1/status", ["-u", "admin:guess"]).status, 401) }
        let blocked = try request("/api/v1/status", ["-u", "admin:\(password)"])
        XCTAssertEqual(blocked.status, 429, "a guesser waits, right password or not")
        XCTAssertNotNil(blocked.headers["retry-after"])
        let wrongLogin = try request("/api/v1/login", ["-X", "POST", "--data", #"{"password":"guess"}"#])
        XCTAssertEqual(wrongLogin.status, 429)
    }

    func testChunksAreListedAndDownloadedByteForByteWholeAndByRange() throws {
        let list = try request("/api/v1/chunks?from=-3600", ["-u", "admin:\(password)"])
        XCTAssertEqual(list.status, 200)
        let chunks = list.json()["chunks"] as? [[String: Any]] ?? []
        let catalog = try XCTUnwrap(service.recorder?.catalog)
        XCTAssertEqual(chunks.compactMap { $0["name"] as? String }, catalog.chunks(from: Date().timeIntervalSince1970 - 3600).map(\.file))
        let first = try XCTUnwrap(catalog.all.first)
        // To the millisecond: chunks start on frames, not on whole seconds.
        let milliseconds = ISO8601DateFormatter()
        milliseconds.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        XCTAssertEqual(chunks.first?["start"] as? String, milliseconds.string(from: Date(timeIntervalSince1970: first.start)))
        XCTAssertEqual(milliseconds.date(from: chunks.first?["start"] as? String ?? "")?.timeIntervalSince1970 ?? 0, first.start, accuracy: 0.0011)
        let local = try Data(contentsOf: catalog.url(of: first))
        let whole = try request("/api/v1/chunks/\(first.file)", ["-u", "admin:\(password)"])
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(whole.body, local)
        XCTAssertEqual(whole.headers["content-type"], "video/mp4")
        let part = try request("/api/v1/chunks/\(first.file)", ["-u", "admin:\(password)", "-H", "Range: bytes=100-1099"])
        XCTAssertEqual(part.status, 206)
        XCTAssertEqual(part.body, local.subdata(in: 100..<1100))
        XCTAssertEqual(part.headers["content-range"], "bytes 100-1099/\(local.count)")
        XCTAssertEqual(try request("/api/v1/chunks/\(first.file)", ["-u", "admin:\(password)", "-H", "Range: bytes=\(local.count)-"]).status, 416)

        // Only catalogued chunks: nothing else in (or outside) the folder is served.
        XCTAssertEqual(try request("/api/v1/chunks/console-password.json", ["-u", "admin:\(password)"]).status, 404)
        let escape = try request("/api/v1/chunks/..%2F..%2Fetc%2Fpasswd", ["-u", "admin:\(password)"])
        XCTAssertTrue([400, 404].contains(escape.status), "refused by libsoup (400) or not in the catalog (404): \(escape.status)")
        XCTAssertFalse(escape.text.contains("root:"))
        XCTAssertEqual(try request("/api/v1/chunks/catalog.json", ["-u", "admin:\(password)"]).status, 404)
    }

    func testAChunksCompanionsAreListedWithItAndServedButNothingPosingAsOne() throws {
        let auth = ["-u", "admin:\(password)"]
        let catalog = try XCTUnwrap(service.recorder?.catalog)
        let first = try XCTUnwrap(catalog.all.first)
        let ms = try XCTUnwrap(ChunkName.parse(first.file)).startMs
        let folder = storage.file("chunks")
        let timestamps = "0 : \(ms)\n1 : \(ms + 33)"
        try timestamps.write(to: folder.appendingPathComponent("timestamps_\(ms).txt"), atomically: true, encoding: .utf8)
        try Data(repeating: 7, count: 300).write(to: folder.appendingPathComponent("audio_\(ms).wav"))
        // Posing as companions: a link to a file outside, and one whose chunk is not catalogued.
        let outside = storage.file("secret.txt")
        try "not for the console".write(to: outside, atomically: true, encoding: .utf8)
        let second = try XCTUnwrap(catalog.all.dropFirst().first)
        let secondMs = try XCTUnwrap(ChunkName.parse(second.file)).startMs
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("timestamps_\(secondMs).txt").path, withDestinationPath: outside.path)
        try "orphan".write(to: folder.appendingPathComponent("timestamps_1000.txt"), atomically: true, encoding: .utf8)

        let list = try request("/api/v1/chunks", auth).json()["chunks"] as? [[String: Any]] ?? []
        let listed = try XCTUnwrap(list.first { $0["name"] as? String == first.file })
        let companions = listed["companions"] as? [[String: Any]] ?? []
        XCTAssertEqual(companions.compactMap { $0["name"] as? String }, ["timestamps_\(ms).txt", "audio_\(ms).wav"], "in upload order")
        XCTAssertEqual(companions.compactMap { $0["mime_type"] as? String }, ["text/plain", "audio/wav"])
        XCTAssertEqual(companions.last?["size_bytes"] as? Int, 300)
        let secondListed = list.first { $0["name"] as? String == second.file }
        XCTAssertEqual((secondListed?["companions"] as? [Any])?.count, 0, "a link is no companion")

        let text = try request("/api/v1/chunks/timestamps_\(ms).txt", auth)
        XCTAssertEqual(text.status, 200)
        XCTAssertEqual(text.text, timestamps)
        XCTAssertEqual(text.headers["content-type"], "text/plain")
        XCTAssertEqual(try request("/api/v1/chunks/audio_\(ms).wav", auth + ["-H", "Range: bytes=0-9"]).body, Data(repeating: 7, count: 10))
        let link = try request("/api/v1/chunks/timestamps_\(secondMs).txt", auth)
        XCTAssertEqual(link.status, 404)
        XCTAssertFalse(link.text.contains("not for the console"))
        XCTAssertEqual(try request("/api/v1/chunks/timestamps_1000.txt", auth).status, 404, "its chunk is not in the catalog")
        XCTAssertEqual(try request("/api/v1/chunks/timestamps_0\(ms).txt", auth).status, 404, "only the spelling we write")
    }

    func testSettingsChangeLiveOnlyFromTheVersionReadAndSayWhatIsAllowed() throws {
        let auth = ["-u", "admin:\(password)"]
        let read = try request("/api/v1/settings", auth)
        XCTAssertEqual(read.status, 200)
        let etag = try XCTUnwrap(read.headers["etag"])
        XCTAssertEqual(read.json()["video_format"] as? String, "mp4")
        let patch = ["-X", "PATCH", "-H", "Content-Type: application/json"] + auth
        XCTAssertEqual(try request("/api/v1/settings", patch + ["--data", #"{"video_format":"mov"}"#]).status, 428, "If-Match is required")
        let bad = try request("/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"avi"}"#])
        XCTAssertEqual(bad.status, 422)
        let detail = bad.json()["error"] as? [String: Any]
        XCTAssertEqual(detail?["field"] as? String, "video_format")
        XCTAssertEqual(detail?["allowed"] as? [String], ["mp4", "mov"])
        for body in [#"{"chunk_duration_ms":true}"#, #"{"chunk_duration_ms":2000.5}"#, #"{"buffer_max_mb":"2000"}"#] {
            let refused = try request("/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", body])
            XCTAssertEqual(refused.status, 422, "\(body): a boolean, a fraction or a string is not a whole number")
        }
        let changed = try request("/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"mov","chunk_duration_ms":2000}"#])
        XCTAssertEqual(changed.status, 200, changed.text)
        XCTAssertEqual(service.recorder?.currentTuning.videoFormat, .mov, "applied live through the recorder's retune")
        XCTAssertEqual(service.recorder?.currentTuning.chunkDurationMs, 2000)
        XCTAssertNotEqual(changed.headers["etag"], etag)
        let stale = try request("/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"mp4"}"#])
        XCTAssertEqual(stale.status, 409, "a change made from an old reading is refused")
        XCTAssertEqual(service.recorder?.currentTuning.videoFormat, .mov)
        XCTAssertEqual(ServerSettingsStore(storageDirectory: storage.file("chunks").path).load()?.tuning.videoFormat, .mov,
                       "kept for the next start")
    }

    /// Issue 23: a value the console accepts is the value in effect after a restart. The console
    /// took 1500 ms (within the config's 1000 … 3600000 ms), but the saved value came back clamped
    /// to `server.min_chunk_ms` (2000 ms) at the next start.
    func testAChunkLengthTheConsoleAcceptsIsTheOneInEffectAfterARestart() throws {
        let auth = ["-u", "admin:\(password)"]
        let etag = try XCTUnwrap(try request("/api/v1/settings", auth).headers["etag"])
        let changed = try request("/api/v1/settings", ["-X", "PATCH", "-H", "Content-Type: application/json", "-H", "If-Match: \(etag)",
                                                       "--data", #"{"chunk_duration_ms":1500}"#] + auth)
        XCTAssertEqual(changed.status, 200, changed.text)
        XCTAssertEqual(changed.json()["chunk_duration_ms"] as? Int, 1500)
        XCTAssertEqual(service.recorder?.currentTuning.chunkDurationMs, 1500, "in effect now")
        let next = try ServiceSettings(configFile: fixture.configFile).load(logger: .init(label: "test"))
        XCTAssertEqual(next.recording.chunkDurationMs, 1500, "in effect after a restart")
    }

    func testServerIsChangedOnlyWithTheTokenToAnAddressAndKeptForTheNextStart() throws {
        let session = try login()
        let cookie = ["-H", "Cookie: \(session.cookie)"], token = ["-H", "X-CSRF-Token: \(session.csrf)"]
        let read = try request("/api/v1/server", cookie)
        XCTAssertEqual(read.status, 200, read.text)
        XCTAssertEqual(read.json()["host"] as? String, "")
        XCTAssertEqual(read.json()["state"] as? String, "none", "no host, no discovery: no link")
        func patch(_ body: String, _ extra: [String]) throws -> Answer {
            try request("/api/v1/server", ["-X", "PATCH", "-H", "Content-Type: application/json", "--data", body] + cookie + extra)
        }
        XCTAssertEqual(try patch(#"{"host":"127.0.0.1:9"}"#, []).status, 403, "a change needs the CSRF token")
        for (body, field) in [(#"{"host":"ftp://x:1"}"#, "host"), (#"{"host":"box:99999"}"#, "host"), (#"{"host":7}"#, "host"),
                              (#"{"verify_tls":"yes"}"#, "verify_tls"), (#"{"discovery":1}"#, "discovery"), (#"{"port":1}"#, "port")] {
            let refused = try patch(body, token)
            XCTAssertEqual(refused.status, 422, "\(body): \(refused.text)")
            XCTAssertEqual((refused.json()["error"] as? [String: Any])?["field"] as? String, field, body)
        }
        XCTAssertNil(service.link, "a refused change changes nothing")
        XCTAssertNil(ServerLinkStore(storageDirectory: service.configuration.recording.storageDirectory).load())

        let changed = try patch(#"{"host":"127.0.0.1:9","verify_tls":false}"#, token)
        XCTAssertEqual(changed.status, 200, changed.text)
        XCTAssertEqual(changed.json()["host"] as? String, "127.0.0.1:9")
        XCTAssertEqual(changed.json()["verify_tls"] as? Bool, false)
        XCTAssertNotNil(service.link, "a link to the new host")
        let next = try ServiceSettings(configFile: fixture.configFile).load(logger: .init(label: "test"))
        XCTAssertEqual(next.server.host, "127.0.0.1:9", "kept for the next start, over the file")
        XCTAssertEqual(next.server.verifyTLS, false)

        // The page's Disconnect: no host and no discovery (discovery would connect again to a server it finds).
        let disconnected = try patch(#"{"host":"","discovery":false}"#, token)
        XCTAssertEqual(disconnected.json()["state"] as? String, "none", "disconnected: no link")
        XCTAssertEqual(disconnected.json()["discovery"] as? Bool, false)
        XCTAssertNil(service.link)
        XCTAssertNil(service.discovery, "discovery off")
        let after = try ServiceSettings(configFile: fixture.configFile).load(logger: .init(label: "test")).server
        XCTAssertEqual(after.host, "")
        XCTAssertEqual(after.discovery, false, "kept for the next start")
    }

    func testMetricsAndHealthSayWhatTheRecorderDoes() throws {
        let metrics = try request("/metrics", ["-u", "admin:\(password)"])
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.text.contains("allspark_recording 1"), metrics.text)
        let chunks = service.recorder?.catalog.all.count ?? 0
        XCTAssertTrue(metrics.text.contains("allspark_storage_chunks \(Double(chunks))") || metrics.text.contains("allspark_storage_chunks \(Double(chunks + 1))"), metrics.text)
        let health = try request("/healthz")
        XCTAssertEqual(health.json()["status"] as? String, "ok")
    }
}
