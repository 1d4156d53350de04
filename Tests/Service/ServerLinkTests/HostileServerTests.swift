import AllSparkProtocol
import XCTest
import GLibSupport
import Logging
import RecorderCore
import RecorderTestSupport
import ServerLinkTesting
import SoupSupport
@testable import Recorder
@testable import ServerLink

/// Fault injection: a faulty or hostile WebSocket peer drives the link
/// (the test server's `misbehaviour`, raw TCP peers for what a WebSocket
/// server cannot do), and every test checks what the box keeps, sends and
/// logs. Each reproduced a fault of issue 10 before it was fixed.
final class HostileServerTests: XCTestCase {
    // MARK: - Item 2: replies without ids

    /// The issue's server: a success after each upload metadata (which earns none) and an
    /// error after each file. Before: the refused chunks were logged as uploaded and then
    /// skipped for 10 minutes as "recently received".
    func testExtraRepliesNeverMarkARefusedChunkReceivedAndEverythingUnconfirmedIsSentAgain() throws {
        let server = try AllSparkTestServer()
        server.misbehaviour = [.extraSuccessAfterMetadata, .refuseEveryFile]
        let stored = try StoredChunks(count: 3)
        let log = LogCapture()
        let link = makeLink(server, stored, log: log, options: .init(attempts: 20, retryDelay: 0.1))
        var received: [String] = []
        link.onUploadFinished = { file, ok in if ok { received.append(file) } }
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(Date().timeIntervalSince1970)}"#)
        // The ledger notices, drops the connection and sends again on a new one.
        XCTAssertTrue(waitOnMainLoop(10) { server.clientNames.count >= 3 }, "reconnected after replies that fit nothing")
        XCTAssertEqual(received, [], "nothing the server refused is reported received")
        XCTAssertFalse(log.contains("uploaded chunk_"), "no refused chunk is logged as uploaded")
        XCTAssertTrue(log.contains("no longer fit what was sent"), log.text)
        XCTAssertTrue(log.contains("the recorder closes the connection (1002)"), log.text)
        XCTAssertTrue(stored.catalog.all.allSatisfy { stored.catalog.isPinned($0.file) }, "still pinned: not received")

        // The server mends its ways: every chunk arrives, each once, byte for byte.
        server.misbehaviour = []
        XCTAssertTrue(waitOnMainLoop(10) { link.pendingUploads == 0 && server.uploads.count == 3 }, log.text)
        link.stop()
        XCTAssertEqual(Set(received), Set(stored.catalog.all.map(\.file)))
        for chunk in stored.catalog.all {
            XCTAssertEqual(server.uploadedData(chunk.file), try Data(contentsOf: stored.catalog.url(of: chunk)))
        }
        XCTAssertFalse(stored.catalog.all.contains { stored.catalog.isPinned($0.file) })
    }

    /// A server that swallows a file without a reply. Before: the queue stalled for good, nothing logged.
    func testAnUploadWithNoReplyIsSentAgainAfterABoundScaledToItsSize() throws {
        let server = try AllSparkTestServer()
        server.misbehaviour = [.neverAnswerFiles]
        let stored = try StoredChunks(count: 1)
        let log = LogCapture()
        let link = makeLink(server, stored, log: log,
                            options: .init(attempts: 5, retryDelay: 0.1, replyTimeout: 1, replyBytesPerSecond: 1_000_000))
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(Date().timeIntervalSince1970)}"#)
        XCTAssertTrue(waitOnMainLoop(2) { server.binaryMessages == 1 })
        server.misbehaviour = []
        XCTAssertTrue(waitOnMainLoop(8) { server.uploads.count == 1 && link.pendingUploads == 0 }, log.text)
        link.stop()
        XCTAssertTrue(log.contains("no reply to the upload of \(stored.catalog.all[0].file) within 1."), log.text)
        XCTAssertEqual(server.clientNames.count, 2, "sent again on a fresh connection")
    }

    // MARK: - Item 6: server text cannot forge log lines

    func testNothingTheServerSendsCanForgeOrFloodALogLine() throws {
        let server = try AllSparkTestServer()
        let stored = try StoredChunks(count: 1)
        let log = LogCapture()
        let link = makeLink(server, stored, log: log)
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        let forged = "\n2026-01-01T00:00:00+0000 critical allspark.server: [ServerLink] disk wiped\u{202E}"
        let json = { (s: String) in String(decoding: try! JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed]), as: UTF8.self).dropFirst().dropLast() }
        let socket = try XCTUnwrap(server.connections.last)
        for text in ["not json\(forged)",
                     #"{"command":\#(json("self\(forged)"))}"#,
                     #"{"type":\#(json("other\(forged)"))}"#,
                     #"{"command":"uploadTimeRange","startTime":0,"endTime":1,"message":\#(json(forged))}"#,
                     #"{"command":"record","message":\#(json(forged))}"#,
                     #"{"type":"clientConfig","config":{"videoFormat":\#(json("avi\(forged)")),\#(json("key\(forged)")):1}}"#,
                     String(repeating: "x", count: 60_000) + forged] {
            socket.send(text: text)
        }
        runMainLoop(seconds: 0.5)
        socket.close(code: 4000, reason: "bye\(forged)")
        XCTAssertTrue(waitOnMainLoop(5) { log.contains("closed the connection (4000") })
        link.stop()
        XCTAssertTrue(log.contains(#"\n2026-01-01T00:00:00+0000 critical"#), "the text is there, escaped: \(log.text)")
        XCTAssertTrue(log.contains(#"\u{202E}"#))
        XCTAssertTrue(log.contains("…(59"), "a long text is cut and says how much is left out")
        for line in log.lines {
            XCTAssertFalse(line.contains("\n") || line.contains("\r") || line.contains("\u{202E}"), "forged: \(line)")
            XCTAssertLessThan(line.count, 1000, "bounded: \(line.prefix(300))")
        }
    }

    // MARK: - Item 8: bounds on what a server may ask

    func testARangeYearsIntoTheFutureOnlyReachesTheBoxsBoundAndATinyBufferIsClamped() throws {
        let server = InMemoryAllSparkServer()
        server.clientConfig = #"{"type":"clientConfig","config":{"videoBufferMaxMB":1}}"#
        let stored = try StoredChunks(count: 1, now: server.clock.now)
        let store = ServerSettingsStore(storageDirectory: stored.folder.path)
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, deviceName: "box", announce: false,
                                   bounds: ServerBounds(maxRequestFutureSeconds: 3, minBufferMB: 100, maxBufferMB: 200),
                                   store: store, logger: log.logger)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) && stored.currentTuning.bufferMaxMB != 200 })
        XCTAssertEqual(stored.currentTuning.bufferMaxMB, 100, "clamped to server.min_buffer_mb, not 1 MB")
        XCTAssertEqual(store.load()?.tuning.bufferMaxMB, 100, "what is kept for the next start is the clamped value")
        XCTAssertTrue(log.contains("videoBufferMaxMB 1 is outside"), log.text)

        stored.isCapturing = true
        let now = server.clock.now.timeIntervalSince1970
        server.send(text: #"{"command":"uploadTimeRange","startTime":\#(now),"endTime":\#(now + 3 * 365 * 86_400)}"#)
        XCTAssertTrue(try server.record(4, into: stored, link: link))
        link.stop()
        XCTAssertTrue(log.contains("only the next 3.000 s are taken (server.max_request_future_s)"), log.text)
        let wanted = Set(stored.catalog.chunks(from: now, to: now + 3).map(\.file))
        XCTAssertFalse(wanted.isEmpty)
        XCTAssertFalse(stored.catalog.all.filter { $0.start > now + 3.5 }.isEmpty, "chunks were recorded after the bound")
        XCTAssertEqual(Set(server.uploads.map(\.filename)), wanted, "only the chunks within the bound left the box")
    }

    func testARecordCommandWithAHugeDurationIsClamped() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 1, now: server.clock.now)
        stored.isCapturing = true
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, deviceName: "box", announce: false,
                                   bounds: ServerBounds(maxRecordDurationSeconds: 2), logger: log.logger)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        let now = server.clock.now.timeIntervalSince1970
        server.send(text: #"{"command":"record","duration":1e9,"autoUpload":true}"#)
        XCTAssertTrue(try server.record(4, into: stored, link: link))
        link.stop()
        XCTAssertTrue(log.contains("only 2.000 s are taken (server.max_record_duration_s)"), log.text)
        let wanted = Set(stored.catalog.chunks(from: now, to: now + 2.2).map(\.file))
        XCTAssertFalse(stored.catalog.all.filter { $0.start > now + 3 }.isEmpty, "chunks were recorded after the bound")
        XCTAssertTrue(Set(server.uploads.map(\.filename)).isSubset(of: wanted), "\(server.uploads.map(\.filename)) ⊄ \(wanted)")
        XCTAssertFalse(server.uploads.isEmpty)
    }

    // MARK: - Item 10: one deadline for the whole handshake

    /// A peer that answers the upgrade one byte a second: every read is quick enough for the
    /// per-read timeout. Before: the link stayed `connecting` for as long as the peer liked.
    func testAServerTricklingItsHandshakeIsGivenUpAtOneDeadline() throws {
        let peer = try PythonPeer(#"""
            import socket, sys, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
            print(s.getsockname()[1], flush=True)
            c, _ = s.accept()
            c.recv(65536)
            for b in b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n":
                c.sendall(bytes([b])); time.sleep(1)
            """#)
        let log = LogCapture()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://127.0.0.1:\(peer.port)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 30, recorder: nil, logger: log.logger)
        var states: [ServerLink.State] = []
        link.onStateChange { states.append($0) }
        link.start()
        XCTAssertTrue(waitOnMainLoop(10) { states.last == .disconnected }, "still \(link.state) after 10 s")
        link.stop()
        XCTAssertTrue(log.contains("no WebSocket connection within 5 s (connect, TLS and HTTP upgrade together)"), log.text)
    }

    // MARK: - Item 11: why a connection ended

    /// A message over the size the recorder reads: libsoup closes the connection (1009). The
    /// log says the recorder closed it and why; before: "server … closed the connection (0)".
    func testAnOversizedMessageIsLoggedAsClosedByTheRecorderWithTheReason() throws {
        let server = try AllSparkTestServer()
        let log = LogCapture()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: nil, logger: log.logger)
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        // Over 64 KiB but within what is read: ignored, the connection stays.
        server.connections.last?.send(text: String(repeating: "a", count: 100_000))
        runMainLoop(seconds: 0.5)
        XCTAssertEqual(server.clientNames.count, 1)
        XCTAssertTrue(log.contains("larger than 65536; ignored"), log.text)
        server.connections.last?.send(text: String(repeating: "b", count: 300_000))
        XCTAssertTrue(waitOnMainLoop(5) { server.clientNames.count == 2 }, "reconnected")
        link.stop()
        XCTAssertTrue(log.contains("sent a message larger than 256 KiB, the most this recorder reads: the recorder closed the connection (1009"), log.text)
        XCTAssertFalse(log.contains("closed the connection (0)"), log.text)
    }

    /// A file that shrinks while it is sent: the frame cannot be finished. Before: a libsoup
    /// CRITICAL (a close frame queued behind half a frame). Now: no GLib warning, the connection
    /// is cut, and the chunk goes again on a fresh one.
    func testAFailedFileSendCutsTheConnectionCleanlyAndTheChunkGoesAgain() throws {
        let server = try AllSparkTestServer()
        let stored = try StoredChunks(count: 0)
        let start = Date().timeIntervalSince1970 - 100
        let big = ChunkRecord(file: "chunk_\(Int64(start * 1000)).mp4", start: start, end: start + 10, size: 64 << 20, format: .mp4)
        let url = stored.catalog.url(of: big)
        XCTAssertTrue(FileManager.default.createFile(atPath: url.path, contents: nil))
        try FileHandle(forWritingTo: url).truncate(atOffset: UInt64(big.size))
        stored.catalog.add(big)
        var truncated = false
        server.onUploadMetadata = { _ in
            guard !truncated else { return }
            truncated = true
            try? FileHandle(forWritingTo: url).truncate(atOffset: 1 << 20)
        }
        let log = LogCapture()
        let link = makeLink(server, stored, log: log)
        let warnings = GLibWarnings()
        defer { warnings.stop() }
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(Date().timeIntervalSince1970)}"#)
        XCTAssertTrue(waitOnMainLoop(15) { server.uploads.count == 1 && link.pendingUploads == 0 }, log.text)
        link.stop()
        runMainLoop(seconds: 0.3)
        XCTAssertTrue(truncated)
        XCTAssertTrue(log.contains("sending \(big.file) failed"), log.text)
        XCTAssertEqual(server.uploads.first?.bytes, 1 << 20, "sent again, whole, as the file now is")
        XCTAssertEqual(warnings.messages, [], "no GLib critical or warning")
    }

    // MARK: - Helpers

    func makeLink(_ server: AllSparkTestServer, _ stored: StoredChunks, log: LogCapture,
                  options: ServerLink.UploadOptions = .init(attempts: 3, retryDelay: 0.1)) -> ServerLink {
        ServerLink(address: try! ServerAddress(parsing: "ws://\(server.address)"), deviceName: "box", verifyTLS: true,
                   reconnectDelay: 0.3, recorder: stored, announceChunks: false, uploadOptions: options, logger: log.logger)
    }
}

/// A raw TCP peer on loopback, written in Python; its first output line is its port.
final class PythonPeer {
    let process = Process()
    let port: Int

    init(_ script: String) throws {
        let folder = TemporaryDirectory()
        let file = folder.file("peer.py")
        try script.write(to: file, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = Int(line.split(separator: "\n").first ?? "") else {
            process.terminate()
            throw NSError(domain: "PythonPeer", code: 1, userInfo: [NSLocalizedDescriptionKey: "no port: \(line)"])
        }
        self.port = port
    }

    deinit { if process.isRunning { process.terminate() } }
}
