import AllSparkProtocol
import Foundation
import Logging
import RecorderCore
import Storage

/// One file as its upload metadata names it: a chunk or one of its companions.
struct UploadFile: Equatable {
    /// The plain name inside the storage folder, sent as `filename`.
    var file: String
    var size: Int64
    var mimeType: String
}

/// Where the queue sends from: the server connection.
protocol UploadTransport: AnyObject {
    /// True while connected and able to send.
    var canSend: Bool { get }
    /// Sends the metadata and then the file as one binary message; the
    /// transport reports the outcome with `UploadQueue.finished`. `file` is
    /// the file already opened (and checked) through the storage folder:
    /// read it through its descriptor, keeping it alive until sent.
    func sendUpload(_ upload: UploadFile, file: OpenedFile) throws
}

/// Chunks the server asked for, sent one file at a time: owns an upload from
/// the request to the server's confirmed reply (the session attributes the
/// replies, the queue decides what they mean for the chunk).
///
/// - Asked-for chunks are pinned in the catalog, so retention cannot delete
///   them while they wait, and unpinned after success or final failure.
/// - A chunk already waiting or being sent is not queued again, nor one
///   this server received in the last `redeliveryAfter` seconds (ranges
///   asked for one after another overlap: "the last 5 minutes", then "the
///   last 10"); after that it is sent again, in case the server lost it.
/// - A range reaching into the chunk being written is remembered as a
///   *watch*: every chunk that finishes and overlaps it is queued, until a
///   finished chunk reaches the end of the range (or the watch expires).
/// - An error reply or a lost connection puts the chunk back at the front
///   for another attempt (bounded by `server.upload_attempts`); a file
///   larger than the server accepts fails at once with a clear message and
///   the queue moves on.
/// - A chunk the server received is followed at once by its companions that
///   exist in the storage folder as plain files (timestamps, audio, pose:
///   `Companion` order), each its own two-phase upload with its own
///   mimetype; the chunk stays pinned (and with it its companions, which
///   retention deletes only with their chunk) until the last is settled,
///   and `onFinished` reports the chunk then.
/// - With a rate cap, the next metadata waits until the bytes already sent
///   average no more than the cap since the first (a token bucket charged
///   with each file's size). A file itself is one WebSocket message and goes
///   at link speed: the cap holds on average over files, not within one.
/// - `isAutomaticRequest` recognises a server's autoUpload: a range equal to
///   exactly one chunk finished lately (the one its chunkSaved announced).
///
/// Threading: main-loop thread only, like the link that owns it.
final class UploadQueue {
    struct Item {
        var chunk: ChunkRecord
        /// Set for a companion of `chunk` (sent after it); nil for the chunk itself.
        var companion: Companion?
        var attempts = 0
        /// The size of the file as last sent.
        var size: Int64 = 0
        /// Why it was asked for, for the log ("uploadTimeRange …", "record …").
        var reason: String
        /// The file this item sends.
        var name: String { companion?.file ?? chunk.file }

        init(chunk: ChunkRecord, companion: Companion? = nil, reason: String) {
            self.chunk = chunk
            self.companion = companion
            self.reason = reason
        }
    }
    struct Watch {
        var from: Double
        var to: Double
        /// Wall-clock time after which no chunk will come for it any more.
        var expires: Double
        var reason: String
    }

    private let catalog: ChunkCatalog
    private let maxBytes: Int64
    private let maxAttempts: Int
    private let retryDelay: Double
    /// The rate cap (nil: none), and when the bytes sent so far are paid for at that rate.
    private let maxBytesPerSecond: Double?
    private var paidUntil: Date?
    private var paceTimer: LinkTimer?
    /// Chunks with companions still to settle: how many (the chunk's `onFinished` waits for them).
    private var openCompanions: [String: Int] = [:]
    /// Ranges of the chunks finished lately, newest last: what a server's autoUpload asks for.
    private var recentChunks: [(start: Double, end: Double, finished: Date)] = []
    private let clock: LinkClock
    private let logger: Logger
    weak var transport: UploadTransport?
    /// Each upload that ended: file name, and whether the server received it.
    var onFinished: ((String, Bool) -> Void)?

    private(set) var waiting: [Item] = []
    private(set) var inFlight: (item: Item, started: Date)?
    private(set) var watches: [Watch] = []
    private var retryTimer: LinkTimer?
    /// The last uploads that ended, oldest first (at most `historyLimit`), and totals since the start.
    private(set) var history: [UploadQueueSnapshot.Finished] = []
    private(set) var finishedOK = 0
    private(set) var finishedFailed = 0
    /// Enough for a person or a script to see what just happened; the log keeps the rest.
    static let historyLimit = 50
    /// Chunks the current server received, and when.
    private var delivered: [String: Date] = [:]
    private let redeliveryAfter: TimeInterval = 600

    init(catalog: ChunkCatalog, maxBytes: Int64, maxAttempts: Int, retryDelay: Double, maxBytesPerSecond: Double? = nil,
         clock: LinkClock, logger: Logger) {
        self.clock = clock
        self.catalog = catalog
        self.maxBytes = maxBytes
        self.maxAttempts = maxAttempts
        self.retryDelay = retryDelay
        self.maxBytesPerSecond = maxBytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        self.logger = logger
        if let rate = self.maxBytesPerSecond {
            logger.notice("uploads are capped at \(Int(rate * 8 / 1000)) kbit/s on average (server.max_upload_kbps); each file itself goes at link speed")
        }
    }

    var isIdle: Bool { waiting.isEmpty && inFlight == nil }

    /// How long ago a finished chunk may be for a request of exactly its range to count as the
    /// server's autoUpload (it comes right after the reply to the chunkSaved, which can be
    /// held back by an upload in flight or sent again after a reconnect).
    static let automaticRequestWindow: TimeInterval = 600
    private static let recentChunkLimit = 256

    /// How far a requested range's ends may miss a chunk boundary by rounding alone: a
    /// millisecond, well below a frame (4 ms at 240 fps). Times come back from the server's
    /// JSON a few microseconds off (Python prints 17 digits, JSONSerialization on Linux
    /// keeps about 15: …411.6669254 → …411.666926), and a range ending 1 µs past its chunk
    /// would otherwise overlap the next one, wait for it and upload it too.
    static let rangeTolerance: Double = 0.001

    /// `[from, to)` narrowed by `rangeTolerance` at both ends (a range too short for that is kept as asked).
    static func withoutRoundingSlack(from: Double, to: Double) -> (Double, Double) {
        guard to - from > 4 * rangeTolerance else { return (from, to) }
        return (from + rangeTolerance, to - rangeTolerance)
    }

    private static func overlaps(_ chunk: ChunkRecord, _ watch: Watch) -> Bool {
        let (from, to) = withoutRoundingSlack(from: watch.from, to: watch.to)
        return chunk.overlaps(from: from, to: to)
    }

    /// True when `[start, end)` is exactly the range of one chunk finished lately: the request
    /// a server's autoUpload makes after that chunk's `chunkSaved` (an operator asks for time
    /// ranges, which match a chunk's to the millisecond only by chance).
    func isAutomaticRequest(start: Double, end: Double) -> Bool {
        let now = clock.now
        return recentChunks.contains {
            abs($0.start - start) < Self.rangeTolerance && abs($0.end - end) < Self.rangeTolerance
                && now.timeIntervalSince($0.finished) <= Self.automaticRequestWindow
        }
    }

    /// Queues the finished chunks overlapping `[from, to)`; with `recording`,
    /// chunks still to finish that overlap it follow when they are finished.
    func request(from asked: Double, to askedEnd: Double, recording: Bool, chunkDuration: Double, reason: String) {
        let (from, to) = Self.withoutRoundingSlack(from: asked, to: askedEnd)
        let finished = catalog.chunks(from: from, to: to)
        var queued = 0, already = 0, bytes: Int64 = 0
        for chunk in finished {
            if enqueue(chunk, reason: reason) { queued += 1; bytes += chunk.size } else { already += 1 }
        }
        let deliveredText = already > 0 ? ", \(already) already queued or recently received by this server" : ""
        let newestEnd = catalog.all.map(\.end).max() ?? -.infinity
        let waitsForMore = recording && to > newestEnd
        if waitsForMore {
            // The chunk being written (and, for a range in the future, the ones after it) will overlap.
            let expires = max(to, clock.now.timeIntervalSince1970) + 2 * chunkDuration + 30
            // Kept as asked (the queue shows it); compared with the tolerance when chunks finish.
            watches.append(Watch(from: asked, to: askedEnd, expires: expires, reason: reason))
        }
        let summary = "\(reason): \(queued) chunk(s) queued (\(String(format: "%.1f", Double(bytes) / 1_048_576)) MiB)"
            + deliveredText
            + (waitsForMore ? "; chunks still being recorded in the range follow when they are finished" : "")
            + (finished.isEmpty && !waitsForMore ? "; no recorded video overlaps this range" : "")
        logger.notice("\(summary)")
        pump()
    }

    /// A chunk was finished and catalogued: queue it if a watch covers it.
    func chunkFinished(_ chunk: ChunkRecord) {
        recentChunks.append((chunk.start, chunk.end, clock.now))
        if recentChunks.count > Self.recentChunkLimit { recentChunks.removeFirst(recentChunks.count - Self.recentChunkLimit) }
        let now = clock.now.timeIntervalSince1970
        for watch in watches where Self.overlaps(chunk, watch) {
            if enqueue(chunk, reason: watch.reason) {
                logger.info("\(watch.reason): \(chunk.file) finished and queued")
            }
        }
        watches.removeAll { watch in
            if chunk.end >= Self.withoutRoundingSlack(from: watch.from, to: watch.to).1 { return true }
            if now > watch.expires {
                logger.warning("\(watch.reason): stopped waiting for chunks up to \(watch.to); none came in time")
                return true
            }
            return false
        }
        pump()
    }

    /// The recorder stopped: no more chunks will finish for the watches.
    func recordingEnded() { watches.removeAll() }

    /// Returns false if the chunk was already waiting, being sent, or recently received.
    private func enqueue(_ chunk: ChunkRecord, reason: String) -> Bool {
        if inFlight?.item.name == chunk.file || waiting.contains(where: { $0.name == chunk.file }) {
            return false
        }
        if let when = delivered[chunk.file], clock.now.timeIntervalSince(when) < redeliveryAfter {
            return false
        }
        catalog.pin(chunk.file)
        waiting.append(Item(chunk: chunk, reason: reason))
        return true
    }

    /// Sends the next file when connected, nothing is in flight and the rate cap allows.
    func pump() {
        guard inFlight == nil, retryTimer == nil, paceTimer == nil, let transport, transport.canSend else { return }
        while !waiting.isEmpty {
            if let paidUntil, paidUntil > clock.now {
                let wait = paidUntil.timeIntervalSince(clock.now)
                logger.debug("upload rate cap: the next upload waits \(seconds(wait)) s (server.max_upload_kbps)")
                paceTimer = clock.after(wait) { [weak self] in
                    self?.paceTimer = nil
                    self?.pump()
                }
                return
            }
            var item = waiting.removeFirst()
            // Only a plain file inside the storage folder, opened without following links.
            let file: OpenedFile
            do {
                file = try item.companion.map { try catalog.folder.open($0.file) } ?? catalog.open(item.chunk)
            } catch {
                logger.error("upload of \(StorageFolder.printable(item.name)) failed: \(error)")
                giveUp(item, why: "\(error)")
                continue
            }
            let size = file.size
            // Servers refuse a message of max_msg_size bytes or more (aiohttp: `>=`), so the cap itself is too big.
            guard size < maxBytes else {
                let why = "\(size) bytes is more than the server accepts in one message (at most \(maxBytes - 1) bytes: server.max_upload_mb = \(maxBytes / 1_048_576))"
                logger.error("upload of \(item.name) failed: \(why); shorten recording.chunk_duration_ms or lower the bitrate")
                giveUp(item, why: why)
                continue
            }
            if item.companion == nil { item.chunk.size = size }
            item.size = size
            item.attempts += 1
            let upload = UploadFile(file: item.name, size: size,
                                    mimeType: item.companion?.mimeType ?? item.chunk.format.mimeType)
            do {
                inFlight = (item, clock.now)
                logger.info("uploading \(item.name) (\(size) bytes, attempt \(item.attempts) of \(maxAttempts))")
                try transport.sendUpload(upload, file: file)
                charge(size)
            } catch {
                inFlight = nil
                logger.error("upload of \(item.name) could not be sent: \(error)")
                retryOrGiveUp(item, why: "\(error)")
            }
            return
        }
    }

    /// The token bucket: `bytes` went out now; the next file may start once they are paid for
    /// at the cap (an idle link saves up no credit: a burst after a pause is one file).
    private func charge(_ bytes: Int64) {
        guard let rate = maxBytesPerSecond else { return }
        let from = max(paidUntil ?? clock.now, clock.now)
        paidUntil = from.addingTimeInterval(Double(bytes) / rate)
    }

    /// The server's reply to the upload in flight.
    func finished(_ file: String, success: Bool, message: String?) {
        guard let (item, started) = inFlight, item.name == file else {
            logger.warning("a reply for the upload of \(file) came when it was no longer being sent; ignored")
            return
        }
        inFlight = nil
        if success {
            let seconds = max(clock.now.timeIntervalSince(started), 0.001)
            logger.notice("uploaded \(file) (\(item.size) bytes in \(String(format: "%.2f", seconds)) s, \(String(format: "%.1f", Double(item.size) / 1_048_576 / seconds)) MiB/s) for \(item.reason)")
            delivered[file] = clock.now
            record(file, ok: true, message: message)
            if item.companion == nil { queueCompanions(of: item) } else { companionSettled(item) }
            pump()
        } else {
            logger.warning("the server refused the upload of \(file): \(message ?? "no reason given")")
            retryOrGiveUp(item, why: message ?? "refused")
        }
    }

    /// The chunk arrived: its companions that exist follow it, before anything else; the chunk's
    /// pin is handed on to them.
    private func queueCompanions(of item: Item) {
        var companions: [Item] = []
        for companion in Companion.candidates(forChunk: item.chunk.file) {
            switch catalog.folder.entry(companion.file) {
            case .missing:
                continue
            case .notAPlainFile(let kind):
                logger.warning("\(StorageFolder.printable(companion.file)) is \(kind), not a plain file; not uploaded")
                continue
            case .file:
                catalog.pin(item.chunk.file)
                companions.append(Item(chunk: item.chunk, companion: companion, reason: item.reason))
            }
        }
        catalog.unpin(item.chunk.file)
        guard !companions.isEmpty else {
            onFinished?(item.chunk.file, true)
            return
        }
        openCompanions[item.chunk.file] = companions.count
        waiting.insert(contentsOf: companions, at: 0)
    }

    /// A companion was received or given up: its chunk's pin goes; the last one reports the chunk.
    private func companionSettled(_ item: Item) {
        catalog.unpin(item.chunk.file)
        let left = (openCompanions[item.chunk.file] ?? 1) - 1
        openCompanions[item.chunk.file] = left > 0 ? left : nil
        if left <= 0 { onFinished?(item.chunk.file, true) }
    }

    /// Another server: what the previous one received says nothing about this one.
    func serverChanged() { delivered.removeAll() }

    /// The connection was lost: what was in flight is sent again after reconnecting.
    func connectionLost() {
        guard let (item, _) = inFlight else { return }
        inFlight = nil
        logger.warning("the connection was lost while uploading \(item.name); it is sent again after reconnecting")
        retryOrGiveUp(item, why: "connection lost", delay: 0)
    }

    private func retryOrGiveUp(_ item: Item, why: String, delay: Double? = nil) {
        guard item.attempts < maxAttempts else {
            logger.error("upload of \(item.name) given up after \(item.attempts) attempts (last: \(why))")
            giveUp(item, why: "given up after \(item.attempts) attempt(s) (last: \(why))")
            pump()
            return
        }
        waiting.insert(item, at: 0)
        let wait = delay ?? retryDelay
        guard wait > 0 else { pump(); return }
        retryTimer = clock.after(wait) { [weak self] in
            self?.retryTimer = nil
            self?.pump()
        }
    }

    private func giveUp(_ item: Item, why: String) {
        record(item.name, ok: false, message: why)
        if item.companion != nil {
            companionSettled(item)   // the chunk itself arrived
        } else {
            catalog.unpin(item.chunk.file)
            onFinished?(item.chunk.file, false)
        }
    }

    private func record(_ file: String, ok: Bool, message: String?) {
        if ok { finishedOK += 1 } else { finishedFailed += 1 }
        history.append(.init(name: file, ok: ok, at: clock.now, message: message))
        if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
    }

    var snapshot: UploadQueueSnapshot {
        UploadQueueSnapshot(
            inFlight: inFlight.map { .init(name: $0.item.name, reason: $0.item.reason, attempt: $0.item.attempts, since: $0.started) },
            waiting: waiting.map { .init(name: $0.name, reason: $0.reason, attempts: $0.attempts) },
            watches: watches.map { .init(from: Date(timeIntervalSince1970: $0.from), to: Date(timeIntervalSince1970: $0.to), reason: $0.reason) },
            finished: history, finishedOK: finishedOK, finishedFailed: finishedFailed)
    }
}

/// What the upload queue is doing, copied out for status displays (the
/// console's `GET /api/v1/uploads`, metrics). A value: it does not change
/// after it is taken.
public struct UploadQueueSnapshot: Equatable, Sendable {
    public struct InFlight: Equatable, Sendable {
        /// The chunk's file name.
        public var name: String
        public var reason: String
        /// 1 for the first attempt.
        public var attempt: Int
        public var since: Date
    }
    public struct Waiting: Equatable, Sendable {
        public var name: String
        public var reason: String
        /// Attempts already made (0 until it is first sent).
        public var attempts: Int
    }
    /// A range still being recorded: chunks that finish in it are queued.
    public struct Watch: Equatable, Sendable {
        public var from: Date
        public var to: Date
        public var reason: String
    }
    public struct Finished: Equatable, Sendable {
        public var name: String
        /// True when the server confirmed it received the chunk.
        public var ok: Bool
        public var at: Date
        /// The server's word, or why the upload was given up.
        public var message: String?
    }
    public var inFlight: InFlight?
    public var waiting: [Waiting]
    public var watches: [Watch]
    /// The last uploads that ended, oldest first (a bounded history).
    public var finished: [Finished]
    /// Uploads that ended since the link started, by outcome.
    public var finishedOK: Int
    public var finishedFailed: Int

    public static let empty = UploadQueueSnapshot(inFlight: nil, waiting: [], watches: [], finished: [], finishedOK: 0, finishedFailed: 0)
}
