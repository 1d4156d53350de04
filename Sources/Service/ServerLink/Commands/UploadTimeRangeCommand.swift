import AllSparkProtocol
import Foundation

/// `{"command":"uploadTimeRange","startTime":s,"endTime":s}` (and a local
/// user's upload request, and a record command's autoUpload): queues the
/// chunks overlapping the range, within how far into the future the box lets
/// a server reach; chunks still being recorded in it follow when finished.
struct UploadTimeRangeCommand {
    var start: Double
    var end: Double
    /// Why, for the log ("uploadTimeRange [a, b) "message"", "record command …").
    var reason: String
    /// The server's command, which may be its autoUpload (declined with `server.accept_auto_uploads = false`).
    var fromServer = false

    init(start: Double, end: Double, reason: String) {
        self.start = start
        self.end = end
        self.reason = reason
    }

    /// The server's command.
    init(start: Double, end: Double, message: String?) {
        self.init(start: start, end: end,
                  reason: "uploadTimeRange [\(seconds(start)), \(seconds(end)))\(message.map { " \"\(loggable($0))\"" } ?? "")")
        fromServer = true
    }

    func run(in context: CommandContext) {
        let logger = context.logger
        guard let uploads = context.uploads, let recorder = context.recorder else {
            logger.warning("\(reason): no recorder is attached to this link; nothing to upload")
            return
        }
        if fromServer, !context.acceptAutomaticUploads, uploads.isAutomaticRequest(start: start, end: end) {
            logger.notice("\(reason): the server's automatic request for the chunk just announced; declined (server.accept_auto_uploads = false)")
            return
        }
        let bounds = context.bounds
        let now = context.clock.now.timeIntervalSince1970
        let (range, clamped) = bounds.clampRange(start: start, end: end, now: now)
        guard let range else {
            logger.warning("\(reason): begins more than \(seconds(bounds.maxRequestFutureSeconds)) s from now (server.max_request_future_s); ignored")
            return
        }
        if clamped {
            logger.warning("\(reason): reaches \(seconds(end - now)) s into the future; only the next \(seconds(bounds.maxRequestFutureSeconds)) s are taken (server.max_request_future_s)")
        }
        uploads.request(from: range.start, to: range.end, recording: recorder.isCapturing,
                        chunkDuration: Double(recorder.currentTuning.chunkDurationMs) / 1000, reason: reason)
    }
}
