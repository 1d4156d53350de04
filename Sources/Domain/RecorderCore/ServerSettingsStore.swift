import Foundation
import Storage

/// The values the AllSpark server last set with `clientConfig`, kept in
/// the storage folder (`server-settings.json`) so that a restart without
/// the server records the way the server asked. The user's config file is
/// never rewritten: these values are laid over it at start and on SIGHUP.
public struct ServerSettingsStore {
    public struct Saved: Codable, Equatable {
        public var tuning: RecordingTuning
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

    public func save(_ tuning: RecordingTuning, server: String, at time: Double = Date().timeIntervalSince1970) throws {
        try file.save(Saved(tuning: tuning, server: server, savedAt: time))
    }

    /// `config` with the saved server values laid over its tuning; the buffer within the
    /// config's `[server]` bounds (a file written before them may hold any value).
    public func applied(to config: RecorderConfig) -> RecorderConfig {
        guard let saved = load() else { return config }
        var config = config
        config.recording.videoFormat = saved.tuning.videoFormat
        config.recording.chunkDurationMs = saved.tuning.chunkDurationMs
        config.recording.bufferMaxMB = config.server.bounds.clampBuffer(saved.tuning.bufferMaxMB)
        return config
    }
}
