import AllSparkProtocol
import Foundation
import GLibSupport
import RecorderCore
import RecorderTestSupport
import ServerLinkTesting
import Storage
import XCTest
@testable import ServerLink

/// The box owns its uploads: a rate cap, declining the server's automatic
/// requests, and companions following their chunk. On ServerLinkTesting's
/// in-memory server and the clock the test moves (no real waiting).
final class UploadLimitsTests: XCTestCase {
    /// Each metadata waits until the files before it average no more than the cap.
    func testTheRateCapSpacesUploadsSoTheAverageStaysWithinIt() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 4, now: server.clock.now)
        let rate = 50_000.0   // 400 kbit/s: each ~100 kB chunk pays for about 2 s
        var started: [String: Date] = [:]
        server.onUploadMetadata = { started[$0] = server.clock.now }
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 3, retryDelay: 0.2, maxBytesPerSecond: rate))
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        link.upload(from: 0, to: server.clock.now.timeIntervalSince1970, reason: "test")
        XCTAssertTrue(server.clock.advance(upTo: 30) { link.pendingUploads == 0 })
        link.stop()
        let chunks = stored.catalog.all.sorted { $0.start < $1.start }
        XCTAssertEqual(server.uploads.map(\.filename), chunks.map(\.file))
        for (earlier, later) in zip(chunks, chunks.dropFirst()) {
            let gap = started[later.file]!.timeIntervalSince(started[earlier.file]!)
            XCTAssertGreaterThanOrEqual(gap, Double(earlier.size) / rate - 0.06, "\(later.file) waited for \(earlier.file)'s bytes")
        }
        let span = started[chunks.last!.file]!.timeIntervalSince(started[chunks[0].file]!)
        let paid = Double(chunks.dropLast().map(\.size).reduce(0, +))
        XCTAssertLessThanOrEqual(paid / span, rate * 1.05, "on average within the cap")
    }

    func testWithoutACapUploadsFollowEachOtherAtOnce() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 3, now: server.clock.now)
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        link.upload(from: 0, to: server.clock.now.timeIntervalSince1970, reason: "test")
        XCTAssertTrue(server.clock.advance(upTo: 0.5) { link.pendingUploads == 0 })
        link.stop()
        XCTAssertEqual(server.uploads.count, 3)
    }

    /// `server.accept_auto_uploads = false`: the server's request for each chunk it was just told
    /// about is declined; an operator's range still goes through.
    func testAutomaticRequestsAreDeclinedAndAnOperatorsStillGoesThrough() throws {
        let server = InMemoryAllSparkServer()
        server.autoUpload = true
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        stored.isCapturing = true
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, upload: .init(attempts: 3, retryDelay: 0.2, acceptAutomaticRequests: false),
                                   logger: log.logger)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        XCTAssertTrue(try server.record(2, into: stored, link: link))
        XCTAssertEqual(server.texts.filter { $0.contains("chunkSaved") }.count, 2, "both announced")
        XCTAssertEqual(server.uploads.count, 0, "the automatic requests were declined")
        XCTAssertEqual(log.lines.filter { $0.contains("declined (server.accept_auto_uploads = false)") }.count, 2)

        let chunks = stored.catalog.all.sorted { $0.start < $1.start }
        server.send(text: #"{"command":"uploadTimeRange","startTime":\#(chunks[0].start - 60),"endTime":\#(server.clock.now.timeIntervalSince1970)}"#)
        XCTAssertTrue(server.clock.advance(upTo: 2) { server.uploads.count == 2 })
        link.stop()
        XCTAssertEqual(server.uploads.map(\.filename), chunks.map(\.file), "the operator's range still goes through")
    }

    func testAutomaticRequestsAreTakenByDefault() throws {
        let server = InMemoryAllSparkServer()
        server.autoUpload = true
        let stored = try StoredChunks(count: 0, now: server.clock.now)
        stored.isCapturing = true
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        XCTAssertTrue(try server.record(2, into: stored, link: link) { server.uploads.count == 2 })
        link.stop()
    }

    /// A chunk's companions follow it (timestamps, then audio), each with its own mimetype, the
    /// chunk pinned until the last; a link planted as a companion is not read.
    func testCompanionsFollowTheirChunkInOrderPinnedAndNeverThroughALink() throws {
        let server = InMemoryAllSparkServer()
        let stored = try StoredChunks(count: 1, now: server.clock.now)
        let chunk = stored.catalog.all[0]
        let ms = ChunkName.parse(chunk.file)!.startMs
        let timestamps = Data("0 : \(ms)\n1 : \(ms + 33)".utf8)
        let audio = StoredChunks.randomBytes(5_000)
        try timestamps.write(to: stored.folder.appendingPathComponent("timestamps_\(ms).txt"))
        try audio.write(to: stored.folder.appendingPathComponent("audio_\(ms).wav"))
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString.prefix(8)).json")
        try Data("{\"secret\":1}".utf8).write(to: secret)
        defer { try? FileManager.default.removeItem(at: secret) }
        try FileManager.default.createSymbolicLink(at: stored.folder.appendingPathComponent("pose_\(ms).json"), withDestinationURL: secret)

        var pinnedDuringCompanions: [Bool] = []
        server.onUploadMetadata = { name in
            if name != chunk.file { pinnedDuringCompanions.append(stored.catalog.isPinned(chunk.file)) }
        }
        let log = LogCapture()
        let link = server.makeLink(recorder: stored, logger: log.logger)
        var finished: [(String, Bool)] = []
        link.onUploadFinished = { finished.append(($0, $1)) }
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })
        link.upload(from: 0, to: server.clock.now.timeIntervalSince1970, reason: "test")
        XCTAssertTrue(server.clock.advance(upTo: 2) { link.pendingUploads == 0 && server.uploads.count == 3 })
        link.stop()

        XCTAssertEqual(server.uploads.map(\.filename), [chunk.file, "timestamps_\(ms).txt", "audio_\(ms).wav"])
        XCTAssertEqual(server.uploads.map(\.mimetype), ["video/mp4", "text/plain", "audio/wav"])
        XCTAssertEqual(server.uploadedData("timestamps_\(ms).txt"), timestamps)
        XCTAssertEqual(server.uploadedData("audio_\(ms).wav"), audio)
        XCTAssertEqual(server.uploads.map(\.declaredSize), server.uploads.map(\.data.count))
        XCTAssertEqual(pinnedDuringCompanions, [true, true], "the chunk stays pinned while its companions are sent")
        XCTAssertFalse(stored.catalog.isPinned(chunk.file), "and is released after the last")
        XCTAssertTrue(log.contains("pose_\(ms).json\" is a symbolic link"), log.text)
        XCTAssertEqual(finished.map(\.0), [chunk.file], "the chunk is reported once, when its companions are settled")
        XCTAssertEqual(finished.map(\.1), [true])
    }
}

/// Companions against the real libsoup test server, which asks for every announced chunk
/// (autoUpload, as servers since 0.5) and files what it receives by date, kind and client.
final class CompanionUploadTests: XCTestCase {
    func testAnAnnouncedChunkAndItsCompanionsArriveByteIdenticalInOrderAndFiled() throws {
        let server = try AllSparkTestServer()
        XCTAssertTrue(server.autoUpload, "on by default, as on servers since 0.5")
        let stored = try StoredChunks(count: 0)
        stored.isCapturing = true
        let log = LogCapture()
        let link = ServerLink(address: try ServerAddress(parsing: "ws://\(server.address)"), deviceName: "Door (x86)",
                              verifyTLS: true, reconnectDelay: 0.3, recorder: stored, logger: log.logger)
        link.start()
        XCTAssertTrue(waitOnMainLoop(5) { link.state == .connected(.ws) })
        var expected: [(name: String, data: Data, kind: String, mimetype: String)] = []
        for i in 0..<2 {
            let start = (Date().timeIntervalSince1970 - 10 + 2 * Double(i)).rounded(.down)
            let chunk = try stored.add(start: start, seconds: 2)
            let ms = ChunkName.parse(chunk.file)!.startMs
            // As the recorder writes them beside the chunk (the test writes its own).
            let timestamps = Data((0..<60).map { "\($0) : \(ms + Int64($0) * 33)" }.joined(separator: "\n").utf8)
            let audio = StoredChunks.randomBytes(20_000 + i)
            try timestamps.write(to: stored.folder.appendingPathComponent("timestamps_\(ms).txt"))
            try audio.write(to: stored.folder.appendingPathComponent("audio_\(ms).wav"))
            link.chunkFinished(chunk, fps: 30, width: 320, height: 240, camera: "test")
            expected += [(chunk.file, try Data(contentsOf: stored.catalog.url(of: chunk)), "video", "video/mp4"),
                         ("timestamps_\(ms).txt", timestamps, "data", "text/plain"),
                         ("audio_\(ms).wav", audio, "data", "audio/wav")]
        }
        XCTAssertTrue(waitOnMainLoop(10) { server.uploads.count == expected.count && link.pendingUploads == 0 }, log.text)
        link.stop()
        XCTAssertEqual(server.uploads.map(\.filename), expected.map(\.name), "each chunk, then its timestamps, then its audio")
        XCTAssertEqual(server.uploads.map(\.mimetype), expected.map(\.mimetype))
        for file in expected {
            XCTAssertEqual(server.uploadedData(file.name), file.data, "\(file.name) arrived byte for byte")
            let path = try XCTUnwrap(server.uploads.first { $0.filename == file.name }?.path)
            XCTAssertEqual(path.split(separator: "/").dropFirst().map(String.init), [file.kind, "Door (x86)", file.name], path)
        }
    }
}
