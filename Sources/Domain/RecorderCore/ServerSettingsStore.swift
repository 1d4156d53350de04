import Foundation
import Storage

/// The values the AllSpark server last set with `clientConfig`, kept in
/// the storage folder (`server-settings.json`) so that a restart without
/// the server records the way the server asked. The user's config file is
/// never rewritten: these values are laid over it at start and on SIGHUP.
public struct ServerSettingsStore {
    /// The tuning fields a server can set.
    public enum Field: String, Codable, CaseIterable, Sendable {
        case videoFormat, recordsVideo, chunkDuration, bufferMax, framerate, audioFormat, timestampFormat
        /// What files written before `fields` was kept hold.
        public static let original: Set<Field> = [.videoFormat, .chunkDuration, .bufferMax]
    }

    public struct Saved: Codable, Equatable {
        public var tuning: RecordingTuning
        /// The fields a server set (only these are laid over the config: the others stay the
        /// config's own); nil in files written before it was kept: `Field.original`.
        public var fields: Set<Field>?
        /// Which server set them, and when (epoch s), for the log.
        public var server: String
        public var savedAt: Double
    }

    public static let fileName = StorageLayout.serverSettingsFileName
    private let file: KeptFile<Saved>
    public var url: URL { file.url }

    public init(storageDirectory: String) {
        file = KeptFile(storageDirectory: storageDirectory, name: Self.fileName)
    }

    /// The saved values; nil when none were saved or the file is unreadable
    /// or not a plain file (a damaged file must not stop the recorder: the
    /// config file applies).
    public func load() -> Saved? { file.load() }

    /// Keeps `tuning`; `fields`: what the server set now, added to what it (or another) set before.
    public func save(_ tuning: RecordingTuning, fields: Set<Field> = Field.original, server: String,
                     at time: Double = Date().timeIntervalSince1970) throws {
        let kept = load().map { $0.fields ?? Field.original } ?? []
        try file.save(Saved(tuning: tuning, fields: fields.union(kept), server: server, savedAt: time))
    }

    /// `config` with the saved server values laid over its tuning; the buffer and chunk length
    /// within the config's `[server]` bounds (a file written before them may hold any value).
    /// `clamped` hears of each kept value the bounds changed (for the log).
    public func applied(to config: RecorderConfig, clamped: (String) -> Void = { _ in }) -> RecorderConfig {
        guard let saved = load() else { return config }
        var config = config
        var tuning = saved.tuning
        let bounds = config.server.bounds
        let buffer = bounds.clampBuffer(tuning.bufferMaxMB), chunk = bounds.clampChunkDuration(tuning.chunkDurationMs)
        if buffer != tuning.bufferMaxMB {
            clamped("the kept buffer of \(tuning.bufferMaxMB) MB is outside server.min_buffer_mb \(bounds.minBufferMB) … server.max_buffer_mb \(bounds.maxBufferMB); using \(buffer) MB")
        }
        if chunk != tuning.chunkDurationMs {
            clamped("the kept chunk length of \(tuning.chunkDurationMs) ms is outside server.min_chunk_ms \(bounds.minChunkMs) … server.max_chunk_ms \(bounds.maxChunkMs); using \(chunk) ms")
        }
        tuning.bufferMaxMB = buffer
        tuning.chunkDurationMs = chunk
        for field in saved.fields ?? Field.original {
            switch field {
            case .videoFormat: config.recording.videoFormat = tuning.videoFormat
            case .recordsVideo: config.recording.recordsVideo = tuning.recordsVideo
            case .chunkDuration: config.recording.chunkDurationMs = tuning.chunkDurationMs
            case .bufferMax: config.recording.bufferMaxMB = tuning.bufferMaxMB
            case .framerate: config.recording.framerate = tuning.framerate
            case .audioFormat: config.recording.audioFormat = tuning.audioFormat
            case .timestampFormat: config.recording.timestampFormat = tuning.timestampFormat
            }
        }
        return config
    }
}
