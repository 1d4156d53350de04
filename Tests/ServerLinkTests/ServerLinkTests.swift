import GLibSupport
import XCTest
import RecorderCore
import RecorderTestSupport
import SoupSupport
@testable import Recorder
@testable import ServerLink

extension Recorder: RecorderControl {}

/// A real libsoup WebSocket server on loopback speaking like an AllSpark
/// server, and the real recorder behind the link.
final class ServerLinkTests: XCTestCase {
    /// What the test server saw.
    final class Server {
        let server: WebSocketServer
        var connections: [WebSocket] = []
        var received: [String] = []
        init() throws {
            server = try WebSocketServer()
            server.handleJSON(path: "/api/health") { #"{"status":"ok","timestamp":0,"uptime":1}"# }
            server.onConnection = { [unowned self] socket in
                socket.setMaximumIncomingPayload(300 * 1024 * 1024)
                socket.onEvents(message: { message in
                    if case .text(let text) = message { self.received.append(text) }
                }, closed: { _, _ in })
                self.connections.append(socket)
            }
        }
        var address: String { "127.0.0.1:\(server.port)" }
    }

    func makeRecorder(_ storage: TemporaryDirectory) throws -> Recorder {
        try Recorder(config: testConfig(storage: storage.path), makeProcessor: { _ in PassThroughProcessor() })
    }

    func waitUntil(_ seconds: Double, _ condition: @escaping () -> Bool) -> Bool {
        let loop = MainLoop()
        let poll = MainLoop.every(0.05) { if condition() { loop.quit(); return false }; return true }
        loop.run(forAtMost: seconds)
        poll.cancel()
        return condition()
    }

    func testIntroducesItselfAndAppliesClientConfigToTheRunningRecorder() throws {
        let server = try Server()
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        try recorder.start()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "Door (x86)",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: recorder)
        link.start()
        XCTAssertTrue(waitUntil(5) { link.state == .connected(.ws) && !server.received.isEmpty })
        XCTAssertEqual(server.received.first, #"{"clientName":"Door (x86)","type":"clientInfo"}"#)

        server.connections.last?.send(text: #"{"type":"clientConfig","config":{"videoFormat":"mov","videoChunkDurationMs":3000,"videoBufferMaxMB":150,"communicationsPolicy":"any"}}"#)
        XCTAssertTrue(waitUntil(5) { recorder.currentTuning.videoFormat == .mov })
        XCTAssertEqual(recorder.currentTuning, RecordingTuning(videoFormat: .mov, chunkDurationMs: 3000, bufferMaxMB: 150))
        runMainLoop(seconds: 4)
        link.stop()
        XCTAssertTrue(stopAndWait(recorder))
        XCTAssertTrue(recorder.catalog.all.contains { $0.format == .mov }, "the next chunks use the server's container")
    }

    func testHostileMessagesAreIgnoredAndTheLinkStays() throws {
        let server = try Server()
        let storage = TemporaryDirectory()
        let recorder = try makeRecorder(storage)
        let before = recorder.currentTuning
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: recorder)
        link.start()
        XCTAssertTrue(waitUntil(5) { link.state == .connected(.ws) })
        let socket = try XCTUnwrap(server.connections.last)
        for junk in ["not json", "[]", #"{"type":"clientConfig","config":{"videoFormat":"avi","videoChunkDurationMs":-1}}"#,
                     #"{"command":"uploadTimeRange","startTime":"x"}"#, #"{"command":"selfDestruct"}"#,
                     String(repeating: "{", count: 200_000)] {
            socket.send(text: junk)
        }
        socket.send(binary: Data(repeating: 7, count: 1000))
        runMainLoop(seconds: 1)
        XCTAssertEqual(link.state, .connected(.ws), "still connected")
        XCTAssertEqual(recorder.currentTuning, before, "nothing bad was applied")
        link.stop()
    }

    func testReconnectsAfterTheServerDropsTheConnection() throws {
        let server = try Server()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: nil)
        var states: [ServerLink.State] = []
        link.onStateChange = { states.append($0) }
        link.start()
        XCTAssertTrue(waitUntil(5) { server.connections.count == 1 && link.state == .connected(.ws) })
        server.connections[0].close(code: 1001, reason: "server restarting")
        XCTAssertTrue(waitUntil(5) { server.connections.count == 2 && link.state == .connected(.ws) }, "\(states)")
        XCTAssertEqual(server.received.filter { $0.contains("clientInfo") }.count, 2, "introduced itself again")
        XCTAssertTrue(states.contains(.disconnected))
        link.stop()
    }

    func testWithoutASchemeTriesWssThenFallsBackToWsOnAPlainServer() throws {
        let server = try Server()
        let link = ServerLink(address: try ServerAddress(parsing: server.address), deviceName: "x",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: nil)
        link.start()
        XCTAssertTrue(waitUntil(15) { link.state == .connected(.ws) }, "\(link.state)")
        link.stop()
    }
}
