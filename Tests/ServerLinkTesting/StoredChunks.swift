import Foundation
import RecorderCore
import ServerLink

/// Chunk files in a real storage folder and catalog, standing in for the
/// recorder behind a link (uploads only need files): `finish` adds the next
/// chunk as a recorder finishing one would, without recording video.
///
/// Threading: the test's thread only.
public final class StoredChunks: RecorderControl {
    public let folder: URL
    public let catalog: ChunkCatalog
    public var currentTuning: RecordingTuning
    /// Whether a chunk is being written now (ranges reaching past the newest chunk wait for more).
    public var isCapturing = false
    /// What `retune` was given, in order.
    public private(set) var retunes: [RecordingTuning] = []
    public private(set) var resumeRequests = 0
    /// The contents of every chunk file, unless given: a small real clip made once by the test, or random bytes.
    private let contents: Data?

    /// `count` chunks of 2 s, the first starting a minute before `now`.
    public init(count: Int, contents: Data? = nil, now: Date = Date(),
                tuning: RecordingTuning = RecordingTuning(videoFormat: .mp4, chunkDurationMs: 2000, bufferMaxMB: 200)) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("allspark-chunks-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        catalog = try ChunkCatalog(directory: folder)
        currentTuning = tuning
        self.contents = contents
        var start = (now.timeIntervalSince1970 - 60).rounded()
        for i in 0..<count {
            try add(start: start, seconds: 2, size: contents.map { Int64($0.count) } ?? 100_000 + Int64(i))
            start += 2
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Writes and catalogs a chunk file; returns its record.
    @discardableResult
    public func add(start: Double, seconds: Double, size: Int64? = nil, format: VideoFormat = .mp4) throws -> ChunkRecord {
        let bytes: Data
        if let contents, size == nil || size == Int64(contents.count) {
            bytes = contents
        } else {
            var random = SystemRandomNumberGenerator()
            bytes = Data((0..<Int(size ?? 100_000)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        let record = ChunkRecord(file: ChunkName.final(startMs: Int64((start * 1000).rounded()), format: format),
                                 start: start, end: start + seconds, size: Int64(bytes.count), format: format)
        guard FileManager.default.createFile(atPath: catalog.url(of: record).path, contents: bytes) else {
            throw CocoaError(.fileWriteUnknown)
        }
        catalog.add(record)
        return record
    }

    /// A chunk ends at `end` (starting where the newest one ended): written, catalogued and
    /// reported to `link` as the recorder reports a finished chunk.
    @discardableResult
    public func finish(until end: Double, link: ServerLink?) throws -> ChunkRecord {
        let start = catalog.all.map(\.end).max() ?? end - Double(currentTuning.chunkDurationMs) / 1000
        let record = try add(start: start, seconds: end - start)
        link?.chunkFinished(record, fps: 30, width: 320, height: 240, camera: "test")
        return record
    }

    public func retune(_ tuning: RecordingTuning) -> [String] {
        retunes.append(tuning)
        defer { currentTuning = tuning }
        return tuning == currentTuning ? [] : ["tuning \(currentTuning) → \(tuning)"]
    }

    public func resumeIfWaiting() -> Bool {
        resumeRequests += 1
        return false
    }
}
