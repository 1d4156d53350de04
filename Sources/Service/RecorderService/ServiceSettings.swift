import Foundation
import Logging
import RecorderCore

/// Where the service's settings come from: the config file and `--set`
/// overrides, with the values the AllSpark server last set and the server
/// host chosen in the console laid over them (kept in the storage folder;
/// the file itself is never rewritten).
///
/// The running values are owned by the recorder (`Recorder.config`,
/// `Recorder.currentTuning`); this only reads them in, at start and at reload.
public struct ServiceSettings {
    public let configFile: String
    public let overrides: [String]

    public init(configFile: String, overrides: [String] = []) {
        self.configFile = configFile
        self.overrides = overrides
    }

    /// The file's config, with the server's last settings over it; logs when they differ from the file.
    public func load(logger: Logger) throws -> RecorderConfig {
        let fromFile = try ConfigLoader.load(file: configFile, overrides: overrides)
        return withServerLink(withServerSettings(fromFile, logger: logger), logger: logger)
    }

    private func withServerSettings(_ fromFile: RecorderConfig, logger: Logger) -> RecorderConfig {
        let store = ServerSettingsStore(storageDirectory: fromFile.recording.storageDirectory)
        guard let saved = store.load() else { return fromFile }
        let merged = store.applied(to: fromFile) { logger.warning("server settings in \(store.url.path): \($0)") }
        if merged.tuning != fromFile.tuning {
            logger.notice("using the settings server \(saved.server) sent (\(merged.tuning.videoFormat.rawValue), \(merged.tuning.chunkDurationMs) ms chunks, \(merged.tuning.bufferMaxMB) MB buffer) over \(configFile); delete \(store.url.path) to go back to the file's")
        }
        return merged
    }

    /// The server host and verify_tls chosen in the console, over the file's `[server]`.
    private func withServerLink(_ config: RecorderConfig, logger: Logger) -> RecorderConfig {
        let store = ServerLinkStore(storageDirectory: config.recording.storageDirectory)
        guard let saved = store.load() else { return config }
        let merged = store.applied(to: config)
        if merged.server != config.server {
            let host = saved.host.isEmpty ? "no server.host" : "server.host \"\(saved.host)\""
            logger.notice("using \(host), verify_tls = \(saved.verifyTLS) as set by \(saved.by) over \(configFile); delete \(store.url.path) to go back to the file's")
        }
        return merged
    }
}
