import AllSparkProtocol
import Foundation
import RecorderCore

/// `{"type":"clientConfig","config":{…}}`, sent once at connect: applies what
/// the box allows to the running recorder (from the next chunk) and keeps the
/// server's container, chunk length and buffer for the next start.
struct ClientConfigCommand {
    var update: ClientConfigUpdate

    func run(in context: CommandContext) {
        let logger = context.logger
        for (field, reason) in update.rejected.sorted(by: { $0.key < $1.key }) {
            logger.warning("clientConfig: \(loggable(field)) rejected: \(reason)")
        }
        if !update.ignoredKeys.isEmpty {
            logger.debug("clientConfig: ignoring keys this recorder does not use: \(loggable(update.ignoredKeys.joined(separator: ", ")))")
        }
        guard let recorder = context.recorder else { return }
        var update = update
        let bounds = context.bounds
        if let asked = update.bufferMaxMB {
            let allowed = bounds.clampBuffer(asked)
            if allowed != asked {
                logger.warning("clientConfig: videoBufferMaxMB \(asked) is outside what this box allows (server.min_buffer_mb \(bounds.minBufferMB) … server.max_buffer_mb \(bounds.maxBufferMB)); using \(allowed)")
                update.bufferMaxMB = allowed
            }
        }
        let changes = recorder.retune(update.applied(to: recorder.currentTuning))
        logger.notice("clientConfig applied: \(changes.isEmpty ? "nothing changed" : changes.joined(separator: "; "))")
        guard update.videoFormat != nil || update.chunkDurationMs != nil || update.bufferMaxMB != nil,
              let settingsStore = context.settingsStore else { return }
        do {
            try settingsStore.save(recorder.currentTuning, server: context.server)
        } catch {
            logger.error("cannot keep the server's settings in \(settingsStore.url.path) for the next start: \(error)")
        }
    }
}

extension ClientConfigUpdate {
    /// The tuning after applying the accepted fields.
    func applied(to tuning: RecordingTuning) -> RecordingTuning {
        RecordingTuning(videoFormat: videoFormat.flatMap { RecorderCore.VideoFormat(rawValue: $0.rawValue) } ?? tuning.videoFormat,
                        chunkDurationMs: chunkDurationMs ?? tuning.chunkDurationMs,
                        bufferMaxMB: bufferMaxMB ?? tuning.bufferMaxMB)
    }
}
