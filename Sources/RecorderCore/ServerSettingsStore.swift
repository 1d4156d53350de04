import Foundation

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

    public static let fileName = "server-settings.json"
    public let url: URL

    public init(storageDirectory: String) {
        url = URL(fileURLWithPath: storageDirectory).appendingPathComponent(Self.fileName)
    }

    /// The saved values; nil when none were saved or the file is unreadable
    /// (a damaged file must not stop the recorder: the config file applies).
    public func load() -> Saved? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(Saved.self, from: data)
    }

    /// Written to a temporary file and renamed, so a crash leaves the old or the new file, never half of one.
    public func save(_ tuning: RecordingTuning, server: String, at time: Double = Date().timeIntervalSince1970) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Saved(tuning: tuning, server: server, savedAt: time))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = url.appendingPathExtension("tmp")
        try data.write(to: temporary)
        if rename(temporary.path, url.path) != 0 {
            throw ConfigError("cannot rename \(temporary.path) to \(url.path): \(String(cString: strerror(errno)))")
        }
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
