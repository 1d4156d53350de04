import Foundation
import GLibSupport
import GStreamerSupport
import RecorderCore
import Storage
import SoupSupport

// Playback of what is on the box: thumbnails and ranges made from the
// recorded chunks (already privacy-filtered; never raw frames), on worker
// queues so the main loop only routes and streams.
extension Console {
    /// Longest range one download may join.
    static let maximumExportSeconds = 3 * 3600.0
    /// Widest thumbnail asked for.
    static let thumbnailWidths = 32...640

    /// `GET /api/v1/thumbnail.jpg?t=T[&width=W]`: the recorded picture at time T (the chunk that holds it).
    func thumbnail(_ request: HTTPRequest) -> HTTPResponse {
        guard let text = request.query["t"], let time = QueryTime.parse(text) else {
            return error(422, "invalid_time", "t must be \(QueryTime.expected)", field: "t")
        }
        var width = 160
        if let w = request.query["width"] {
            guard let value = Int(w), Self.thumbnailWidths.contains(value) else {
                return error(422, "invalid_value", "width must be a whole number from \(Self.thumbnailWidths.lowerBound) to \(Self.thumbnailWidths.upperBound)", field: "width")
            }
            width = value
        }
        guard let catalog = service.recorder?.catalog,
              let record = catalog.chunks(from: time, to: time + 0.001).first ?? nearest(time, in: catalog) else {
            return error(404, "not_found", "nothing was recorded at that time")
        }
        // Whole seconds: neighbouring requests share a picture, and the cache holds seconds, not frames.
        let offset = max(0, min(floor(time - record.start), record.duration - 0.1))
        let key = "\(record.file)@\(Int(offset))@\(width)"
        let headers: [(String, String)] = [("Content-Type", "image/jpeg"), ("Cache-Control", "private, max-age=3600")]
        if let cached = media.thumbnails.value(for: key) {
            return HTTPResponse(status: 200, headers: headers, body: .data(cached))
        }
        guard media.pendingThumbnails < MediaWork.maximumPendingThumbnails else {
            return error(503, "busy", "too many thumbnails are being made; try again shortly", headers: [("Retry-After", "1")])
        }
        let file: OpenedFile
        do { file = try catalog.open(record) } catch {
            return self.error(410, "gone", "\(record.file) cannot be read any more: \(error)")
        }
        media.pendingThumbnails += 1
        let size = width
        let failure = Self.errorBody
        let (media, logger) = (self.media, self.logger)
        return HTTPResponse(status: 200, headers: headers, body: .stream { stream in
            media.thumbnailQueue.async {
                // The open descriptor keeps the file readable even if retention deletes it meanwhile.
                let result = Result { try MediaFiles.jpegStill(of: "/proc/self/fd/\(file.descriptor)", at: offset, width: size) }
                withExtendedLifetime(file) {}
                MainLoop.post {
                    media.pendingThumbnails -= 1
                    switch result {
                    case .success(let jpeg):
                        media.thumbnails.insert(jpeg, for: key)
                        stream.write(jpeg)
                        stream.finish()
                    case .failure(let problem):
                        logger.warning("console: no thumbnail of \(record.file) at \(offset) s: \(problem)")
                        stream.fail(status: 500, contentType: "application/json", body: failure("no_picture", "\(problem)", nil, nil))
                    }
                }
            }
        })
    }

    /// The chunk starting soonest after `time`, or else the last one before it (a click in a gap).
    private func nearest(_ time: Double, in catalog: ChunkCatalog) -> ChunkRecord? {
        let all = catalog.all
        return all.first { $0.start >= time } ?? all.last
    }

    /// `GET /api/v1/export.mp4?from=T&to=T`: ONE MP4 of the range, the chunks' video joined
    /// without re-encoding (gaps closed), made on a worker into a hidden file of the storage
    /// folder that is unlinked as soon as it is opened for sending.
    func export(_ request: HTTPRequest) -> HTTPResponse {
        var bounds: [Double] = []
        for name in ["from", "to"] {
            guard let text = request.query[name], let time = QueryTime.parse(text) else {
                return error(422, "invalid_time", "\(name) must be \(QueryTime.expected)", field: name)
            }
            bounds.append(time)
        }
        let (from, to) = (bounds[0], bounds[1])
        guard from < to else { return error(422, "invalid_value", "from must be before to", field: "from") }
        guard to - from <= Self.maximumExportSeconds else {
            return error(422, "invalid_value", "a download holds at most \(Int(Self.maximumExportSeconds / 60)) minutes", field: "to")
        }
        guard let catalog = service.recorder?.catalog else { return error(404, "not_found", "nothing was recorded in that range") }
        let records = catalog.chunks(from: from, to: to)
        guard !records.isEmpty else { return error(404, "not_found", "nothing was recorded in that range") }
        guard !media.exporting else {
            return error(503, "busy", "another download is being made; try again when it is done", headers: [("Retry-After", "5")])
        }
        let folder = URL(fileURLWithPath: service.configuration.recording.storageDirectory)
        let needed = records.reduce(Int64(0)) { $0 + $1.size }
        if let free = StorageGuard.freeBytes(at: folder), free < needed * 2 + 64 << 20 {
            return error(507, "insufficient_storage", "the disk has too little room to join \(needed >> 20) MiB")
        }
        var files: [OpenedFile] = []
        var parts: [MediaFiles.Part] = []
        for record in records {
            guard let file = try? catalog.open(record) else { continue }   // deleted meanwhile: left out
            files.append(file)
            parts.append(.init(file: "/proc/self/fd/\(file.descriptor)",
                               from: record.start < from ? from - record.start : nil,
                               to: record.end > to ? to - record.start : nil))
        }
        let (job, opened) = (parts, files)
        let output = folder.appendingPathComponent("\(MediaWork.exportPrefix)\(UUID().uuidString.prefix(8)).mp4").path
        let name = "\(Self.fileSafe(service.configuration.device.name))_\(Self.stamp(from))_\(Self.stamp(to)).mp4"
        media.exporting = true
        logger.info("console: joining \(parts.count) chunk(s) for a download of \(Int(to - from)) s from \(request.remoteAddress)")
        let failure = Self.errorBody
        let (media, logger) = (self.media, self.logger)
        return HTTPResponse(status: 200, headers: [("Content-Type", "video/mp4"), ("Cache-Control", "no-store"),
                                                   ("Content-Disposition", "attachment; filename=\"\(name)\"")],
                            body: .stream { stream in
            media.exportQueue.async {
                let result = Result { try MediaFiles.joinVideo(job, into: output) }
                withExtendedLifetime(opened) {}
                // Opened, then unlinked at once: the descriptor serves the answer and nothing is left behind.
                let descriptor = open(output, O_RDONLY | O_CLOEXEC)
                unlink(output)
                MainLoop.post {
                    media.exporting = false
                    switch result {
                    case .success(let joined) where descriptor >= 0:
                        let note = joined.skipped.isEmpty ? "" : "; \(joined.skipped.count) chunk(s) of another picture format left out"
                        logger.info("console: download ready, \(String(format: "%.1f", joined.duration)) s\(note)")
                        Self.send(descriptor, into: stream)
                    case .success:
                        stream.fail(status: 500, contentType: "application/json", body: failure("export_failed", "the joined file cannot be read", nil, nil))
                    case .failure(let problem):
                        if descriptor >= 0 { close(descriptor) }
                        logger.warning("console: the download could not be made: \(problem)")
                        stream.fail(status: 500, contentType: "application/json", body: failure("export_failed", "\(problem)", nil, nil))
                    }
                }
            }
        })
    }

    /// Streams a file from its descriptor, a piece whenever the client took the last, then closes it.
    static func send(_ descriptor: Int32, into stream: HTTPStream) {
        // The client may have gone while the file was made.
        guard !stream.isClosed else { close(descriptor); return }
        var done = false
        let finish = {
            guard !done else { return }
            done = true
            close(descriptor)
            stream.onWritable = nil
        }
        let pump = {
            while !done, !stream.isClosed, stream.isReady {
                var piece = Data(count: 256 * 1024)
                let n = piece.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard n > 0 else {
                    finish()
                    stream.finish()
                    return
                }
                stream.write(piece.prefix(n))
            }
        }
        stream.onClose = { finish() }
        stream.onWritable = pump
        pump()
    }

    static func stamp(_ time: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: time))
    }

    static func fileSafe(_ name: String) -> String {
        let safe = String(name.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" })
        return safe.isEmpty ? "allspark" : String(safe.prefix(40))
    }
}

/// The console's media work: its queues, what is in flight, and the thumbnail cache.
///
/// Threading: the counters and the cache belong to the main loop (jobs post back to it before
/// touching them); the queues run the jobs. Hence unchecked: it crosses to the queues only to come back.
final class MediaWork: @unchecked Sendable {
    static let maximumPendingThumbnails = 12
    static let exportPrefix = ".export-"
    /// One thumbnail at a time (a decoder each): the box's CPU belongs to recording and the privacy stage.
    let thumbnailQueue = DispatchQueue(label: "allspark.console.thumbnails", qos: .utility)
    let exportQueue = DispatchQueue(label: "allspark.console.export", qos: .utility)
    var pendingThumbnails = 0
    var exporting = false
    /// Bounded by count and bytes; the oldest used goes first.
    let thumbnails = BoundedCache(maximumCount: 400, maximumBytes: 8 << 20)

    /// Removes downloads left half-made by a crash (they are unlinked once made, so only those remain).
    static func removeLeftovers(in folder: String) {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix(exportPrefix) {
            unlink((folder as NSString).appendingPathComponent(name))
        }
    }
}

/// A small least-recently-used cache of data by key, bounded by count and total bytes.
final class BoundedCache {
    private let maximumCount: Int
    private let maximumBytes: Int
    private var entries: [String: Data] = [:]
    private var order: [String] = []
    private(set) var bytes = 0

    init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }

    var count: Int { entries.count }

    func value(for key: String) -> Data? {
        MainLoop.preconditionOnLoop()
        guard let data = entries[key] else { return nil }
        if let index = order.firstIndex(of: key) { order.remove(at: index) }
        order.append(key)
        return data
    }

    func insert(_ data: Data, for key: String) {
        MainLoop.preconditionOnLoop()
        if let old = entries.updateValue(data, forKey: key) {
            bytes -= old.count
            order.removeAll { $0 == key }
        }
        bytes += data.count
        order.append(key)
        while entries.count > maximumCount || bytes > maximumBytes, let oldest = order.first {
            order.removeFirst()
            if let gone = entries.removeValue(forKey: oldest) { bytes -= gone.count }
        }
    }
}
