import AllSparkProtocol
import Foundation

/// `{"command":"record",…}`: restarts capture if it is waiting to retry; with
/// `autoUpload` and a `duration`, uploads the coming seconds (within the
/// longest the box allows).
struct RecordCommand {
    var message: String?
    var duration: Double?
    var autoUpload: Bool

    func run(in context: CommandContext) {
        let logger = context.logger
        let text = message.map { ": \"\(loggable($0))\"" } ?? ""
        if context.recorder?.resumeIfWaiting() == true {
            logger.notice("record command from the server\(text); capture was waiting to retry and restarts now")
        } else {
            logger.notice("record command from the server\(text); the recorder is already recording")
        }
        guard autoUpload, let asked = duration else { return }
        let duration = context.bounds.clampRecordDuration(asked)
        if duration < asked {
            logger.warning("record command asks for \(seconds(asked)) s with autoUpload; only \(seconds(duration)) s are taken (server.max_record_duration_s)")
        }
        let now = context.clock.now.timeIntervalSince1970
        UploadTimeRangeCommand(start: now, end: now + duration,
                               reason: "record command (autoUpload of the next \(seconds(duration)) s)").run(in: context)
    }
}
