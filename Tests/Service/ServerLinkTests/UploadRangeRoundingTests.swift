import XCTest
import RecorderCore
import RecorderTestSupport
import ServerLinkTesting
@testable import ServerLink

/// Issue 21: the server's autoUpload asks for exactly the chunk its
/// chunkSaved announced, with the times as Python's json prints floats
/// (shortest repr, up to 17 digits). Parsed back on Linux they may land a
/// microsecond past the chunk's end; the request must still mean that
/// chunk alone, not the next one too.
final class UploadRangeRoundingTests: XCTestCase {
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

    /// The command as the AllSpark server (aiohttp, Python's json) writes it for a chunk's times.
    func pythonUploadTimeRange(start: Double, end: Double) throws -> String {
        let script = "import json,sys; print(json.dumps({'command': 'uploadTimeRange', 'startTime': float(sys.argv[1]), 'endTime': float(sys.argv[2])}))"
        let result = try runTool("python3", ["-c", script, "\(start)", "\(end)"])
        XCTAssertEqual(result.status, 0, result.output)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testAnAutomaticRequestInPythonsFloatFormatUploadsThatChunkAlone() throws {
        let server = InMemoryAllSparkServer(generation: .new)
        let stored = try StoredChunks(count: 0, contents: Self.clip, now: server.clock.now)
        // Chunk times as the recorder catalogues them: nanoseconds of wall clock, 17 significant digits.
        let base = (server.clock.now.timeIntervalSince1970 - 8).rounded(.down) + 0.41166692543
        var chunks: [ChunkRecord] = []
        var start = base
        for length in [2.0333333331, 2.0000000337, 1.9666666669] {
            chunks.append(try stored.add(start: start, seconds: length))
            start = chunks.last!.end
        }
        stored.isCapturing = true
        let link = server.makeLink(recorder: stored)
        link.start()
        XCTAssertTrue(server.clock.advance(upTo: 1) { link.state == .connected(.ws) })

        // A chunk in the middle: its neighbour after it is finished and must not come along.
        let middle = try pythonUploadTimeRange(start: chunks[1].start, end: chunks[1].end)
        server.send(text: middle)
        XCTAssertTrue(server.clock.advance(upTo: 5) { link.pendingUploads == 0 && server.uploads.count >= 1 })
        XCTAssertEqual(server.uploads.map(\.filename), [chunks[1].file], "exactly the chunk asked for (\(middle))")

        // The newest chunk while recording: nothing waits for the chunk being written.
        let newest = try pythonUploadTimeRange(start: chunks[2].start, end: chunks[2].end)
        server.send(text: newest)
        XCTAssertTrue(server.clock.advance(upTo: 5) { link.pendingUploads == 0 && server.uploads.count >= 2 })
        XCTAssertEqual(link.uploadQueue.watches.count, 0, "no wait for the next chunk: \(link.uploadQueue.watches) (\(newest))")
        let next = try stored.finish(until: chunks[2].end + 2, link: link)
        server.clock.advance(by: 3)
        XCTAssertEqual(server.uploads.map(\.filename), [chunks[1].file, chunks[2].file],
                       "\(next.file), finished after the request, was not uploaded")
        link.stop()
    }

    func testRangesAreNarrowedByLessThanAFrame() {
        let (from, to) = UploadQueue.withoutRoundingSlack(from: 100, to: 102)
        XCTAssertEqual(from, 100.001, accuracy: 1e-9)
        XCTAssertEqual(to, 101.999, accuracy: 1e-9)
        // A range of a few milliseconds is taken as asked.
        let (a, b) = UploadQueue.withoutRoundingSlack(from: 100, to: 100.003)
        XCTAssertEqual(a, 100)
        XCTAssertEqual(b, 100.003)
    }
}
