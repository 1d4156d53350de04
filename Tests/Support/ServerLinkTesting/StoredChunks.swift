import Foundation
import Logging
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
    /// The contents of every chunk file, when given (a small real clip made once by the test); else random bytes.
    private let contents: Data?

    /// `count` chunks of 2 s on whole seconds, the newest ending 1 to 2 s before `now` (so a range up to `now` covers them all).
    public init(count: Int, contents: Data? = nil, now: Date = Date(),
                tuning: RecordingTuning = RecordingTuning(videoFormat: .mp4, chunkDurationMs: 2000, bufferMaxMB: 200)) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("allspark-chunks-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        catalog = try ChunkCatalog(directory: folder)
        currentTuning = tuning
        self.contents = contents
        let first = (now.timeIntervalSince1970 - 2 * Double(count) - 1).rounded(.down)
        for i in 0..<count {
            try add(start: first + 2 * Double(i), seconds: 2, contents: contents ?? Self.randomBytes(100_000 + i))
        }
    }

    deinit { try? FileManager.default.removeItem(at: folder) }

    /// Writes and catalogs a chunk file holding `contents` (default: the chunks' contents, or random bytes).
    @discardableResult
    public func add(start: Double, seconds: Double, contents: Data? = nil, format: VideoFormat = .mp4) throws -> ChunkRecord {
        let bytes = contents ?? self.contents ?? Self.randomBytes(100_000)
        let record = ChunkRecord(file: ChunkName.final(startMs: Int64((start * 1000).rounded()), format: format),
                                 start: start, end: start + seconds, size: Int64(bytes.count), format: format)
        guard FileManager.default.createFile(atPath: catalog.url(of: record).path, contents: bytes) else {
            throw CocoaError(.fileWriteUnknown)
        }
        catalog.add(record)
        return record
    }

    public static func randomBytes(_ count: Int) -> Data {
        var random = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        for i in stride(from: 0, to: count, by: 8) {
            let word = random.next()
            for j in 0..<min(8, count - i) { bytes[i + j] = UInt8(truncatingIfNeeded: word >> (8 * UInt64(j))) }
        }
        return Data(bytes)
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

    /// The settings path over these chunks, as the service makes one over its recorder (`bounds`: `[server]`).
    public func settingsKeeper(bounds: ServerBounds, store: ServerSettingsStore?, logger: Logger) -> SettingsKeeper {
        SettingsKeeper(bounds: { bounds }, store: store, current: { [unowned self] in self.currentTuning },
                       retune: { [unowned self] in self.retune($0) }, logger: logger)
    }

    /// What the recorder's `retune` does, recorded.
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

extension InMemoryAllSparkServer {
    /// Records `count` chunks of `seconds` each on the test clock, each
    /// finished and announced in turn, then ends the recording. True once
    /// the link has settled every upload (and `done` holds) within `settle` seconds.
    public func record(_ count: Int, chunksOf seconds: Double = 2, into stored: StoredChunks, link: ServerLink,
                       settle: Double = 5, until done: () -> Bool = { true }) throws -> Bool {
        for _ in 0..<count {
            clock.advance(by: seconds)
            try stored.finish(until: clock.now.timeIntervalSince1970, link: link)
        }
        stored.isCapturing = false
        link.recordingEnded()
        return clock.advance(upTo: settle) { link.pendingUploads == 0 && done() }
    }
}
