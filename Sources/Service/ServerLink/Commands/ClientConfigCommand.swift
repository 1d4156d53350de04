import AllSparkProtocol
import Foundation
import RecorderCore

/// `{"type":"clientConfig","config":{…}}`, sent once at connect: applies what
/// the box allows to the running recorder (from the next chunk) and keeps the
/// server's values for the next start. The buffer and the chunk length are
/// taken within the box's `[server]` bounds, each clamp logged.
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
        // A clientConfig comes once per connection, so this is logged once per connection.
        for (key, value) in update.notApplicable.sorted(by: { $0.key < $1.key }) {
            logger.notice("clientConfig: \(key) \"\(value)\" is not applicable: this box has no such sensor; no files are produced")
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
        if let asked = update.chunkDurationMs {
            let allowed = bounds.clampChunkDuration(asked)
            if allowed != asked {
                logger.warning("clientConfig: videoChunkDurationMs \(asked) is outside what this box allows (server.min_chunk_ms \(bounds.minChunkMs) … server.max_chunk_ms \(bounds.maxChunkMs)); using \(allowed)")
                update.chunkDurationMs = allowed
            }
        }
        let changes = recorder.retune(update.applied(to: recorder.currentTuning))
        logger.notice("clientConfig applied: \(changes.isEmpty ? "nothing changed" : changes.joined(separator: "; "))")
        guard update.changesTuning, let settingsStore = context.settingsStore else { return }
        do {
            try settingsStore.save(recorder.currentTuning, fields: update.fields, server: context.server)
        } catch {
            logger.error("cannot keep the server's settings in \(settingsStore.url.path) for the next start: \(error)")
        }
    }
}

extension ClientConfigUpdate {
    /// The tuning after applying the accepted fields.
    func applied(to tuning: RecordingTuning) -> RecordingTuning {
        var tuning = tuning
        if let videoFormat, let format = RecorderCore.VideoFormat(rawValue: videoFormat.rawValue) { tuning.videoFormat = format }
        if let recordsVideo { tuning.recordsVideo = recordsVideo }
        if let chunkDurationMs { tuning.chunkDurationMs = chunkDurationMs }
        if let bufferMaxMB { tuning.bufferMaxMB = bufferMaxMB }
        if let framerate { tuning.framerate = framerate }
        if let audioFormat { tuning.audioFormat = audioFormat }
        if let timestampFormat { tuning.timestampFormat = timestampFormat }
        return tuning
    }

    /// The tuning fields this update sets, as the settings store names them.
    var fields: Set<ServerSettingsStore.Field> {
        var fields: Set<ServerSettingsStore.Field> = []
        if videoFormat != nil { fields.insert(.videoFormat) }
        if recordsVideo != nil { fields.insert(.recordsVideo) }
        if chunkDurationMs != nil { fields.insert(.chunkDuration) }
        if bufferMaxMB != nil { fields.insert(.bufferMax) }
        if framerate != nil { fields.insert(.framerate) }
        if audioFormat != nil { fields.insert(.audioFormat) }
        if timestampFormat != nil { fields.insert(.timestampFormat) }
        return fields
    }
}
