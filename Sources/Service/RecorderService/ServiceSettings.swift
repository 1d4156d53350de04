import Foundation
import Logging
import RecorderCore

/// Where the service's settings come from: the config file and `--set`
/// overrides, with the recording settings a server or the console set while
/// running and the server host chosen in the console laid over them (kept in
/// the storage folder; the file itself is never rewritten). docs/settings.md.
///
/// While running, the recorder owns the recording settings
/// (`Recorder.currentTuning`) and every change goes through
/// `RecorderService.apply`; this only reads them in, at start and at reload.
public struct ServiceSettings {
    public let configFile: String
    public let overrides: [String]

    public init(configFile: String, overrides: [String] = []) {
        self.configFile = configFile
        self.overrides = overrides
    }

    /// The file's config with the server host chosen in the console over it, but not the kept
    /// recording settings: what the file says (a reload compares it with the last reading).
    public func loadFile(logger: Logger) throws -> RecorderConfig {
        let fromFile = try ConfigLoader.load(file: configFile, overrides: overrides)
        return withServerLink(fromFile, logger: logger)
    }

    /// The config a start uses: the file's, with the kept recording settings laid over it.
    public func load(logger: Logger) throws -> RecorderConfig {
        withKeptSettings(try loadFile(logger: logger), logger: logger)
    }

    /// `fromFile` with the kept settings laid over it through `SettingsRules`, each with the bounds of
    /// who set it (a server's within `[server]`, a local user's within the hard limits): what was
    /// accepted while running applies again. A kept value the file changed since was set later in the
    /// file, and the file's applies. Each difference is logged.
    func withKeptSettings(_ fromFile: RecorderConfig, logger: Logger) -> RecorderConfig {
        let store = ServerSettingsStore(storageDirectory: fromFile.recording.storageDirectory)
        guard let saved = store.load() else { return fromFile }
        let config = store.applied(to: fromFile) { logger.warning("settings in \(store.url.path): \($0)") }
        if config.tuning != fromFile.tuning {
            logger.notice("using the settings set while running (last by \(saved.server): \(config.tuning.videoFormat.rawValue), \(config.tuning.chunkDurationMs) ms chunks, \(config.tuning.bufferMaxMB) MB buffer) over \(configFile); delete \(store.url.path) to go back to the file's")
        }
        return config
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
