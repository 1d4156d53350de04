import AllSparkProtocol
import Foundation
import Logging
import RecorderCore
import SoupSupport

/// One connected channel to the server: introduces the device, dispatches
/// what the server sends (its commands to `Commands/`, its replies to the
/// reply ledger), and sends uploads and `chunkSaved` announcements so that
/// every reply can be attributed. A new connection gets a new session: it
/// owes no old replies.
///
/// Threading: main-loop thread only (see ServerLink.swift).
final class Session {
    let channel: LinkChannel
    private unowned let connection: Connection
    private weak var uploads: UploadQueue?
    private let announcements: HeldAnnouncements
    private let options: ServerLink.UploadOptions
    private let clock: LinkClock
    private let logger: Logger
    /// What the commands may touch, as things are when one arrives.
    private let context: () -> CommandContext

    /// Replies owed by the server on this connection.
    private(set) var ledger = ReplyLedger<String>()
    /// Runs out when the upload in flight got no settled reply in time.
    private var replyTimer: LinkTimer?
    /// The ping sent after the upload in flight's file, and which file it follows.
    private var pendingBarrier: (payload: String, file: String)?
    private var barrierCount = 0
    /// When the last upload metadata was sent (a server before 0.5 drops the connection right after it).
    private(set) var lastMetadataSent: Date?

    init(channel: LinkChannel, connection: Connection, uploads: UploadQueue?, announcements: HeldAnnouncements,
         options: ServerLink.UploadOptions, clock: LinkClock, logger: Logger, context: @escaping () -> CommandContext) {
        self.channel = channel
        self.connection = connection
        self.uploads = uploads
        self.announcements = announcements
        self.options = options
        self.clock = clock
        self.logger = logger
        self.context = context
    }

    /// The first message on a connection (it earns no reply), then what was held back.
    func introduce(as deviceName: String) {
        channel.send(text: ClientMessage.text(ClientMessage.ClientInfo(clientName: deviceName)))
        sendHeldAnnouncements()
    }

    /// Ends this session's channel; `midFile`: half a streamed file is on the wire, so a
    /// close frame cannot follow it, only an abrupt close.
    /// `chunkSaved` messages that got no reply go back to the front of the held ones, oldest
    /// first: the server may never have read them (one shutting down stops reading), and with
    /// its autoUpload an unread announcement is a chunk never asked for.
    func end(code: Int, reason: String, midFile: Bool) {
        let unanswered = ledger.unansweredAnnouncements
        if !unanswered.isEmpty {
            announcements.texts.insert(contentsOf: unanswered, at: 0)
            ledger = ReplyLedger()
            logger.notice("\(unanswered.count) chunkSaved message(s) got no reply before the connection ended; they are sent again after reconnecting")
        }
        replyTimer?.cancel()
        replyTimer = nil
        pendingBarrier = nil
        if midFile { channel.abort(reason: reason) }
        channel.close(code: code, reason: reason)   // nothing after an abort
    }

    /// Sends the `chunkSaved` messages held back, unless an upload is still owed its replies.
    func sendHeldAnnouncements() {
        guard channel.isOpen, !ledger.isWaitingForUpload else { return }
        // Oldest first, whatever order they were held in (an ending session puts its
        // unanswered ones back when newer ones may already wait).
        announcements.sortOldestFirst()
        for text in announcements.texts {
            channel.send(text: text)
            ledger.sent(.chunkSaved(text))
        }
        announcements.texts.removeAll()
    }

    // MARK: - Receiving

    func received(_ message: WebSocket.Message) {
        guard case .text(let text) = message else {
            logger.warning("server sent a binary message; ignored")
            return
        }
        switch ServerMessage.parse(text) {
        case .failure(let rejection):
            logger.warning("server message ignored: \(rejection)")
        case .success(.clientConfig(let update)):
            ClientConfigCommand(update: update).run(in: context())
            if let policy = CommunicationsPolicy.fromClientConfig(text) {
                for (medium, why) in policy.rejected.sorted(by: { $0.key < $1.key }) {
                    logger.warning("clientConfig: communicationsPolicy.\(loggable(medium)) rejected: \(why)")
                }
                connection.onCommunicationsPolicy?(policy)
            }
        case .success(.uploadTimeRange(let start, let end, let message)):
            UploadTimeRangeCommand(start: start, end: end, message: message).run(in: context())
        case .success(.record(let message, let duration, let autoUpload)):
            RecordCommand(message: message, duration: duration, autoUpload: autoUpload).run(in: context())
        case .success(.otherCommand(let name)):
            logger.notice("server command \"\(loggable(name))\" is not one this recorder knows; ignored")
        case .success(.status(let success, let message)):
            attribute(ledger.received(success: success, message: message),
                      detail: "\(success ? "success" : "error")\(message.map { ": \(loggable($0))" } ?? "")")
        }
    }

    /// A pong: if it is the barrier after an upload's file, every reply to that upload has come.
    func pong(_ payload: String) {
        guard let barrier = pendingBarrier, barrier.payload == payload else { return }
        pendingBarrier = nil
        attribute(ledger.barrier(after: barrier.file), detail: "")
    }

    /// Acts on what a reply (or the barrier after an upload) meant; `detail` is the reply, escaped, for the log.
    private func attribute(_ attribution: ReplyLedger<String>.Attribution, detail: String) {
        switch attribution {
        case .chunkSaved:
            // Old servers answer chunkSaved with "Unknown message type": expected, not a fault.
            logger.debug("server answered chunkSaved (\(detail))")
        case .upload(let file, let ok, let message):
            replyTimer?.cancel()
            replyTimer = nil
            if ok { connection.uploadReceived() }
            uploads?.finished(file, success: ok, message: message.map { loggable($0) })
            sendHeldAnnouncements()
        case .noted(let file):
            logger.debug("server replied to the upload of \(file) (\(detail)); settled once nothing more can belong to it")
        case .tailOfFailedUpload(let file):
            logger.debug("server's second error for the refused upload of \(file) (\(detail))")
        case .nothing:
            break
        case .untrusted(let why):
            connection.renew(because: "the server's replies no longer fit what was sent: \(why)\(detail.isEmpty ? "" : " (last: \(detail))")")
        }
    }

    // MARK: - Sending an upload

    /// Sends the metadata, then the file as one binary message, then a ping whose pong settles the upload.
    func sendUpload(_ chunk: UploadFile, file: OpenedFile) {
        // Only the name the server files it under follows server.file_names; the file on disk keeps its own.
        channel.send(text: ClientMessage.text(ClientMessage.UploadMetadata(
            filename: options.fileNames.wireName(chunk.file), filesize: chunk.size, mimetype: chunk.mimeType)))
        lastMetadataSent = clock.now
        ledger.sent(.upload(chunk.file))
        let bound = options.replyTimeout + Double(chunk.size) / options.replyBytesPerSecond
        replyTimer?.cancel()
        replyTimer = clock.after(bound) { [weak self] in
            guard let self, self === self.connection.session else { return }
            self.replyTimer = nil
            self.connection.renew(because: "no reply to the upload of \(chunk.file) within \(seconds(bound)) s")
        }
        connection.streamingFile = true
        let connection = connection, uploads = uploads, logger = logger
        channel.send(fileAt: file.reopenablePath) { [weak self, weak connection, weak uploads] result in
            withExtendedLifetime(file) {}   // the descriptor stays open until the file is sent
            guard let connection else { return }
            connection.streamingFile = false
            connection.heard()
            guard let self, self === connection.session else {
                uploads?.pump()
                return
            }
            switch result {
            case .success:
                // The server's replies to the upload come before its pong to this ping (it answers in
                // order): that pong settles the upload (ReplyLedger).
                self.barrierCount += 1
                let payload = "allspark-upload-\(self.barrierCount)"
                if self.channel.ping(payload: payload) { self.pendingBarrier = (payload, chunk.file) }
                uploads?.pump()
            case .failure(let error):
                // Half a frame may be on the wire: the shim has cut the connection (no close frame can
                // follow half a frame). Only a fresh connection is in a known state; the chunk is sent
                // again after reconnecting (a bounded number of times).
                logger.warning("sending \(chunk.file) failed (\(loggable(error.description))); the recorder dropped the connection and reconnects")
                // (No close frame: none can follow half a frame, and 1011 is a server's code: libsoup
                // refuses it from a client with a CRITICAL.)
                connection.cut(because: "sending \(chunk.file) failed")
            }
        }
    }
}
