import XCTest
@testable import RecorderCore

final class ServerBoundsTests: XCTestCase {
    func testRequestsAreClampedToTheBoxsBounds() {
        let bounds = ServerBounds(maxRequestFutureSeconds: 60, minBufferMB: 100, maxBufferMB: 500, maxRecordDurationSeconds: 30)
        let now = 1_000.0
        let near = bounds.clampRange(start: 0, end: 1_050, now: now)
        XCTAssertTrue(near.range! == (0, 1_050) && !near.clamped)
        let years = bounds.clampRange(start: 900, end: now + 3 * 365 * 86_400, now: now)
        XCTAssertTrue(years.range! == (900, 1_060) && years.clamped)
        XCTAssertNil(bounds.clampRange(start: 2_000, end: 3_000, now: now).range, "wholly beyond the bound: nothing left")
        XCTAssertEqual(bounds.clampBuffer(1), 100)
        XCTAssertEqual(bounds.clampBuffer(200), 200)
        XCTAssertEqual(bounds.clampBuffer(1_000_000), 500)
        XCTAssertEqual(bounds.clampRecordDuration(1e9), 30)
    }

    func testTheConfigSetsTheBoundsAndTheServerNeverRaisesTheBufferAboveTheBoxs() throws {
        let defaults = try config([])
        XCTAssertEqual(defaults.server.bounds.maxBufferMB, 16_000, "the box's own buffer_max_mb")
        XCTAssertEqual(defaults.server.bounds.minBufferMB, 1024)
        XCTAssertEqual(defaults.server.bounds.maxRequestFutureSeconds, 3600)
        XCTAssertEqual(defaults.server.bounds.maxRecordDurationSeconds, 3600)
        let small = try config(["recording.buffer_max_mb=200"])
        XCTAssertEqual(small.server.bounds.minBufferMB, 200, "never above the maximum")
        let set = try config(["server.min_buffer_mb=50", "server.max_buffer_mb=800", "server.max_request_future_s=10",
                              "server.max_record_duration_s=20"])
        XCTAssertEqual(set.server.bounds, ServerBounds(maxRequestFutureSeconds: 10, minBufferMB: 50, maxBufferMB: 800,
                                                       maxRecordDurationSeconds: 20))
        XCTAssertEqual(small.server.bounds.maxBufferMB, 200, "the ceiling is the box's own buffer, not the server's 16000")
        XCTAssertEqual(try config(["recording.buffer_max_mb=200", "server.max_buffer_mb=300"]).server.bounds.maxBufferMB, 300,
                       "only a ceiling set on purpose lets the server raise the buffer")
        XCTAssertEqual(defaults.server.bounds.minChunkMs, ServerBounds.defaultMinChunkMs)
        XCTAssertEqual(defaults.server.bounds.maxChunkMs, ServerBounds.defaultMaxChunkMs)
        let chunks = try config(["server.min_chunk_ms=5000", "server.max_chunk_ms=60000"]).server.bounds
        XCTAssertEqual(chunks.clampChunkDuration(1000), 5000)
        XCTAssertEqual(chunks.clampChunkDuration(10_000), 10_000)
        XCTAssertEqual(chunks.clampChunkDuration(3_600_000), 60_000)
        XCTAssertThrowsError(try config(["server.min_chunk_ms=9000", "server.max_chunk_ms=8000"]))
        XCTAssertEqual(defaults.server.maxUploadKbps, 0)
        XCTAssertTrue(defaults.server.acceptAutoUploads)
        let link = try config(["server.max_upload_kbps=800", "server.accept_auto_uploads=false"]).server
        XCTAssertEqual(link.maxUploadKbps, 800)
        XCTAssertFalse(link.acceptAutoUploads)
        XCTAssertThrowsError(try config(["server.min_buffer_mb=900", "server.max_buffer_mb=800"]))
    }

    func testSavedServerSettingsAreClampedWhenLaidOverTheConfig() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bounds-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ServerSettingsStore(storageDirectory: folder.path)
        // Written by a version without bounds: a 1 MB buffer would wipe the ring buffer at every start.
        try store.save(RecordingTuning(videoFormat: .mp4, chunkDurationMs: 10_000, bufferMaxMB: 1), server: "x")
        var notes: [String] = []
        XCTAssertEqual(store.applied(to: try config([])) { notes.append($0) }.recording.bufferMaxMB, 1024)
        XCTAssertEqual(notes.count, 1, "the clamp is logged: \(notes)")
    }

    /// A server's 16000 MB kept from an earlier connection must not fill a small card at the next start.
    func testAServersHugeBufferAndChunkAreHeldToTheBoxsOwnAtTheNextStart() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bounds-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ServerSettingsStore(storageDirectory: folder.path)
        try store.save(RecordingTuning(videoFormat: .mp4, chunkDurationMs: 3_600_000, bufferMaxMB: 16_000), server: "x")
        var notes: [String] = []
        let box = store.applied(to: try config(["recording.buffer_max_mb=200"])) { notes.append($0) }
        XCTAssertEqual(box.recording.bufferMaxMB, 200)
        XCTAssertEqual(box.recording.chunkDurationMs, ServerBounds.defaultMaxChunkMs)
        XCTAssertEqual(notes.count, 2, "\(notes)")
    }

    private func config(_ overrides: [String]) throws -> RecorderConfig {
        let document = try TOMLDocument(parsing: "[recording]\npipeline = \"x.pipeline\"\n", file: "t.toml")
        return try ConfigLoader.make(document: document, file: "/tmp/t.toml", overrides: overrides, hostName: "h")
    }
}
