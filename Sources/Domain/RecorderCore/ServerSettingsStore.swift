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
    public let url: URL
    private let folder: StorageFolder

    public init(storageDirectory: String) {
        folder = StorageFolder(URL(fileURLWithPath: storageDirectory))
        url = folder.directory.appendingPathComponent(Self.fileName)
    }

    /// The saved values; nil when none were saved or the file is unreadable
    /// or not a plain file (a damaged file must not stop the recorder: the
    /// config file applies).
    public func load() -> Saved? {
        guard let data = try? folder.read(Self.fileName) else { return nil }
        return try? JSONDecoder().decode(Saved.self, from: data)
    }

    /// Written to an exclusively created temporary file and renamed, so a
    /// crash leaves the old or the new file, never half of one, and a link
    /// planted under either name is replaced, never written through.
    public func save(_ tuning: RecordingTuning, server: String, at time: Double = Date().timeIntervalSince1970) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(Saved(tuning: tuning, server: server, savedAt: time))
        try FileManager.default.createDirectory(at: folder.directory, withIntermediateDirectories: true)
        try folder.writeAtomically(data, as: Self.fileName)
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
