import XCTest
import Console
import Foundation
import GLibSupport
import RecorderService
import RecorderTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 21: nothing a network client does can stop the recording. A real
/// console over a recording service, and clients on plain sockets that leave
/// in every way, hold connections, guess passwords from many addresses and
/// send bodies nobody asked for.
final class ConsoleRobustnessTests: XCTestCase {
    var fixture: ConsoleFixture!
    var client: RawHTTPClient { RawHTTPClient(port: fixture.console.port) }
    var basic: String { "Authorization: Basic " + Data("admin:\(fixture.password)".utf8).base64EncodedString() }

    override func setUpWithError() throws {
        fixture = try ConsoleFixture()
        XCTAssertTrue(waitOnMainLoop(10) { self.fixture.service.recorder?.state == .recording }, "recording")
    }

    override func tearDown() {
        fixture?.stop()
        fixture = nil
    }

    /// Open files once the server has closed what it should (the recorder's own files come and go a little).
    private func settledOpenFiles(atMost limit: Int) -> Int {
        waitOnMainLoop(15) { openFiles() <= limit }
        return openFiles()
    }

    func testConnectionsClosedInEveryWayLeaveTheOpenFilesWhereTheyStarted() throws {
        let client = self.client
        XCTAssertEqual(offLoop { () -> Int in
            guard let fd = client.connect() else { return 0 }
            defer { close(fd) }
            RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return RawHTTPClient.readAnswer(fd).status
        }, 200)
        let before = openFiles()
        let statuses = offLoop(90) { () -> [Int: Int] in
            var statuses: [Int: Int] = [:]
            for i in 0..<5000 {
                guard let fd = client.connect() else { statuses[-1, default: 0] += 1; continue }
                switch i % 4 {
                case 0:   // a whole answer, then FIN
                    RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    statuses[RawHTTPClient.readAnswer(fd).status, default: 0] += 1
                    close(fd)
                case 1:   // a whole answer, then RST
                    RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    statuses[RawHTTPClient.readAnswer(fd).status, default: 0] += 1
                    RawHTTPClient.reset(fd)
                case 2:   // gone in the middle of the head
                    RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHo")
                    close(fd)
                default:  // gone in the middle of the body
                    RawHTTPClient.send(fd, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pass")
                    close(fd)
                }
            }
            return statuses
        }
        XCTAssertEqual(statuses, [200: 2500], "every whole request was answered")
        let after = settledOpenFiles(atMost: before + 4)
        XCTAssertLessThanOrEqual(after, before + 4, "5000 connections left \(after - before) files open")
        XCTAssertEqual(fixture.service.recorder?.state, .recording)
    }

    func testConnectionsAreCappedPerAddressAndInTotalWithAClear503() throws {
        let client = self.client
        let limits = Console.limits
        var held: [Int32] = []
        defer { held.forEach { close($0) } }
        func answer(from source: String?) -> String {
            offLoop { () -> String in
                guard let fd = source.map({ client.connect(from: $0) }) ?? client.connect() else { return "no connection" }
                defer { close(fd) }
                let answer = RawHTTPClient.readAnswer(fd)
                return "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))"
            } ?? "no answer"
        }
        // Idle connections (nothing sent) count as much as busy ones. The server accepts them in
        // its own time: each step waits until it holds them all, not for a fixed while.
        held += offLoop { (0..<limits.maximumConnectionsPerAddress).compactMap { _ in client.connect() } } ?? []
        XCTAssertTrue(waitOnMainLoop(20) { self.fixture.console.openConnections >= held.count }, "accepted: \(fixture.console.openConnections)")
        let perAddress = answer(from: nil)
        var source = 2
        while held.count < limits.maximumConnections {
            let count = min(limits.maximumConnectionsPerAddress, limits.maximumConnections - held.count)
            let address = "127.0.0.\(source)"
            held += offLoop { (0..<count).compactMap { _ in client.connect(from: address) } } ?? []
            source += 1
        }
        XCTAssertTrue(waitOnMainLoop(20) { self.fixture.console.openConnections >= held.count }, "accepted: \(fixture.console.openConnections)")
        let total = answer(from: "127.0.0.\(source + 1)")
        held.forEach { close($0) }
        held = []
        XCTAssertTrue(waitOnMainLoop(20) { self.fixture.console.openConnections == 0 }, "closed: \(fixture.console.openConnections)")
        let afterwards = offLoop { () -> Int in
            guard let fd = client.connect() else { return 0 }
            defer { close(fd) }
            RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            return RawHTTPClient.readAnswer(fd).status
        }
        XCTAssertTrue(perAddress.hasPrefix("503 ") && perAddress.contains("too many connections from 127.0.0.1"), perAddress)
        XCTAssertTrue(total.hasPrefix("503 ") && total.contains("at most \(limits.maximumConnections)"), total)
        XCTAssertEqual(afterwards, 200, "once they are closed, the console answers again")
    }

    func testHeadsAndBodiesThatNeverEndAreCut() throws {
        let client = self.client
        let cut = offLoop(60) { () -> [Bool] in
            guard let silent = client.connect(from: nil, receiveTimeout: 45), let head = client.connect(from: nil, receiveTimeout: 45),
                  let body = client.connect(from: nil, receiveTimeout: 45) else { return [Bool]() }
            defer { [silent, head, body].forEach { close($0) } }
            RawHTTPClient.send(head, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
            RawHTTPClient.send(body, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"pass")
            return [silent, head, body].map { RawHTTPClient.seesEnd($0) }
        }
        XCTAssertEqual(cut, [true, true, true], "the server closes a silent connection, an endless head and an endless body")
    }

    func testAnUnauthenticatedHugeBodyIsRefusedFromItsHeadWithoutBeingRead() throws {
        let client = self.client
        let rssBefore = residentBytes()
        let huge = 200 * 1024 * 1024
        let outcome = offLoop { () -> (status: Int, sent: Int) in
            guard let fd = client.connect() else { return (0, 0) }
            defer { close(fd) }
            RawHTTPClient.send(fd, "PATCH /api/v1/settings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(huge)\r\n\r\n")
            // Like curl: keep sending until the answer comes (or the server stops taking the body).
            let piece = Data(repeating: 0x20, count: 64 * 1024)
            var sent = 0
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while sent < huge {
                if poll(&poller, 1, 0) > 0 { break }
                guard RawHTTPClient.send(fd, piece) else { break }
                sent += piece.count
            }
            return (RawHTTPClient.readAnswer(fd).status, sent)
        }
        let result = try XCTUnwrap(outcome)
        XCTAssertEqual(result.status, 401)
        XCTAssertLessThan(result.sent, huge / 4, "the answer came long before the body was all sent")
        XCTAssertLessThan(residentBytes() - rssBefore, 64 * 1024 * 1024, "the body was not kept")
    }

    func testAnAuthenticatedOversizedJSONBodyIs413AndAChunkedOne411() throws {
        let big = "{\"chunk_duration_ms\": 2000, \"pad\": \"" + String(repeating: "x", count: 40 * 1024) + "\"}"
        let file = fixture.storage.file("big.json")
        try big.write(to: file, atomically: true, encoding: .utf8)
        let answer = try consoleRequest(fixture.base, "/api/v1/settings", ["-u", "admin:\(fixture.password)", "-X", "PATCH",
                                                                           "-H", "If-Match: *", "-H", "Content-Type: application/json",
                                                                           "--data-binary", "@\(file.path)"])
        XCTAssertEqual(answer.status, 413, answer.text)
        XCTAssertEqual((answer.json()["error"] as? [String: Any])?["code"] as? String, "too_large")
        let chunked = try consoleRequest(fixture.base, "/api/v1/settings", ["-u", "admin:\(fixture.password)", "-X", "PATCH",
                                                                            "-H", "If-Match: *", "-H", "Transfer-Encoding: chunked",
                                                                            "--data-binary", "{}"])
        XCTAssertEqual(chunked.status, 411, chunked.text)
        let small = try consoleRequest(fixture.base, "/api/v1/settings", ["-u", "admin:\(fixture.password)", "-X", "PATCH",
                                                                          "-H", "If-Match: *", "--data-binary", "{\"chunk_duration_ms\": 2000}"])
        XCTAssertEqual(small.status, 200, "a body within the limit goes through: \(small.text)")
    }

    func testPasswordChecksRunOffTheLoopAndAGlobalLimitStopsGuessesFromManyAddresses() throws {
        let client = self.client
        let wrong = "Authorization: Basic " + Data("admin:not the password".utf8).base64EncodedString()
        // Guesses from 60 addresses (three each would pass every per-address limit), healthz asked in between.
        let outcome = offLoop(120) { () -> (guesses: [Int: Int], health: [Int: Int]) in
            var guesses: [Int: Int] = [:], health: [Int: Int] = [:]
            let group = DispatchGroup()
            let lock = NSLock()
            for batch in 0..<6 {
                for address in (batch * 10 + 10)..<(batch * 10 + 20) {
                    group.enter()
                    DispatchQueue.global().async {
                        defer { group.leave() }
                        guard let fd = client.connect(from: "127.0.0.\(address)", receiveTimeout: 60) else { return }
                        defer { close(fd) }
                        RawHTTPClient.send(fd, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\(wrong)\r\n\r\n")
                        let status = RawHTTPClient.readAnswer(fd).status
                        lock.lock(); guesses[status, default: 0] += 1; lock.unlock()
                    }
                }
                // While those wait for PBKDF2, the loop still answers.
                if let fd = client.connect() {
                    RawHTTPClient.send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    health[RawHTTPClient.readAnswer(fd).status, default: 0] += 1
                    close(fd)
                }
                group.wait()
            }
            return (guesses, health)
        }
        let result = try XCTUnwrap(outcome)
        XCTAssertEqual(result.health, [200: 6], "health answered while passwords were checked")
        XCTAssertEqual(result.guesses.values.reduce(0, +), 60)
        XCTAssertLessThanOrEqual(result.guesses[401] ?? 0, 20 + 8, "at most the global limit (plus checks already running) were tried: \(result.guesses)")
        XCTAssertGreaterThan(result.guesses[429] ?? 0, 20, "the rest waits: \(result.guesses)")
        // The right password waits too, from a fresh address, until the minute is over...
        let right = offLoop { () -> Int in
            guard let fd = client.connect(from: "127.0.0.99") else { return 0 }
            defer { close(fd) }
            RawHTTPClient.send(fd, "GET /api/v1/status HTTP/1.1\r\nHost: x\r\n\(self.basic)\r\n\r\n")
            return RawHTTPClient.readAnswer(fd).status
        }
        XCTAssertEqual(right, 429)
    }

    func testRangesFollowRFC9110AndDownloadsCarryValidators() throws {
        XCTAssertTrue(waitOnMainLoop(10) { (self.fixture.service.recorder?.catalog.all.count ?? 0) >= 1 }, "a chunk")
        let catalog = try XCTUnwrap(fixture.service.recorder?.catalog)
        let first = try XCTUnwrap(catalog.all.first)
        let local = try Data(contentsOf: catalog.url(of: first))
        let path = "/api/v1/chunks/\(first.file)"
        let auth = ["-u", "admin:\(fixture.password)"]
        let whole = try consoleRequest(fixture.base, path, auth)
        let etag = try XCTUnwrap(whole.headers["etag"])
        let lastModified = try XCTUnwrap(whole.headers["last-modified"])
        XCTAssertTrue(lastModified.hasSuffix(" GMT"), lastModified)
        for ignored in ["bytes=0-9,20-29", "bytes=abc", "items=0-9", "bytes=9-2"] {
            let answer = try consoleRequest(fixture.base, path, auth + ["-H", "Range: \(ignored)"])
            XCTAssertEqual(answer.status, 200, "\(ignored) is ignored: the whole file")
            XCTAssertEqual(answer.body, local)
        }
        XCTAssertEqual(try consoleRequest(fixture.base, path, auth + ["-H", "Range: bytes=\(local.count)-"]).status, 416)
        let matching = try consoleRequest(fixture.base, path, auth + ["-H", "Range: bytes=0-9", "-H", "If-Range: \(etag)"])
        XCTAssertEqual(matching.status, 206)
        XCTAssertEqual(matching.body, local.prefix(10))
        let byDate = try consoleRequest(fixture.base, path, auth + ["-H", "Range: bytes=0-9", "-H", "If-Range: \(lastModified)"])
        XCTAssertEqual(byDate.status, 206)
        let stale = try consoleRequest(fixture.base, path, auth + ["-H", "Range: bytes=0-9", "-H", "If-Range: \"other\""])
        XCTAssertEqual(stale.status, 200, "another version: the whole file")
        XCTAssertEqual(stale.body, local)
    }

    func testTheOriginMustMatchSchemeHostAndPort() throws {
        let port = fixture.console.port
        let change = ["-u", "admin:\(fixture.password)", "-X", "PATCH", "-H", "If-Match: *", "--data-binary", "{\"chunk_duration_ms\": 2000}"]
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/settings", change + ["-H", "Origin: http://127.0.0.1:\(port)"]).status, 200)
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/settings", change + ["-H", "Origin: https://127.0.0.1:\(port)"]).status, 403,
                       "another scheme is another origin")
        XCTAssertEqual(try consoleRequest(fixture.base, "/api/v1/settings", change + ["-H", "Origin: http://127.0.0.1:\(port + 1)"]).status, 403)
    }

    func testAnEleventhViewerIsToldWhy() throws {
        let client = self.client
        let basic = self.basic
        let outcome = offLoop { () -> (viewers: [Int], eleventh: String) in
            var viewers: [Int32] = []
            defer { viewers.forEach { close($0) } }
            var statuses: [Int] = []
            for _ in 0..<10 {
                guard let fd = client.connect() else { continue }
                RawHTTPClient.send(fd, "GET /api/v1/preview.mjpeg HTTP/1.1\r\nHost: x\r\n\(basic)\r\n\r\n")
                statuses.append(RawHTTPClient.readStreamStatus(fd))
                viewers.append(fd)
            }
            guard let fd = client.connect() else { return (statuses, "") }
            defer { close(fd) }
            RawHTTPClient.send(fd, "GET /api/v1/preview.mjpeg HTTP/1.1\r\nHost: x\r\n\(basic)\r\n\r\n")
            let answer = RawHTTPClient.readAnswer(fd)
            return (statuses, "\(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        let result = try XCTUnwrap(outcome)
        XCTAssertEqual(result.viewers, Array(repeating: 200, count: 10))
        XCTAssertTrue(result.eleventh.hasPrefix("503 ") && result.eleventh.contains("too_many_viewers") && result.eleventh.contains("at most 10"),
                      result.eleventh)
    }

    /// Handlers set a stream's `onClose` for themselves (the preview stops watching, a
    /// snapshot finishes): the server must still let go of every stream once its client left.
    func testViewersAndSnapshotsThatLeaveAreLetGo() throws {
        let client = self.client
        let basic = self.basic
        let statuses = offLoop { () -> [Int] in
            var statuses: [Int] = []
            for _ in 0..<5 {
                guard let fd = client.connect() else { continue }
                RawHTTPClient.send(fd, "GET /api/v1/preview.mjpeg HTTP/1.1\r\nHost: x\r\n\(basic)\r\n\r\n")
                statuses.append(RawHTTPClient.readStreamStatus(fd))
                close(fd)
                guard let snap = client.connect() else { continue }
                RawHTTPClient.send(snap, "GET /api/v1/snapshot.jpg HTTP/1.1\r\nHost: x\r\n\(basic)\r\n\r\n")
                statuses.append(RawHTTPClient.readAnswer(snap).status)
                close(snap)
            }
            return statuses
        }
        XCTAssertEqual(statuses, Array(repeating: 200, count: 10))
        XCTAssertTrue(waitOnMainLoop(10) { self.fixture.console.answersInProgress == 0 },
                      "streams still held: \(fixture.console.answersInProgress)")
    }
}

/// The units' open-file limit leaves the recorder room whatever the console holds.
final class ConsoleFileLimitTests: XCTestCase {
    func testBothUnitsSetLimitNOFILEAboveTheConsolesCapsAndTheRecordersOwnFiles() throws {
        for unit in ["packaging/allspark-recorder.service", "packaging/allspark-recorder@.service"] {
            let text = try String(contentsOfFile: repoPath(unit), encoding: .utf8)
            let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("LimitNOFILE=") }, "\(unit) sets LimitNOFILE")
            let limit = try XCTUnwrap(Int(line.dropFirst("LimitNOFILE=".count)))
            // The recorder's own files (about 60 in the soak) with room to spare for uploads and companions.
            XCTAssertGreaterThanOrEqual(limit, Console.limits.maximumDescriptors + 256, unit)
        }
    }
}

