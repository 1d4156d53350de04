import XCTest
import Console
import Foundation
import GLibSupport
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport
import ServerLink

/// The API's contract: the OpenAPI document the console serves is checked
/// as a document, and real answers of a recording service (over curl) are
/// checked against the schema of their operation and status.
final class ConsoleContractTests: XCTestCase {
    var fixture: ConsoleFixture!
    /// Outlives the service in tearDown, so the link ends by stopping, not by losing its server.
    var allSpark: AllSparkTestServer?
    var service: RecorderService { fixture.service }
    var auth: [String] { ["-u", "admin:\(fixture.password)"] }

    /// Starts the service and console; waits for `chunks` finished chunks.
    func start(server: String = "", serverConfig: String = "", chunks: Int = 2) throws {
        fixture = try ConsoleFixture(server: server, serverConfig: serverConfig)
        XCTAssertTrue(waitOnMainLoop(15) { (self.service.recorder?.catalog.all.count ?? 0) >= chunks }, "chunks to look at")
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
        allSpark = nil
    }

    func request(_ path: String, _ arguments: [String] = [], endless: Bool = false) throws -> ConsoleAnswer {
        try consoleRequest(fixture.base, path, arguments, endless: endless)
    }

    func contract() throws -> OpenAPIContract {
        let answer = try request("/api/v1/openapi.json", auth)
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.headers["content-type"], "application/json")
        return try OpenAPIContract(answer.body)
    }

    /// Asks, expects `status`, and checks the answer against the document.
    @discardableResult
    func check(_ contract: OpenAPIContract, _ method: String, _ path: String, _ arguments: [String] = [], expect status: Int,
               endless: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> ConsoleAnswer {
        let answer = try request(path, ["-X", method] + arguments, endless: endless)
        XCTAssertEqual(answer.status, status, "\(method) \(path): \(answer.text)", file: file, line: line)
        let problems = contract.problems(method: method, path: path, status: answer.status,
                                         contentType: answer.headers["content-type"], body: answer.body)
        XCTAssertEqual(problems, [], "\(method) \(path) \(answer.status) does not follow the document: \(answer.text.prefix(2000))", file: file, line: line)
        return answer
    }

    static func iso(_ seconds: Double) -> String { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds)) }

    func testTheDocumentIsOpenAPIAndDescribesEveryRoute() throws {
        try start()
        XCTAssertEqual(try request("/api/v1/openapi.json").status, 401, "served with a password, like every route but /healthz")
        let contract = try contract()
        XCTAssertEqual(contract.documentProblems(), [])
        // Every route of Console.respond(to:), with the statuses it can answer.
        let routes: [(String, String, [Int])] = [
            ("GET", "/healthz", [200, 503]),
            ("POST", "/api/v1/login", [200, 400, 401, 403, 429]),
            ("POST", "/api/v1/logout", [204, 401, 403]),
            ("GET", "/api/v1/session", [200, 401]),
            ("GET", "/api/v1/status", [200, 401, 429]),
            ("GET", "/api/v1/chunks", [200, 401, 422]),
            ("GET", "/api/v1/chunks/{name}", [200, 206, 401, 404, 410, 416]),
            ("HEAD", "/api/v1/chunks/{name}", [200, 206, 404, 416]),
            ("GET", "/api/v1/settings", [200, 401]),
            ("HEAD", "/api/v1/settings", [200]),
            ("PATCH", "/api/v1/settings", [200, 400, 401, 403, 409, 422, 428, 503]),
            ("GET", "/api/v1/uploads", [200, 401, 409]),
            ("POST", "/api/v1/uploads", [202, 400, 401, 403, 409, 422]),
            ("GET", "/api/v1/server", [200, 401]),
            ("PATCH", "/api/v1/server", [200, 400, 401, 403, 422, 503]),
            ("GET", "/api/v1/servers", [200, 401]),
            ("GET", "/api/v1/preview.mjpeg", [200, 401, 503]),
            ("GET", "/api/v1/snapshot.jpg", [200, 401, 503]),
            ("GET", "/api/v1/thumbnail.jpg", [200, 401, 404, 410, 422, 500, 503]),
            ("GET", "/api/v1/export.mp4", [200, 401, 404, 422, 500, 503, 507]),
            ("GET", "/api/v1/logs", [200, 401, 422]),
            ("GET", "/favicon.ico", [200]),
            ("POST", "/api/v1/password", [204, 400, 401, 403, 422, 429]),
            ("GET", "/api/v1/pipeline", [200, 401]),
            ("GET", "/metrics", [200, 401]),
            ("GET", "/api/v1/openapi.json", [200, 401]),
        ]
        for (method, path, statuses) in routes {
            let operation = contract.document["paths"]?[path]?[method.lowercased()]
            XCTAssertNotNil(operation, "\(method) \(path) is described")
            for status in statuses {
                XCTAssertNotNil(operation?["responses"]?[String(status)], "\(method) \(path) lists \(status)")
            }
        }
        let schemes = contract.document["components"]?["securitySchemes"]
        XCTAssertEqual(schemes?["sessionCookie"]?["in"], .string("cookie"))
        XCTAssertEqual(schemes?["csrfToken"]?["name"], .string("X-CSRF-Token"))
        XCTAssertEqual(schemes?["basic"]?["scheme"], .string("basic"))
        XCTAssertEqual(schemes?["bearer"]?["scheme"], .string("bearer"))
        XCTAssertEqual(contract.document["paths"]?["/healthz"]?["get"]?["security"], .array([]), "health is open")
    }

    func testRealAnswersFollowTheDocument() throws {
        try start()
        let contract = try contract()
        try check(contract, "GET", "/healthz", expect: 200)
        try check(contract, "GET", "/api/v1/status", expect: 401)
        try check(contract, "POST", "/api/v1/login", ["--data", #"{"password":"wrong"}"#], expect: 401)
        try check(contract, "POST", "/api/v1/login", ["--data", "not json"], expect: 400)
        let login = try check(contract, "POST", "/api/v1/login", ["--data", #"{"password":"\#(fixture.password)"}"#], expect: 200)
        let cookie = String((login.headers["set-cookie"] ?? "").split(separator: ";")[0])
        let csrf = login.json()["csrf_token"] as? String ?? ""
        try check(contract, "GET", "/api/v1/session", ["-H", "Cookie: \(cookie)"], expect: 200)

        let status = try check(contract, "GET", "/api/v1/status", auth, expect: 200)
        XCTAssertNotNil((status.json()["storage"] as? [String: Any])?["oldest"], "the optional fields were there to check")
        let list = try check(contract, "GET", "/api/v1/chunks?from=-3600", auth, expect: 200)
        XCTAssertFalse((list.json()["chunks"] as? [Any] ?? []).isEmpty)
        try check(contract, "GET", "/api/v1/chunks?from=yesterday", auth, expect: 422)
        let first = try XCTUnwrap(service.recorder?.catalog.all.first)
        try check(contract, "GET", "/api/v1/chunks/\(first.file)", auth, expect: 200)
        try check(contract, "GET", "/api/v1/chunks/\(first.file)", auth + ["-H", "Range: bytes=0-99"], expect: 206)
        try check(contract, "GET", "/api/v1/chunks/\(first.file)", auth + ["-H", "Range: bytes=999999999-"], expect: 416)
        try check(contract, "GET", "/api/v1/chunks/nothing.mp4", auth, expect: 404)

        let settings = try check(contract, "GET", "/api/v1/settings", auth, expect: 200)
        let etag = try XCTUnwrap(settings.headers["etag"])
        let patch = auth + ["-H", "Content-Type: application/json"]
        try check(contract, "PATCH", "/api/v1/settings", patch + ["--data", #"{"video_format":"mov"}"#], expect: 428)
        try check(contract, "PATCH", "/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"avi"}"#], expect: 422)
        try check(contract, "PATCH", "/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"mov"}"#], expect: 200)
        try check(contract, "PATCH", "/api/v1/settings", patch + ["-H", "If-Match: \(etag)", "--data", #"{"video_format":"mp4"}"#], expect: 409)

        // No server in this configuration: the queue has nothing to show.
        let queue = try check(contract, "GET", "/api/v1/uploads", auth, expect: 409)
        XCTAssertEqual((queue.json()["error"] as? [String: Any])?["code"] as? String, "no_server")
        try check(contract, "POST", "/api/v1/uploads", auth + ["--data", #"{"from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:01:00Z"}"#], expect: 409)
        try check(contract, "POST", "/api/v1/uploads", ["-H", "Cookie: \(cookie)", "--data", "{}"], expect: 403)
        try check(contract, "GET", "/api/v1/servers", auth, expect: 200)
        try check(contract, "GET", "/api/v1/server", auth, expect: 200)
        try check(contract, "PATCH", "/api/v1/server", auth + ["--data", #"{"discovery":"on"}"#], expect: 422)
        try check(contract, "PATCH", "/api/v1/server", auth + ["--data", "[]"], expect: 400)
        try check(contract, "PATCH", "/api/v1/server", auth + ["--data", #"{"host":"","discovery":false}"#], expect: 200)
        try check(contract, "GET", "/metrics", auth, expect: 200)
        try check(contract, "GET", "/api/v1/snapshot.jpg", auth, expect: 200)
        try check(contract, "GET", "/api/v1/thumbnail.jpg?t=\(first.start + 0.2)&width=96", auth, expect: 200)
        try check(contract, "GET", "/api/v1/thumbnail.jpg?t=soon", auth, expect: 422)
        try check(contract, "GET", "/api/v1/thumbnail.jpg?t=1000", auth, expect: 200)   // before the first chunk: its first picture
        let range = try check(contract, "GET", "/api/v1/export.mp4?from=\(first.start)&to=\(first.end)", auth, expect: 200)
        XCTAssertGreaterThan(range.body.count, 1000)
        try check(contract, "GET", "/api/v1/export.mp4?from=1000&to=1001", auth, expect: 404)
        try check(contract, "GET", "/api/v1/export.mp4?from=-1&to=-2", auth, expect: 422)
        let logs = try check(contract, "GET", "/api/v1/logs?level=info&limit=5", auth, expect: 200)
        XCTAssertNotNil(logs.json()["last"])
        try check(contract, "GET", "/api/v1/logs?level=shouting", auth, expect: 422)
        try check(contract, "GET", "/favicon.ico", expect: 200)
        let pipeline = try check(contract, "GET", "/api/v1/pipeline", auth, expect: 200)
        XCTAssertEqual(pipeline.json()["ok"] as? Bool, true, pipeline.text)
        try check(contract, "POST", "/api/v1/password", auth + ["--data", #"{"old":"not it","new":"long enough"}"#], expect: 403)
        try check(contract, "POST", "/api/v1/password", auth + ["--data", #"{"old":"\#(fixture.password)","new":"short"}"#], expect: 422)
        try check(contract, "POST", "/api/v1/password", auth + ["--data", "[1]"], expect: 400)
        try check(contract, "POST", "/api/v1/logout", ["-H", "Cookie: \(cookie)", "-H", "X-CSRF-Token: \(csrf)"], expect: 204)

        // The live stream, cut by the client after 2 s: parts of the documented boundary, each a JPEG.
        let stream = try check(contract, "GET", "/api/v1/preview.mjpeg", auth + ["--max-time", "2"], expect: 200, endless: true)
        XCTAssertTrue(stream.headers["content-type"]?.contains("boundary=allsparkframe") == true, "\(stream.headers)")
        XCTAssertTrue(stream.text.hasPrefix("--allsparkframe\r\nContent-Type: image/jpeg\r\n"), String(stream.text.prefix(80)))
        XCTAssertGreaterThan(stream.text.components(separatedBy: "--allsparkframe").count, 2, "more than one picture in 2 s")

        // A catalogued chunk whose file went away (removed behind the recorder's back).
        let lost = try XCTUnwrap(service.recorder?.catalog.all.last)
        try FileManager.default.removeItem(at: fixture.storage.file("chunks").appendingPathComponent(lost.file))
        try check(contract, "GET", "/api/v1/chunks/\(lost.file)", auth, expect: 410)

        // Not recording any more: health, the picture and the stream say so.
        var stopped = false
        service.stop(reason: "test") { stopped = true }
        XCTAssertTrue(waitOnMainLoop(20) { stopped })
        try check(contract, "GET", "/healthz", expect: 503)
        try check(contract, "GET", "/api/v1/snapshot.jpg", auth, expect: 503)
        try check(contract, "GET", "/api/v1/preview.mjpeg", auth, expect: 503)

        // Failed logins until the address is made to wait.
        var throttled: ConsoleAnswer?
        for _ in 0..<6 where throttled == nil {
            let answer = try request("/api/v1/login", ["-X", "POST", "--data", #"{"password":"wrong"}"#])
            if answer.status == 429 { throttled = answer }
        }
        let waitAnswer = try XCTUnwrap(throttled, "failed logins are slowed down")
        XCTAssertEqual(contract.problems(method: "POST", path: "/api/v1/login", status: 429,
                                         contentType: waitAnswer.headers["content-type"], body: waitAnswer.body), [])
        XCTAssertNotNil(Int(waitAnswer.headers["retry-after"] ?? ""), "\(waitAnswer.headers)")
        // Scripts too, with any other password (a header already proven right stays let in: it needs no guess).
        try check(contract, "GET", "/api/v1/status", ["-u", "admin:another guess"], expect: 429)
    }

    /// The checks can fail: wrong shapes and a broken document are caught.
    func testTheCheckerRejectsWhatDoesNotFollowTheDocument() throws {
        try start()
        let contract = try contract()
        let status = try request("/api/v1/status", auth)
        XCTAssertEqual(contract.problems(method: "GET", path: "/api/v1/status", status: 200, contentType: "application/json", body: status.body), [])
        func problems(_ change: (inout [String: Any]) -> Void) throws -> [String] {
            var object = status.json()
            change(&object)
            let body = try JSONSerialization.data(withJSONObject: object)
            return contract.problems(method: "GET", path: "/api/v1/status", status: 200, contentType: "application/json", body: body)
        }
        XCTAssertFalse(try problems { $0["recording"] = nil }.isEmpty, "a required field missing")
        XCTAssertFalse(try problems { $0["device"] = 7 }.isEmpty, "a number for a string")
        XCTAssertFalse(try problems { $0["time"] = "yesterday" }.isEmpty, "not a date-time")
        XCTAssertFalse(try problems { $0["undocumented"] = true }.isEmpty, "a field the document does not have")
        XCTAssertFalse(try problems { $0["server"] = ["state": "sleeping"] }.isEmpty, "a value outside the enum")
        XCTAssertFalse(try problems { $0["storage"] = ["path": "/x", "chunks": 1.5, "bytes": 1, "buffer_max_bytes": 1] }.isEmpty, "a fraction for an integer")
        XCTAssertFalse(contract.problems(method: "GET", path: "/api/v1/status", status: 200, contentType: "text/html", body: status.body).isEmpty,
                       "the wrong content type")
        XCTAssertFalse(contract.problems(method: "GET", path: "/api/v1/status", status: 418, contentType: "application/json", body: status.body).isEmpty,
                       "a status the operation does not list")
        XCTAssertFalse(contract.problems(method: "DELETE", path: "/api/v1/status", status: 200, contentType: "application/json", body: status.body).isEmpty,
                       "an operation the document does not have")
        let boolean = try OpenAPIContract(Data(#"{"openapi":"3.0.3"}"#.utf8))
        XCTAssertFalse(boolean.problems(in: .number(1), against: .object(["type": .string("boolean")])).isEmpty, "1 is not true")

        // A broken document: a $ref to nothing, a response without a description, a path parameter not declared.
        var broken = try XCTUnwrap(contract.document.object)
        var paths = try XCTUnwrap(broken["paths"]?.object)
        paths["/api/v1/things/{id}"] = .object(["get": .object(["responses": .object([
            "200": .object(["content": .object(["application/json": .object(["schema": .object(["$ref": .string("#/components/schemas/Nothing")])])])]),
        ])])])
        broken["paths"] = .object(paths)
        let brokenProblems = OpenAPIContract(.object(broken)).documentProblems()
        XCTAssertTrue(brokenProblems.contains { $0.contains("#/components/schemas/Nothing") }, "\(brokenProblems)")
        XCTAssertTrue(brokenProblems.contains { $0.contains("no description") }, "\(brokenProblems)")
        XCTAssertTrue(brokenProblems.contains { $0.contains("path parameters") }, "\(brokenProblems)")
    }

    /// The queue as the server link holds it: uploads that ended (one the
    /// server refused, the others received), then one in flight that the
    /// server does not answer, the chunks waiting behind it, and a range
    /// still being recorded.
    func testTheUploadQueueShowsWhatIsSentWaitingWatchedAndDone() throws {
        let server = try AllSparkTestServer()
        server.autoUpload = false   // only what the console asks for
        allSpark = server
        try start(server: "ws://\(server.address)", serverConfig: "upload_attempts = 1", chunks: 5)
        let link = try XCTUnwrap(service.link)
        XCTAssertTrue(waitOnMainLoop(10) { link.state == .connected(.ws) }, "connected: \(link.state)")
        let contract = try contract()
        let chunks = try XCTUnwrap(service.recorder?.catalog.all)
        // Whole seconds inside the first and the second chunk (the API takes ISO 8601 without fractions).
        let from = chunks[0].start.rounded(.up), to = chunks[1].end.rounded(.down)
        let expected = try XCTUnwrap(service.recorder?.catalog.chunks(from: from, to: to)).map(\.file)
        XCTAssertGreaterThanOrEqual(expected.count, 2)
        server.refuseFilenames = [expected[0]]
        try check(contract, "POST", "/api/v1/uploads", auth + ["--data", #"{"from":"\#(Self.iso(from))","to":"\#(Self.iso(to))"}"#], expect: 202)
        XCTAssertTrue(waitOnMainLoop(20) { link.uploadQueue.finished.count == expected.count }, "\(link.uploadQueue)")

        let done = try check(contract, "GET", "/api/v1/uploads", auth, expect: 200).json()
        let finished = done["finished"] as? [[String: Any]] ?? []
        XCTAssertEqual(finished.compactMap { $0["name"] as? String }, Array(expected.reversed()), "newest first")
        let refused = try XCTUnwrap(finished.first { $0["name"] as? String == expected[0] })
        XCTAssertEqual(refused["ok"] as? Bool, false)
        XCTAssertTrue((refused["message"] as? String ?? "").contains("given up after 1 attempt"), "\(refused)")
        XCTAssertEqual(finished.filter { $0["ok"] as? Bool == true }.count, expected.count - 1)
        XCTAssertEqual(done["finished_ok_total"] as? Int, expected.count - 1)
        XCTAssertEqual(done["finished_failed_total"] as? Int, 1)
        XCTAssertEqual(Set(server.uploads.map(\.filename)), Set(expected.dropFirst()))
        let metrics = try request("/metrics", auth).text
        XCTAssertTrue(metrics.contains("allspark_uploads_finished_ok_total \(expected.count - 1)\n"), metrics)
        XCTAssertTrue(metrics.contains("allspark_uploads_finished_failed_total 1\n"), metrics)
        XCTAssertTrue(metrics.contains("allspark_uploads_waiting 0.0"), metrics)

        // From the third chunk into the future: sent one at a time, the first never answered.
        server.misbehaviour = .neverAnswerFiles
        let later = chunks[2].start.rounded(.up)
        let future = Date().timeIntervalSince1970.rounded(.up) + 60
        try check(contract, "POST", "/api/v1/uploads", auth + ["--data", #"{"from":"\#(Self.iso(later))","to":"\#(Self.iso(future))"}"#], expect: 202)
        XCTAssertTrue(waitOnMainLoop(10) { link.uploadQueue.inFlight != nil }, "\(link.uploadQueue)")
        let busy = try check(contract, "GET", "/api/v1/uploads", auth, expect: 200).json()
        let inFlight = try XCTUnwrap(busy["in_flight"] as? [String: Any])
        XCTAssertEqual(inFlight["reason"] as? String, "console request")
        XCTAssertEqual(inFlight["attempt"] as? Int, 1)
        let waiting = busy["waiting"] as? [[String: Any]] ?? []
        XCTAssertFalse(waiting.isEmpty, "the chunks after the one in flight wait: \(busy)")
        XCTAssertTrue(waiting.allSatisfy { $0["attempts"] as? Int == 0 }, "\(waiting)")
        XCTAssertFalse(waiting.contains { $0["name"] as? String == inFlight["name"] as? String })
        let watches = busy["watches"] as? [[String: Any]] ?? []
        XCTAssertEqual(watches.count, 1, "the range reaches past the chunk being written: \(busy)")
        XCTAssertEqual(OpenAPIContract.dateTime(watches.first?["to"] as? String ?? "")?.timeIntervalSince1970, future)
        XCTAssertEqual((busy["finished"] as? [Any])?.count, expected.count, "the history stays")
        // Chunks keep finishing into the watched range, so the count only grows from what the queue showed.
        let busyMetrics = try request("/metrics", auth).text
        let line = busyMetrics.split(separator: "\n").first { $0.hasPrefix("allspark_uploads_waiting ") }
        let count = line.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        XCTAssertGreaterThanOrEqual(count, Double(waiting.count + 1), busyMetrics)
    }
}
