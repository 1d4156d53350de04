import XCTest
import RecorderTestSupport
import AllSparkProtocol
import RecorderCore
import ServerLinkTesting
@testable import ServerLink

/// The link's timers on a clock the test moves (ServerLinkTesting): reconnect
/// delay, handshake deadline, keep-alive watchdog, reply deadline. No socket,
/// no video, no real waiting.
final class ConnectionTests: XCTestCase {
    func testReconnectsAfterTheConfiguredDelayAndNotBefore() {
        let server = InMemoryAllSparkServer()
        let link = server.makeLink(recorder: nil, reconnectDelay: 5)
        var states: [ServerLink.State] = []
        link.onStateChange { states.append($0) }
        link.start()
        server.clock.run()
        XCTAssertEqual(link.state, .connected(.ws))
        server.connection?.closeByPeer(code: 1001, reason: "server restarting")
        server.clock.advance(by: 4.9)
        XCTAssertEqual(link.state, .disconnected)
        XCTAssertEqual(server.attempts.count, 1, "no attempt before the delay")
        server.clock.advance(by: 0.2)
        XCTAssertEqual(link.state, .connected(.ws))
        XCTAssertEqual(server.clientNames, ["Door (x86)", "Door (x86)"], "introduced itself again")
        XCTAssertEqual(states, [.connecting, .connected(.ws), .disconnected, .connecting, .connected(.ws)])
        link.stop()
    }

    /// The connection's state is one value carrying what it holds (issue 23 item 5): observers hear
    /// each change once, a second start makes no second attempt, a second stop tells no one anything.
    func testObserversHearEachChangeOnceAndAStartOrStopTooManyChangesNothing() {
        let server = InMemoryAllSparkServer()
        let link = server.makeLink(recorder: nil, reconnectDelay: 5)
        var states: [ServerLink.State] = []
        link.onStateChange { states.append($0) }
        link.start()
        link.start()
        server.clock.run()
        XCTAssertEqual(server.attempts.count, 1, "one attempt")
        XCTAssertEqual(server.clientNames.count, 1, "one connection")
        link.stop()
        link.stop()
        server.clock.advance(by: 10)
        XCTAssertEqual(states, [.connecting, .connected(.ws), .disconnected])
        XCTAssertEqual(server.attempts.count, 1, "no reconnect after a stop")
        XCTAssertEqual(server.clock.pendingTimers, 0, "nothing of the connection is left running")
    }

    func testAHandshakeThatNeverCompletesIsGivenUpAtTheDeadline() {
        let server = InMemoryAllSparkServer()
        server.completesHandshakes = false
        let log = LogCapture()
        let link = server.makeLink(recorder: nil, reconnectDelay: 30, logger: log.logger)
        link.start()
        server.clock.advance(by: 4.9)
        XCTAssertEqual(link.state, .connecting)
        server.clock.advance(by: 0.2)
        XCTAssertEqual(link.state, .disconnected, "given up at the deadline")
        XCTAssertTrue(log.contains("no WebSocket connection within 5 s (connect, TLS and HTTP upgrade together)"), log.text)
        server.completesHandshakes = true
        server.clock.advance(by: 30)
        XCTAssertEqual(link.state, .connected(.ws), "tried again after the reconnect delay")
        link.stop()
    }

    func testAPeerThatStopsAnsweringPingsIsDroppedWithin15sAndOneThatAnswersIsKept() {
        let server = InMemoryAllSparkServer()
        let link = server.makeLink(recorder: nil, keepAliveSeconds: ServerLink.defaultKeepAliveSeconds)
        link.start()
        server.clock.run()
        let first = server.connection
        server.clock.advance(by: 300)
        XCTAssertTrue(first?.isOpen == true && server.clientNames.count == 1, "a peer answering pings is kept")
        XCTAssertEqual(first?.keepAliveSeconds, 4)

        server.answersPings = false
        server.clock.advance(by: 11)
        XCTAssertTrue(first?.isOpen == true, "a ping or two may go unanswered")
        server.clock.advance(by: 4)
        XCTAssertFalse(first?.isOpen == true, "silent for three ping intervals: dropped within 15 s")
        server.clock.advance(by: 0.5)
        XCTAssertEqual(link.state, .connected(.ws))
        XCTAssertEqual(server.clientNames.count, 2, "reconnected")
        link.stop()
    }

    func testADeafPeerIsDroppedWithin15sWhileAFileIsGoingOutToIt() throws {
        // A server after SIGTERM stops reading: the file being sent stalls, the pings wait behind
        // it, no reply comes. An upload in flight must not hide that for the upload's long bound.
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 1, contents: StoredChunks.randomBytes(100_000), now: server.clock.now)
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, keepAliveSeconds: ServerLink.defaultKeepAliveSeconds,
                                   upload: .init(attempts: 3, retryDelay: 0.2, replyTimeout: 60), logger: log.logger)
        link.start()
        server.clock.run()
        let first = try XCTUnwrap(server.connection)
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        first.isDeaf = true
        server.clock.advance(by: 0.5)
        XCTAssertEqual(link.uploadQueue.inFlight?.name, stored.catalog.all[0].file, "the upload is in flight to a deaf peer")
        server.clock.advance(by: 14.5)
        XCTAssertFalse(first.isOpen, "dropped within 15 s although a file was going out")
        XCTAssertTrue(log.contains("no pong, reply or progress of the file being sent"), log.text)
        XCTAssertTrue(server.clock.advance(upTo: 2) { server.uploads.count == 1 && link.pendingUploads == 0 }, log.text)
        XCTAssertEqual(server.clientNames.count, 2, "sent again on a fresh connection")
        link.stop()
    }

    func testAnnouncementsThatGotNoReplyAreSentAgainOldestFirstAfterReconnecting() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        let link = server.makeLink(recorder: stored, keepAliveSeconds: ServerLink.defaultKeepAliveSeconds)
        link.start()
        server.clock.run()
        let now = server.clock.now.timeIntervalSince1970
        func finish(_ index: Int) throws {
            let chunk = try stored.add(start: now - 100 + Double(index) * 2, seconds: 2)
            link.chunkFinished(chunk, fps: 30, width: 64, height: 64, camera: "Door")
        }
        try finish(0)
        server.clock.advance(by: 1)
        let first = try XCTUnwrap(server.connection)
        first.isDeaf = true
        try finish(1)
        server.clock.advance(by: 2)
        try finish(2)
        server.clock.advance(by: 14)
        XCTAssertFalse(first.isOpen, "the deaf server is dropped")
        try finish(3)   // while there is no connection
        XCTAssertTrue(server.clock.advance(upTo: 2) { server.connections.count == 2 && server.texts.filter { $0.contains("chunkSaved") }.count == 4 })
        let starts = server.texts.filter { $0.contains("chunkSaved") }.map {
            ((try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["startTime"] as? Double).map { ($0 * 1000).rounded() }
        }
        // Compared to the millisecond: a chunk's times are named and stored in ms, and JSON's text of a double may differ in its last digit.
        XCTAssertEqual(starts, [0, 1, 2, 3].map { ((now - 100 + Double($0) * 2) * 1000).rounded() },
                       "the one answered before, then the unanswered ones again, oldest first, then the one finished while disconnected")
        server.clock.advance(by: 1)
        XCTAssertEqual(server.texts.filter { $0.contains("chunkSaved") }.count, 4, "each once at the new server")
        link.stop()
    }

    func testAnUploadWithNoReplyIsSentAgainOnAFreshConnectionAtItsBound() throws {
        let server = InMemoryAllSparkServer()
        server.answersFiles = false
        let stored = try StoredChunks(count: 1, contents: StoredChunks.randomBytes(100_000), now: server.clock.now)
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 3, retryDelay: 0.2, replyTimeout: 30,
                                                                  replyBytesPerSecond: 1_000_000), logger: log.logger)
        link.start()
        server.clock.run()
        server.send(text: #"{"command":"uploadTimeRange","startTime":0,"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        server.clock.advance(by: 30)
        XCTAssertEqual(server.binaryMessages, 1)
        XCTAssertEqual(server.clientNames.count, 1, "30 s + 0.1 s for 100 kB: not yet")
        server.answersFiles = true
        server.clock.advance(by: 0.2)
        XCTAssertTrue(log.contains("no reply to the upload of \(stored.catalog.all[0].file) within 30.100 s"), log.text)
        XCTAssertTrue(server.clock.advance(upTo: 2) { server.uploads.count == 1 && link.pendingUploads == 0 }, log.text)
        XCTAssertEqual(server.clientNames.count, 2, "sent again on a fresh connection")
        XCTAssertFalse(stored.catalog.isPinned(stored.catalog.all[0].file))
        link.stop()
    }
}

/// `clientConfig` as the link applies it to the recorder.
final class ClientConfigCommandTests: XCTestCase {
    func testAcceptedFieldsAreLaidOverTheTuningAndRejectedOnesChangeNothing() throws {
        guard case .clientConfig(let update) = try ServerMessage.parse("""
            {"type":"clientConfig","config":{"videoFormat":"mov","videoChunkDurationMs":10000,"videoBufferMaxMB":-3}}
            """).get() else { return XCTFail("not a clientConfig") }
        let checked = SettingsRules.check(update.settingsChange, from: .server("s"), bounds: ServerBounds(minBufferMB: 1, maxBufferMB: 200))
        XCTAssertEqual(checked.accepted.applied(to: RecordingTuning(videoFormat: .mp4, chunkDurationMs: 30000, bufferMaxMB: 100)),
                       RecordingTuning(videoFormat: .mov, chunkDurationMs: 10000, bufferMaxMB: 100))
        XCTAssertEqual(checked.refused.map(\.field), [.bufferMax], "-3 MB: refused by the box's rules")
        guard case .clientConfig(let bad) = try ServerMessage.parse(
            #"{"type":"clientConfig","config":{"videoFormat":"avi","videoChunkDurationMs":true,"videoBufferMaxMB":"big"}}"#).get()
        else { return XCTFail("not a clientConfig") }
        XCTAssertEqual(bad.applied(to: RecordingTuning(videoFormat: .mp4, chunkDurationMs: 5000, bufferMaxMB: 7)),
                       RecordingTuning(videoFormat: .mp4, chunkDurationMs: 5000, bufferMaxMB: 7), "nothing bad is applied")
    }

    func testTheServersValuesAreAppliedWithinTheBoxsBoundsAndKept() throws {
        let server = InMemoryAllSparkServer()
        server.clientConfig = #"{"type":"clientConfig","config":{"videoFormat":"mov","videoChunkDurationMs":3000,"videoBufferMaxMB":150}}"#
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        let store = ServerSettingsStore(storageDirectory: stored.folder.path)
        let link = server.makeLink(recorder: stored, store: store)
        link.start()
        server.clock.run()
        let expected = RecordingTuning(videoFormat: .mov, chunkDurationMs: 3000, bufferMaxMB: 150)
        XCTAssertEqual(stored.retunes, [expected])
        XCTAssertEqual(store.load()?.tuning, expected)
        XCTAssertEqual(store.load()?.server, "ws://allspark.test:9080/")
        link.stop()
    }

    /// Every key a server since 0.5 ships, applied within the box's bounds and kept for the next start.
    func testEveryShippedKeyIsAppliedWithinTheBoundsAndKept() throws {
        let server = InMemoryAllSparkServer()
        server.clientConfig = """
            {"type":"clientConfig","config":{"videoFormat":"none","videoChunkDurationMs":3600000,"videoBufferMaxMB":16000,"fps":15,
             "audioFormat":"wav","timestampFormat":"txt","poseFormat":"json","depthFormat":"png","communicationsPolicy":{"wifi":true}}}
            """
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        let store = ServerSettingsStore(storageDirectory: stored.folder.path)
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, store: store, logger: log.logger)
        link.start()
        server.clock.run()
        let expected = RecordingTuning(videoFormat: .mp4, chunkDurationMs: ServerBounds.defaultMaxChunkMs, bufferMaxMB: 200,
                                       recordsVideo: false, audioFormat: .wav, timestampFormat: .txt, framerate: 15)
        XCTAssertEqual(stored.retunes, [expected])
        XCTAssertEqual(store.load()?.tuning, expected)
        XCTAssertEqual(store.load()?.fields, Set(ServerSettingsStore.Field.allCases).subtracting([.videoFormat]), "\"none\" keeps the container")
        XCTAssertTrue(log.contains("videoBufferMaxMB 16000 is outside"), "the buffer clamp is logged")
        XCTAssertTrue(log.contains("videoChunkDurationMs 3600000 is outside"), "the chunk clamp is logged")
        XCTAssertTrue(log.contains("poseFormat \"json\" is not applicable"))
        XCTAssertTrue(log.contains("depthFormat \"png\" is not applicable"))
        XCTAssertFalse(log.contains("ignoring keys"), "communicationsPolicy is not an ignored key")
        link.stop()
    }
}
