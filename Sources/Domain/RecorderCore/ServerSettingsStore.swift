import Foundation
import Logging
import Storage

/// The recording settings changed while running, by an AllSpark server
/// (`clientConfig`) or a local user (the console), kept in the storage folder
/// (`server-settings.json`) so that a restart records the way they were last
/// set. The user's config file is never rewritten: at start these values are
/// laid over it (`ServiceSettings`) through `SettingsRules`, with the bounds
/// of whoever set each one, so what was accepted is what applies again.
/// Only `SettingsKeeper` writes it (Settings.swift).
public struct ServerSettingsStore {
    /// The tuning fields kept here.
    public typealias Field = SettingsField

    public struct Saved: Codable, Equatable {
        public var tuning: RecordingTuning
        /// The fields set while running (only these are laid over the config: the others stay the
        /// config's own); nil in files written before it was kept: `original`.
        public var fields: Set<Field>?
        /// Of `fields`, those a local user set last (held to the config's hard limits, not to
        /// `[server]`); nil in files written before: only "the console" marks its own.
        public var localFields: Set<Field>?
        /// The config file's values when these were kept: a field whose file value differs now was
        /// edited in the file since, and the file wins (nil: not known, the kept value wins).
        public var fileTuning: RecordingTuning?
        /// Who set them last, and when (epoch s), for the log.
        public var server: String
        public var savedAt: Double
    }

    /// What files written before `fields` was kept hold.
    public static let original: Set<Field> = [.videoFormat, .chunkDuration, .bufferMax]
    /// The name the console's changes were kept under before `localFields`.
    static let legacyConsoleName = "the console"

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

    /// Keeps `change` (already checked and applied) as set by `source`, over what was kept before.
    /// The config file's own values are not kept: a change from the file drops what was kept for
    /// those fields (the file holds them now).
    public func keep(_ change: SettingsChange, from source: SettingsSource, now current: RecordingTuning,
                     fileTuning: RecordingTuning?, at time: Double = Date().timeIntervalSince1970) throws {
        let before = load()
        var fields = before.map { $0.fields ?? Self.original } ?? []
        var local = before.map { Self.localFields(of: $0) } ?? []
        if let fileTuning, let baseline = before?.fileTuning {
            // Fields edited in the file since they were kept: the file won at start; they stay the file's.
            let newer = SettingsChange.difference(from: baseline, to: fileTuning).fields
            fields.subtract(newer)
            local.subtract(newer)
        }
        switch source {
        case .configFile:
            fields.subtract(change.fields)
            local.subtract(change.fields)
            // Nothing kept: nothing to write (and no file to make).
            guard before != nil else { return }
        case .local:
            fields.formUnion(change.fields)
            local.formUnion(change.fields)
        case .server:
            fields.formUnion(change.fields)
            local.subtract(change.fields)
        }
        // `current` holds exactly what was applied for the changed fields (the others are not laid over anything).
        try file.save(Saved(tuning: current, fields: fields, localFields: local, fileTuning: fileTuning ?? before?.fileTuning,
                            server: source == .configFile ? (before?.server ?? source.setter) : source.setter, savedAt: time))
    }

    static func localFields(of saved: Saved) -> Set<Field> {
        saved.localFields ?? (saved.server == legacyConsoleName ? saved.fields ?? original : [])
    }

    /// The kept changes by who set them (local user, server), each to be checked with that source's
    /// bounds; fields the file changed since they were kept are left out (the file is newer).
    public func kept(over fileTuning: RecordingTuning) -> (local: SettingsChange, server: SettingsChange, fileNewer: Set<Field>)? {
        guard let saved = load() else { return nil }
        let fields = saved.fields ?? Self.original
        var fileNewer: Set<Field> = []
        if let baseline = saved.fileTuning {
            fileNewer = SettingsChange.difference(from: baseline, to: fileTuning).fields.intersection(fields)
        }
        let local = Self.localFields(of: saved).intersection(fields).subtracting(fileNewer)
        let server = fields.subtracting(local).subtracting(fileNewer)
        return (SettingsChange(saved.tuning, fields: local), SettingsChange(saved.tuning, fields: server), fileNewer)
    }

    /// `config` (the file's) with the kept values laid over its tuning through `SettingsRules`, each
    /// with the bounds of who set it: a server's within the config's `[server]` bounds (a file kept
    /// before them, or before the bounds were narrowed, may hold any value), a local user's within the
    /// hard limits. `note` hears of each value not used as kept, and why (for the log).
    public func applied(to config: RecorderConfig, note: (String) -> Void = { _ in }) -> RecorderConfig {
        guard let saved = load(), let kept = kept(over: config.tuning) else { return config }
        var config = config
        for field in kept.fileNewer.sorted(by: { $0.rawValue < $1.rawValue }) {
            note("\(field.configKey) changed in the config file since \(saved.server) set it: using the file's")
        }
        for (change, source) in [(kept.local, SettingsSource.local(saved.server)), (kept.server, .server(saved.server))] where !change.isEmpty {
            let checked = SettingsRules.check(change, from: source, bounds: config.server.bounds)
            for refusal in checked.refused { note("the kept \(refusal); using the file's") }
            for clamp in checked.clamped { note("the kept \(clamp)") }
            config.tuning = checked.accepted.applied(to: config.tuning)
        }
        return config
    }
}
