import AllSparkProtocol
import Foundation
import RecorderCore
import Storage

/// `{"type":"clientConfig","config":{…}}`, sent once at connect: hands what
/// the server asks to the one settings path (`SettingsKeeper`: checked, the
/// buffer and chunk length clamped to the box's `[server]` bounds, applied
/// from the next chunk, kept for the next start) and logs what became of it
/// in the server's own words.
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
        guard update.changesTuning else { return }
        guard let settings = context.settings else {
            return logger.info("clientConfig: the server's settings apply to a running recorder, not here")
        }
        let outcome = settings.apply(update.settingsChange, from: .server(context.server))
        for refusal in outcome.refused {
            logger.warning("clientConfig: rejected: \(refusal.message(key: ClientConfigUpdate.key(for: refusal.field)))")
        }
        for clamp in outcome.clamped {
            logger.warning("clientConfig: \(ClientConfigUpdate.key(for: clamp.field)) \(clamp.asked) is outside what this box allows (\(clamp.bounds)); using \(clamp.used)")
        }
        logger.notice("clientConfig applied: \(outcome.changes.isEmpty ? "nothing changed" : outcome.changes.joined(separator: "; "))")
    }
}

extension ClientConfigUpdate {
    /// The server's key for a setting.
    static func key(for field: SettingsField) -> String {
        switch field {
        case .videoFormat, .recordsVideo: return "videoFormat"
        case .chunkDuration: return "videoChunkDurationMs"
        case .bufferMax: return "videoBufferMaxMB"
        case .framerate: return "fps"
        case .audioFormat: return "audioFormat"
        case .timestampFormat: return "timestampFormat"
        }
    }

    /// The fields the server set, as a change of the recorder's settings (unchecked: `SettingsRules` checks).
    var settingsChange: SettingsChange {
        SettingsChange(videoFormat: videoFormat.flatMap { Storage.VideoFormat(rawValue: $0.rawValue) },
                       recordsVideo: recordsVideo, chunkDurationMs: chunkDurationMs, bufferMaxMB: bufferMaxMB,
                       framerate: framerate,
                       audioFormat: audioFormat.flatMap { Storage.AudioFormat(rawValue: $0.rawValue) },
                       timestampFormat: timestampFormat.flatMap { Storage.TimestampFormat(rawValue: $0.rawValue) })
    }

    /// The tuning after applying the fields the server set, unchecked.
    func applied(to tuning: RecordingTuning) -> RecordingTuning { settingsChange.applied(to: tuning) }
}
