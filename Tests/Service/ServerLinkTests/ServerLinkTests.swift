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




/// The link against a real libsoup AllSpark server on loopback
/// (`AllSparkTestServer`, honest to shared/DESIGN.md), with the real
/// recorder behind it writing real chunks (end to end); and the protocol
/// cases against ServerLinkTesting's in-memory server on a clock the test
/// moves, with stored chunks (small real files) instead of a recording.
final class ServerLinkTests: XCTestCase {
    /// A small real clip, made once: the contents of the stored chunks of the in-memory tests.
    static var clip: Data!

    override class func setUp() {
        super.setUp()
        let scratch = TemporaryDirectory()
        do {
            try writeClip((0..<15).map { RawImage(width: 64, height: 64, luma: UInt8(30 + 10 * $0)) }, to: scratch.file("clip.mp4"))
            clip = try Data(contentsOf: scratch.file("clip.mp4"))
        } catch {
            XCTFail("cannot build the test clip: \(error)")
        }
    }

    func makeRecorder(_ storage: TemporaryDirectory) throws -> Recorder {
        try Recorder(config: testConfig(storage: storage.path), makeProcessor: { _ in PassThroughProcessor() })
    }

    func makeLink(_ address: String, recorder: Recorder?, verifyTLS: Bool = true, announce: Bool = true,
                  keepAliveSeconds: Double = ServerLink.defaultKeepAliveSeconds,
                  upload: ServerLink.UploadOptions = .init(attempts: 3, retryDelay: 0.2),
                  bounds: ServerBounds = ServerBounds(minBufferMB: 100, maxBufferMB: 200),
                  store: ServerSettingsStore? = nil, logger: Logger = Logger(label: "allspark.server")) throws -> ServerLink {
        let link = ServerLink(address: try ServerAddress(parsing: address), deviceName: "Door (x86)",
                              verifyTLS: verifyTLS, reconnectDelay: 0.3, recorder: recorder, keepAliveSeconds: keepAliveSeconds,
                              announceChunks: announce, uploadOptions: upload, bounds: bounds,
                              settings: recorder.map { recorder in
                                  SettingsKeeper(bounds: { bounds }, store: store, current: { recorder.currentTuning },
                                                 retune: { recorder.retune($0) }, logger: logger)
                              }, logger: logger)
        recorder?.onChunkFinished = { [weak link] chunk in
            link?.chunkFinished(chunk.record, fps: chunk.framesPerSecond, width: chunk.width, height: chunk.height, camera: "test")
        }
        return link
    }

    /// Asserts the server holds exactly `chunks`, each byte-identical to the recorder's file.
    func assertUploaded(_ chunks: [ChunkRecord], to server: AllSparkTestServer, from recorder: Recorder,
                        file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(server.uploads.map(\.filename).sorted(), chunks.map(\.file).sorted(), "exactly these chunks, each once", file: file, line: line)
        for chunk in chunks {
            let local = try? Data(contentsOf: recorder.catalog.url(of: chunk))
            XCTAssertNotNil(local, file: file, line: line)
            XCTAssertEqual(server.uploadedData(chunk.file), local, "\(chunk.file) arrived byte for byte", file: file, line: line)
            let metadata = server.uploads.first { $0.filename == chunk.file }
            XCTAssertEqual(metadata?.declaredSize, local?.count, file: file, line: line)
            XCTAssertEqual(metadata?.mimetype, chunk.format.mimeType, file: file, line: line)
        }
    }

    /// Asserts the in-memory server holds exactly `chunks`, each byte-identical to the stored file.
    func assertUploaded(_ chunks: [ChunkRecord], to server: InMemoryAllSparkServer, from stored: StoredChunks,
                        file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(server.uploads.map(\.filename).sorted(), chunks.map(\.file).sorted(), "exactly these chunks, each once", file: file, line: line)
        for chunk in chunks {
            let local = try? Data(contentsOf: stored.catalog.url(of: chunk))
            XCTAssertNotNil(local, file: file, line: line)
            XCTAssertEqual(server.uploadedData(chunk.file), local, "\(chunk.file) arrived byte for byte", file: file, line: line)
            let metadata = server.uploads.first { $0.filename == chunk.file }
            XCTAssertEqual(metadata?.declaredSize, local?.count, file: file, line: line)
            XCTAssertEqual(metadata?.mimetype, chunk.format.mimeType, file: file, line: line)
        }
    }

    func testIntroducesItselfAppliesAndKeepsClientConfig() throws {
        let server = try AllSparkTestServer()
        server.clientConfig = #"{"type":"clientConfig","config":{"videoFormat":"mov","videoChunkDurationMs":3000,"videoBufferMaxMB":150,"communicationsPolicy":{"wifi":true}}}"#
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        let store = ServerSettingsStore(storageDirectory: storage.path)
        let link = try makeLink("ws://\(server.address)", recorder: recorder, store: store)
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) && !server.clientNames.isEmpty })
        XCTAssertEqual(server.clientNames, ["Door (x86)"])
        XCTAssertTrue(waitOnMainLoop(5) { recorder.currentTuning.videoFormat == .mov })
        let expected = RecordingTuning(videoFormat: .mov, chunkDurationMs: 3000, bufferMaxMB: 150)
        XCTAssertEqual(recorder.currentTuning, expected)
        XCTAssertEqual(store.load()?.tuning, expected, "kept in the storage folder for a restart without the server")
        runMainLoop(seconds: 4)
        XCTAssertTrue(stopAndWait(recorder))
        link.stop()
        XCTAssertTrue(recorder.catalog.all.contains { $0.format == .mov }, "the next chunks use the server's container")

        // A restart without the server records with the server's values; the config file is untouched.
        let reloaded = store.applied(to: try testConfig(storage: storage.path, extra: ["server.min_buffer_mb=100"]))
        XCTAssertEqual(reloaded.tuning, expected)
        XCTAssertEqual(try testConfig(storage: storage.path).recording.videoFormat, .mp4)
    }

    func testUploadTimeRangeSendsExactlyTheOverlappingChunksByteForByte() throws {
        let server = try AllSparkTestServer()
        server.autoUpload = false   // only what the range asks for
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        let link = try makeLink("ws://\(server.address)", recorder: recorder)
        link.start()
        XCTAssertTrue(waitOnMainLoop(12) { recorder.catalog.all.count >= 3 && link.state == .connected(.ws) })
        let finished = recorder.catalog.all.sorted { $0.start < $1.start }
        // From inside the second chunk to inside the third: exactly those two.
        let from = finished[1].start + 0.1, to = finished[2].end - 0.1
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":\#(from),"endTime":\#(to),"message":"last clip"}"#)
        XCTAssertTrue(waitOnMainLoop(10) { server.uploads.count == 2 && link.pendingUploads == 0 })
        runMainLoop(seconds: 1)   // nothing more may follow
        assertUploaded([finished[1], finished[2]], to: server, from: recorder)
        XCTAssertFalse(recorder.catalog.all.contains { recorder.catalog.isPinned($0.file) }, "unpinned after upload")

        // A range reaching into the chunk being written: that chunk follows as soon as it is finished.
        // The range also covers chunks just received: they are not sent again.
        let newest = recorder.catalog.all.map(\.end).max()!
        let now = Date().timeIntervalSince1970
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":\#(from),"endTime":\#(now)}"#)
        XCTAssertTrue(waitOnMainLoop(10) { recorder.catalog.all.contains { $0.start >= newest } && link.pendingUploads == 0 })
        XCTAssertTrue(stopAndWait(recorder))
        runMainLoop(seconds: 0.5)
        link.stop()
        let expected = Set(recorder.catalog.chunks(from: from, to: now))
        XCTAssertTrue(expected.contains { $0.start >= newest }, "includes a chunk that was still being written")
        assertUploaded(Array(expected), to: server, from: recorder)
    }

    func testRepliesToChunkSavedAreNotTakenForUploadAcks() throws {
        // Old servers answer every chunkSaved with an error; an upload must not take it for its own reply.
        let server = InMemoryAllSparkServer(generation: .old)
        let stored = try StoredChunks(count: 2, contents: Self.clip, now: server.clock.now)
        stored.isCapturing = true
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 1))
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        // Ask for everything, now and as it is recorded, while chunkSaved messages keep coming.
        let now = server.clock.now.timeIntervalSince1970
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(now + 5)}"#)
        XCTAssertTrue(try server.record(3, into: stored, link: link))
        link.stop()
        let announced = server.texts.filter { $0.contains(#""type":"chunkSaved""#) }
        XCTAssertEqual(announced.count, 3, "chunkSaved after each finished chunk")
        let chunkSaved = try JSONSerialization.jsonObject(with: Data(announced[0].utf8)) as! [String: Any]
        XCTAssertEqual(chunkSaved["camera"] as? String, "test")
        XCTAssertEqual(chunkSaved["format"] as? String, "mp4")
        XCTAssertEqual((chunkSaved["dimensions"] as? [String: Int])?["width"], 320)
        XCTAssertEqual(chunkSaved["fps"] as? Double, 30)
        // With one attempt allowed, any misattributed error would have lost a chunk.
        assertUploaded(stored.catalog.chunks(from: 0, to: now + 5), to: server, from: stored)
        XCTAssertEqual(server.binaryMessages, server.uploads.count, "no file was sent twice")
    }

    func testRecordCommandWithAutoUploadSendsTheChunksOfTheComingSeconds() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 1, contents: Self.clip, now: server.clock.now)
        stored.isCapturing = true
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        let now = server.clock.now.timeIntervalSince1970
        server.send(text: #"{"command":"record","message":"doorbell","duration":3000,"autoUpload":true}"#)
        XCTAssertTrue(try server.record(3, into: stored, link: link))
        link.stop()
        XCTAssertEqual(stored.resumeRequests, 1, "the record command asked the recorder to resume")
        let covering = stored.catalog.chunks(from: now, to: now + 3)
        XCTAssertGreaterThanOrEqual(covering.count, 2)
        // Exactly the chunks covering the 3 s: those recorded after them were not sent.
        XCTAssertFalse(stored.catalog.all.filter { $0.start > now + 3.5 }.isEmpty)
        assertUploaded(covering, to: server, from: stored)
    }

    func testNewServerAutoUploadOfAnnouncedChunks() throws {
        let server = InMemoryAllSparkServer(generation: .new)
        server.autoUpload = true
        let stored = try StoredChunks(count: 0, contents: Self.clip, now: server.clock.now)
        stored.isCapturing = true
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        XCTAssertTrue(try server.record(3, into: stored, link: link) { server.uploads.count == stored.catalog.all.count })
        link.stop()
        XCTAssertEqual(server.uploads.count, 3)
        assertUploaded(stored.catalog.all, to: server, from: stored)
    }

    func testRefusedAndOversizedChunksFailAloneAndTheQueueGoesOn() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 3, contents: Self.clip, now: server.clock.now)
        var chunks = stored.catalog.all.sorted { $0.start < $1.start }
        // A chunk far larger than the others (and than this link's limit), as a long high-bitrate chunk would be.
        let big = try stored.add(start: chunks[0].start - 10, seconds: 10 - 0.001, contents: Data(count: 8_000_000))
        // And one of several 1 MiB pieces whose size is no multiple of the 4-byte mask.
        let pieces = try stored.add(start: chunks.last!.end + 0.001, seconds: 2, contents: StoredChunks.randomBytes(3_000_001))
        chunks.append(pieces)
        chunks.insert(big, at: 0)
        server.refuseFilenames = [chunks[1].file]

        let link = server.makeLink(recorder: stored, upload: .init(maxBytes: 4_000_000, attempts: 2, retryDelay: 0.2))
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 10) { link.pendingUploads == 0 && server.uploads.count == chunks.count - 2 })
        server.clock.advance(by: 0.5)
        link.stop()
        assertUploaded(Array(chunks.dropFirst(2)), to: server, from: stored)
        let refusedAttempts = server.texts.filter { $0.contains(chunks[1].file) }.count
        XCTAssertEqual(refusedAttempts, 2, "the refused chunk was tried the allowed number of times")
        XCTAssertFalse(server.texts.contains { $0.contains(big.file) }, "the oversized chunk was never sent")
        XCTAssertTrue(chunks.allSatisfy { !stored.catalog.isPinned($0.file) }, "nothing stays pinned")
    }

    func testServerKilledMidUploadGetsEveryChunkOnceAfterItRestarts() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 3, contents: Self.clip, now: server.clock.now)
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        var killed = false
        server.onUploadMetadata = { filename in
            // The second upload's metadata arrives, the file is on its way: the server dies.
            guard !killed, server.uploads.count == 1 else { return }
            killed = true
            server.kill()
            _ = server.clock.after(1) { server.restart() }
        }
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        let all = stored.catalog.all
        XCTAssertTrue(server.clock.advance(upTo: 15) { server.uploads.count == all.count && link.pendingUploads == 0 }, "\(server.uploads.map(\.filename))")
        link.stop()
        XCTAssertTrue(killed)
        assertUploaded(all, to: server, from: stored)
        XCTAssertEqual(server.clientNames.count, 2, "reconnected and introduced itself again")
    }

    /// Each junk message, had it been acted on, would have changed something this test sees:
    /// the recorder's tuning, an upload of the stored chunks, or a pinned chunk. (Before, the
    /// recorder behind the link had no chunks, so "no upload was started" could not fail.)
    func testHostileMessagesAreIgnoredAndTheLinkStays() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 3, contents: Self.clip, now: server.clock.now)
        let before = stored.currentTuning
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        let socket = try XCTUnwrap(server.connection)
        let first = stored.catalog.all.map(\.start).min()!, last = stored.catalog.all.map(\.end).max()!
        for junk in ["not json", "[]", #"{"type":"clientConfig","config":{"videoFormat":"avi","videoChunkDurationMs":-1,"videoBufferMaxMB":"150"}}"#,
                     #"{"command":"uploadTimeRange","startTime":"\#(first)","endTime":\#(last)}"#,
                     #"{"command":"uploadTimeRange","startTime":true,"endTime":\#(last)}"#,
                     #"{"command":"uploadTimeRange","startTime":\#(last),"endTime":\#(first)}"#,
                     #"{"command":"uploadTimeRange","startTime":\#(first),"endTime":1e400}"#,
                     #"{"command":"uploadTimeRange","startTime":\#(first)}"#,
                     #"{"type":"uploadTimeRange","startTime":\#(first),"endTime":\#(last)}"#,
                     #"{"command":"selfDestruct","startTime":\#(first),"endTime":\#(last)}"#,
                     String(repeating: "{", count: 200_000)] {
            socket.deliver(text: junk)
        }
        socket.deliver(binary: Data(repeating: 7, count: 1000))
        server.clock.advance(by: 1)
        XCTAssertEqual(link.state, .connected(.ws), "still connected")
        XCTAssertTrue(socket.isOpen, "on the same connection")
        XCTAssertEqual(stored.currentTuning, before, "nothing bad was applied")
        XCTAssertEqual(link.pendingUploads, 0, "no upload was started")
        XCTAssertFalse(server.texts.contains { $0.contains(#""type":"upload""#) }, "no upload metadata was sent")
        XCTAssertEqual(server.binaryMessages, 0)
        XCTAssertFalse(stored.catalog.all.contains { stored.catalog.isPinned($0.file) }, "nothing was queued")

        // The same range, asked for properly, is acted on: what the test watches does change.
        socket.deliver(text: #"{"command":"uploadTimeRange","startTime":\#(first),"endTime":\#(last)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 5) { server.uploads.count == 3 && link.pendingUploads == 0 })
        link.stop()
    }

    func testReconnectsAfterTheServerDropsTheConnection() throws {
        let server = try AllSparkTestServer()
        let link = try makeLink("ws://\(server.address)", recorder: nil)
        var states: [ServerLink.State] = []
        link.onStateChange { states.append($0) }
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { server.connections.count == 1 && link.state == .connected(.ws) })
        server.connections[0].close(code: 1001, reason: "server restarting")
        XCTAssertTrue(waitOnMainLoop(5) { server.connections.count == 1 && server.clientNames.count == 2 }, "\(states)")
        XCTAssertTrue(states.contains(.disconnected))
        link.stop()
    }

    /// A server that completes the handshake, then goes silent (a crashed host or a cut
    /// cable that sends no RST): the link notices missed pongs and reconnects.
    func testASilentServerIsTakenForDeadAndReconnected() throws {
        let folder = TemporaryDirectory()
        let script = folder.file("silent.py")
        try #"""
            import base64, hashlib, socket, sys, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
            print(s.getsockname()[1], flush=True)
            held = []
            while True:
                c, _ = s.accept()
                request = c.recv(65536).decode()
                key = [l.split(":", 1)[1].strip() for l in request.split("\r\n") if l.lower().startswith("sec-websocket-key")][0]
                accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
                c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Accept: " + accept + "\r\n\r\n").encode())
                print("accepted", flush=True)
                held.append(c)   # never read, never answer a ping
            """#.write(to: script, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        defer { process.terminate() }
        let portLine = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        let port = try XCTUnwrap(Int(portLine.split(separator: "\n").first ?? ""), portLine)
        let link = ServerLink(address: try ServerAddress(parsing: "ws://127.0.0.1:\(port)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: nil, keepAliveSeconds: 0.5)
        var states: [ServerLink.State] = []
        link.onStateChange { states.append($0) }
        link.start()
        XCTAssertTrue(waitOnMainLoop(8) { states.filter { $0 == .connected(.ws) }.count >= 2 }, "\(states)")
        link.stop()
        let connectedThenDropped = states.firstIndex(of: .connected(.ws)).map { states[$0...].contains(.disconnected) } ?? false
        XCTAssertTrue(connectedThenDropped, "the silent connection was dropped: \(states)")
    }

    /// A server after SIGTERM stops reading (no pongs, no replies, no close frame; the proxy in
    /// front of the real test server does exactly that) while the recorder goes on finishing
    /// chunks. The link drops it after three silent ping intervals, and every chunk whose
    /// chunkSaved got no reply (sent into the deaf connection, or finished while disconnected)
    /// reaches the server that replaces it, oldest first. Pings every 2 s here, not 4: the 15 s
    /// of the default is ConnectionTests' (virtual time); this shows it over libsoup and a socket.
    func testADeafServerIsDroppedAfterThreeSilentPingsAndItsReplacementHearsOfEveryChunkFinishedMeanwhile() throws {
        let first = try AllSparkTestServer()
        let proxy = try DeafServerProxy(upstreamPort: first.port)
        defer { proxy.stop() }
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        let link = try makeLink("ws://\(proxy.address)", recorder: recorder, keepAliveSeconds: 2)
        var drops = 0
        link.onStateChange { if $0 == .disconnected { drops += 1 } }
        link.start()
        XCTAssertTrue(waitOnMainLoop(10) { first.texts.contains { $0.contains("chunkSaved") } })
        proxy.goDeaf()
        let deafAt = Date().timeIntervalSince1970
        // 3 × 2 s is the functional bound; two more seconds for a loaded test machine.
        XCTAssertTrue(waitOnMainLoop(8) { drops > 0 }, "a deaf server is dropped within three ping intervals")
        let second = try AllSparkTestServer()
        proxy.replace(with: second.port)

        func announcedStarts(_ server: AllSparkTestServer) -> [Int64] {
            server.texts.compactMap { text in
                guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                      json["type"] as? String == "chunkSaved", let start = json["startTime"] as? Double else { return nil }
                return Int64((start * 1000).rounded())
            }
        }
        func milliseconds(_ chunk: ChunkRecord) -> Int64 { Int64((chunk.start * 1000).rounded()) }
        // Every chunk finished is announced to one server or the other (the first may have read
        // some before it went deaf, and answered them: those are not sent again).
        func everyChunkAnnounced() -> Bool {
            let heard = Set(announcedStarts(first) + announcedStarts(second))
            return recorder.catalog.all.allSatisfy { heard.contains(milliseconds($0)) }
        }
        XCTAssertTrue(waitOnMainLoop(10) { link.state == .connected(.ws) && everyChunkAnnounced() })
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertTrue(waitOnMainLoop(5) { everyChunkAnnounced() })
        link.stop()

        let toSecond = announcedStarts(second)
        let finishedAfterDeaf = recorder.catalog.all.filter { $0.end > deafAt + 0.5 }.map(milliseconds)
        XCTAssertFalse(finishedAfterDeaf.isEmpty, "chunks were finished while the server was deaf or gone")
        XCTAssertTrue(Set(finishedAfterDeaf).isSubset(of: Set(toSecond)), "each reached the replacement: \(finishedAfterDeaf) in \(toSecond)")
        XCTAssertEqual(toSecond, toSecond.sorted(), "oldest first")
        XCTAssertEqual(Set(toSecond).count, toSecond.count, "each once")
    }

    /// The same deaf server, but it stops reading in the middle of a file: the pings wait behind
    /// the file's frame, so the file's progress is the sign of life, and it stops once the socket
    /// buffers are full. The upload in flight must not hide the dead server; the file then goes
    /// to the replacement, whole. (Pings every 2 s, as above.)
    func testADeafServerIsDroppedAfterThreeSilentPingsWhileAFileIsGoingOutToIt() throws {
        let first = try AllSparkTestServer()
        let proxy = try DeafServerProxy(upstreamPort: first.port)
        defer { proxy.stop() }
        let stored = try StoredChunks(count: 0)
        // Far more than the loopback socket buffers can hold, so the send really stalls.
        let contents = Data(repeating: 0x5A, count: 48_000_000)
        let chunk = try stored.add(start: Date().timeIntervalSince1970 - 60, seconds: 10, contents: contents)
        let log = LogCapture()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(proxy.address)"), deviceName: "Door (x86)",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: stored, keepAliveSeconds: 2, announceChunks: false,
                              uploadOptions: .init(attempts: 3, retryDelay: 0.2), logger: log.logger)
        var drops = 0
        link.onStateChange { if $0 == .disconnected { drops += 1 } }
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) && first.connections.count == 1 })
        // The metadata and the first 4 MB of the file reach the server; then it reads no more.
        proxy.goDeaf(afterClientBytes: 4_000_000)
        first.connections[0].send(text: #"{"command":"uploadTimeRange","startTime":\#(chunk.start),"endTime":\#(chunk.end)}"#)
        // 3 × 2 s is the functional bound; two more seconds for a loaded test machine.
        XCTAssertTrue(waitOnMainLoop(8) { drops > 0 }, "a server deaf in the middle of a file is dropped within three ping intervals: \(log.text)")
        XCTAssertTrue(log.contains("no pong, reply or progress of the file being sent"), log.text)
        XCTAssertTrue(first.uploads.isEmpty, "the deaf server never got the whole file")

        let second = try AllSparkTestServer()
        proxy.replace(with: second.port)
        XCTAssertTrue(waitOnMainLoop(15) { second.uploads.count == 1 && link.pendingUploads == 0 }, log.text)
        link.stop()
        XCTAssertEqual(second.uploadedData(chunk.file), contents, "the whole file, byte for byte, at the replacement")
    }

    func testWithoutASchemeTriesWssThenFallsBackToWsOnAPlainServer() throws {
        let server = try AllSparkTestServer()
        let link = try makeLink(server.address, recorder: nil)
        var attempts: [String] = []
        link.onConnectAttempt = { attempts.append($0) }
        link.start()
        XCTAssertTrue(waitOnMainLoop(15) { link.state == .connected(.ws) }, "\(link.state)")
        XCTAssertEqual(attempts, ["wss://\(server.address)/", "ws://\(server.address)/"])
        link.stop()
    }

    func testSelfSignedServerIsRefusedWithVerificationWithoutDowngradeAndUsedWithout() throws {
        let certificateFolder = TemporaryDirectory()
        let server = try AllSparkTestServer(certificate: try makeSelfSignedCertificate(in: certificateFolder))

        let strict = try makeLink(server.address, recorder: nil, verifyTLS: true)
        var attempts: [String] = []
        strict.onConnectAttempt = { attempts.append($0) }
        strict.start()
        runMainLoop(seconds: 2)
        strict.stop()
        XCTAssertTrue(server.clientNames.isEmpty, "not connected to an untrusted server")
        XCTAssertFalse(attempts.isEmpty)
        XCTAssertTrue(attempts.allSatisfy { $0.hasPrefix("wss://") }, "never downgraded to ws: \(attempts)")

        // Real bytes over real TLS (the chunks are real files; no need to record them).
        let stored = try StoredChunks(count: 2, contents: Self.clip)
        let relaxed = ServerLink(address: try ServerAddress(parsing: server.address), deviceName: "Door (x86)",
                                 verifyTLS: false, reconnectDelay: 0.3, recorder: stored,
                                 uploadOptions: .init(attempts: 3, retryDelay: 0.2))
        relaxed.start()
        XCTAssertTrue(waitOnMainLoop(5) { relaxed.state == .connected(.wss) })
        server.connections.last?.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(Date().timeIntervalSince1970)}"#)
        XCTAssertTrue(waitOnMainLoop(10) { relaxed.pendingUploads == 0 && server.uploads.count == stored.catalog.all.count })
        relaxed.stop()
        for chunk in stored.catalog.all {
            XCTAssertEqual(server.uploadedData(chunk.file), try Data(contentsOf: stored.catalog.url(of: chunk)), "\(chunk.file) arrived byte for byte")
        }
    }
}

/// `allspark-recorder check-server` as a user runs it, against the test server.
final class CheckServerCommandTests: XCTestCase {
    func testPlainServerReportsHealthAndWs() throws {
        let server = try AllSparkTestServer()
        let result = try runWhileServing(recorderExecutable, ["check-server", server.address, "--timeout", "3"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains(#""status":"ok""#), result.output)
        XCTAssertTrue(result.output.contains("WebSocket ws://\(server.address)/: works"), result.output)
        XCTAssertTrue(result.output.contains("would connect with ws"), result.output)
    }

    func testSelfSignedServerIsExplainedAndAcceptedOnlyWhenAsked() throws {
        let folder = TemporaryDirectory()
        let server = try AllSparkTestServer(certificate: try makeSelfSignedCertificate(in: folder))
        let strict = try runWhileServing(recorderExecutable, ["check-server", "wss://\(server.address)", "--timeout", "3"])
        XCTAssertEqual(strict.status, 1, strict.output)
        XCTAssertTrue(strict.output.contains("certificate NOT trusted"), strict.output)
        XCTAssertTrue(strict.output.contains("works with server.verify_tls = false"), strict.output)
        let relaxed = try runWhileServing(recorderExecutable, ["check-server", "wss://\(server.address)", "--no-verify-tls", "--timeout", "3"])
        XCTAssertEqual(relaxed.status, 0, relaxed.output)
        XCTAssertTrue(relaxed.output.contains(#""protocols":["wss"]"#), relaxed.output)
    }

    func testUnreachableServerFailsWithAReason() throws {
        let server = try AllSparkTestServer()
        let port = server.port
        server.kill()
        let result = try runWhileServing(recorderExecutable, ["check-server", "ws://127.0.0.1:\(port)", "--timeout", "2"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.output.contains("could not connect to ws://127.0.0.1:\(port)"), result.output)
        XCTAssertTrue(result.output.lowercased().contains("refused"), result.output)
    }
}
