import Foundation
import Logging
import Storage

// One path for every recording setting (issue 23). Whoever changes a setting
// (the config file at start-up or on SIGHUP, a user in the console, an
// AllSpark server's clientConfig) hands a `SettingsChange` to one
// `SettingsKeeper`, which
//   1. checks it with `SettingsRules` (the same refusal, word for word, for the
//      same bad value from any source; a server's values clamped to `[server]`),
//   2. applies what was accepted to the running recorder (its `retune`),
//   3. keeps exactly that in `server-settings.json` with who set it, and
//   4. reports what was clamped or refused and why (`SettingsOutcome`).
// At the next start `ServiceSettings` lays the kept values over the file
// through the same `SettingsRules`, with the bounds of the source that set
// them, so an accepted value is the value in effect after a restart.
// docs/settings.md says the same for users.

/// A recording setting that can change while the recorder runs.
public enum SettingsField: String, Codable, CaseIterable, Sendable {
    case videoFormat, recordsVideo, chunkDuration, bufferMax, framerate, audioFormat, timestampFormat

    /// The key of the config file that holds it (errors and logs name settings this way).
    public var configKey: String {
        switch self {
        case .videoFormat: return "recording.video_format"
        case .recordsVideo: return "recording.video_format"   // a server's "none"; the file has no such key
        case .chunkDuration: return "recording.chunk_duration_ms"
        case .bufferMax: return "recording.buffer_max_mb"
        case .framerate: return "pipeline.vars.framerate"
        case .audioFormat: return "recording.audio_format"
        case .timestampFormat: return "recording.timestamp_format"
        }
    }
}

/// Who asks for a change; decides the bounds it is held to (docs/settings.md).
public enum SettingsSource: Equatable, Sendable, CustomStringConvertible {
    /// The config file and `--set`, at start-up and on SIGHUP.
    case configFile
    /// A local user: the console (who, for the log: "the console from 192.168.1.20").
    case local(String)
    /// An AllSpark server's clientConfig (its address).
    case server(String)

    /// A local source is held to the config's hard limits (`ConfigLimits`), as the file is;
    /// a server to the box's `[server]` bounds, which the user set for servers.
    public var isServer: Bool { if case .server = self { return true } else { return false } }

    /// Who set it, as kept with the value: the server's address, the local user's name.
    public var setter: String {
        switch self {
        case .configFile: return "the config file"
        case .local(let who): return who
        case .server(let address): return address
        }
    }

    public var description: String {
        switch self {
        case .configFile: return "the config file"
        case .local(let who): return who
        case .server(let address): return "server \(address)"
        }
    }
}

/// A change of some recording settings; nil fields stay as they are.
public struct SettingsChange: Equatable, Sendable {
    public var videoFormat: VideoFormat?
    /// False: record no video (a server's `videoFormat` "none").
    public var recordsVideo: Bool?
    public var chunkDurationMs: Int?
    public var bufferMaxMB: Int?
    public var framerate: Double?
    public var audioFormat: AudioFormat?
    public var timestampFormat: TimestampFormat?

    public init(videoFormat: VideoFormat? = nil, recordsVideo: Bool? = nil, chunkDurationMs: Int? = nil, bufferMaxMB: Int? = nil,
                framerate: Double? = nil, audioFormat: AudioFormat? = nil, timestampFormat: TimestampFormat? = nil) {
        self.videoFormat = videoFormat
        self.recordsVideo = recordsVideo
        self.chunkDurationMs = chunkDurationMs
        self.bufferMaxMB = bufferMaxMB
        self.framerate = framerate
        self.audioFormat = audioFormat
        self.timestampFormat = timestampFormat
    }

    /// The fields of `tuning` named in `fields`, as a change.
    public init(_ tuning: RecordingTuning, fields: Set<SettingsField>) {
        self.init()
        for field in fields {
            switch field {
            case .videoFormat: videoFormat = tuning.videoFormat
            case .recordsVideo: recordsVideo = tuning.recordsVideo
            case .chunkDuration: chunkDurationMs = tuning.chunkDurationMs
            case .bufferMax: bufferMaxMB = tuning.bufferMaxMB
            // A kept nil frame rate ("the pipeline's own") is no change.
            case .framerate: framerate = tuning.framerate
            case .audioFormat: audioFormat = tuning.audioFormat
            case .timestampFormat: timestampFormat = tuning.timestampFormat
            }
        }
    }

    /// The fields where `new` differs from `old`.
    public static func difference(from old: RecordingTuning, to new: RecordingTuning) -> SettingsChange {
        var fields: Set<SettingsField> = []
        if old.videoFormat != new.videoFormat { fields.insert(.videoFormat) }
        if old.recordsVideo != new.recordsVideo { fields.insert(.recordsVideo) }
        if old.chunkDurationMs != new.chunkDurationMs { fields.insert(.chunkDuration) }
        if old.bufferMaxMB != new.bufferMaxMB { fields.insert(.bufferMax) }
        if old.framerate != new.framerate { fields.insert(.framerate) }
        if old.audioFormat != new.audioFormat { fields.insert(.audioFormat) }
        if old.timestampFormat != new.timestampFormat { fields.insert(.timestampFormat) }
        return SettingsChange(new, fields: fields)
    }

    public var fields: Set<SettingsField> {
        var fields: Set<SettingsField> = []
        if videoFormat != nil { fields.insert(.videoFormat) }
        if recordsVideo != nil { fields.insert(.recordsVideo) }
        if chunkDurationMs != nil { fields.insert(.chunkDuration) }
        if bufferMaxMB != nil { fields.insert(.bufferMax) }
        if framerate != nil { fields.insert(.framerate) }
        if audioFormat != nil { fields.insert(.audioFormat) }
        if timestampFormat != nil { fields.insert(.timestampFormat) }
        return fields
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// `tuning` with this change laid over it.
    public func applied(to tuning: RecordingTuning) -> RecordingTuning {
        var tuning = tuning
        if let videoFormat { tuning.videoFormat = videoFormat }
        if let recordsVideo { tuning.recordsVideo = recordsVideo }
        if let chunkDurationMs { tuning.chunkDurationMs = chunkDurationMs }
        if let bufferMaxMB { tuning.bufferMaxMB = bufferMaxMB }
        if let framerate { tuning.framerate = framerate }
        if let audioFormat { tuning.audioFormat = audioFormat }
        if let timestampFormat { tuning.timestampFormat = timestampFormat }
        return tuning
    }

    /// This change without `field`.
    func removing(_ field: SettingsField) -> SettingsChange {
        var change = self
        switch field {
        case .videoFormat: change.videoFormat = nil
        case .recordsVideo: change.recordsVideo = nil
        case .chunkDuration: change.chunkDurationMs = nil
        case .bufferMax: change.bufferMaxMB = nil
        case .framerate: change.framerate = nil
        case .audioFormat: change.audioFormat = nil
        case .timestampFormat: change.timestampFormat = nil
        }
        return change
    }
}

/// A value refused: outside the hard limits every source is held to. The same value gets the same
/// words from every source, the config file's reader included ("recording.chunk_duration_ms = 500 is
/// out of range; allowed: 1000…3600000"); each front end names the field its own way (the console's
/// `chunk_duration_ms`, the server's `videoChunkDurationMs`) through `message(key:)`.
public struct SettingsRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public var field: SettingsField
    /// The value asked, as written.
    public var value: String
    /// The allowed range, for an API's answer ("1000...3600000").
    public var allowed: [String]
    /// The allowed range as the config reader writes it ("1000…3600000").
    var range: String

    init<T: Comparable & CustomStringConvertible>(_ field: SettingsField, _ value: T, limits: ClosedRange<T>) {
        self.field = field
        self.value = "\(value)"
        allowed = ["\(limits.lowerBound)...\(limits.upperBound)"]
        range = "\(limits.lowerBound)…\(limits.upperBound)"
    }

    /// The refusal naming the setting `key`.
    public func message(key: String) -> String { "\(key) = \(value) is out of range; allowed: \(range)" }
    public var reason: String { "\(value) is out of range; allowed: \(range)" }
    public var description: String { message(key: field.configKey) }
}

/// A value taken within the source's bounds rather than as asked.
public struct SettingsClamp: Equatable, Sendable, CustomStringConvertible {
    public var field: SettingsField
    public var asked: Int
    public var used: Int
    /// Which bounds, with their values ("server.min_chunk_ms 2000 … server.max_chunk_ms 300000").
    public var bounds: String
    public var description: String { "\(field.configKey) \(asked) is outside what this box lets a server set (\(bounds)); using \(used)" }
}

/// What became of a change.
public struct SettingsOutcome: Equatable, Sendable {
    /// What was applied (after clamps, without refused fields), and kept.
    public var applied: SettingsChange
    public var clamped: [SettingsClamp]
    public var refused: [SettingsRefusal]
    /// The recorder's words for what changed (empty: nothing did).
    public var changes: [String]
    /// The settings in effect now.
    public var tuning: RecordingTuning
    /// Why what was applied could not be kept for the next start (nil: kept, or nothing to keep).
    public var notKept: String?
}

/// The checks every change goes through, whoever asks (pure).
public enum SettingsRules {
    /// `change` checked for `source`: values outside the hard limits (`ConfigLimits`, the same the config file is
    /// read with) are refused; a server's chunk length and buffer are clamped into `bounds` (`[server]`).
    public static func check(_ change: SettingsChange, from source: SettingsSource, bounds: ServerBounds)
        -> (accepted: SettingsChange, clamped: [SettingsClamp], refused: [SettingsRefusal]) {
        var accepted = change
        var clamped: [SettingsClamp] = []
        var refused: [SettingsRefusal] = []
        /// A whole-number field: refused outside its hard limits; from a server, clamped into `[server]`'s bounds.
        func checkBounded(_ key: WritableKeyPath<SettingsChange, Int?>, _ field: SettingsField, limits: ClosedRange<Int>,
                          clamp: (Int) -> Int, bounds text: String) {
            guard let asked = change[keyPath: key] else { return }
            if !limits.contains(asked) {
                refused.append(SettingsRefusal(field, asked, limits: limits))
                accepted[keyPath: key] = nil
            } else if source.isServer, clamp(asked) != asked {
                clamped.append(SettingsClamp(field: field, asked: asked, used: clamp(asked), bounds: text))
                accepted[keyPath: key] = clamp(asked)
            }
        }
        checkBounded(\.chunkDurationMs, .chunkDuration, limits: ConfigLimits.chunkDurationMs, clamp: bounds.clampChunkDuration,
                     bounds: "server.min_chunk_ms \(bounds.minChunkMs) … server.max_chunk_ms \(bounds.maxChunkMs)")
        checkBounded(\.bufferMaxMB, .bufferMax, limits: ConfigLimits.bufferMaxMB, clamp: bounds.clampBuffer,
                     bounds: "server.min_buffer_mb \(bounds.minBufferMB) … server.max_buffer_mb \(bounds.maxBufferMB)")
        if let fps = change.framerate {
            let limits = ConfigLimits.framerate
            if !fps.isFinite || !limits.contains(fps) {
                refused.append(SettingsRefusal(.framerate, fps, limits: limits))
                accepted.framerate = nil
            }
        }
        return (accepted, clamped, refused)
    }
}

/// Applies settings changes: the one sequence of check → apply → keep → report
/// (see the top of this file). The service makes one over its recorder; link
/// tests make one over stored chunks.
///
/// Threading: main-loop thread only, like the recorder it re-tunes.
public final class SettingsKeeper {
    /// The bounds a server is held to (`[server]` of the config in force).
    private let bounds: () -> ServerBounds
    /// The settings in force and how to change them (the recorder's `currentTuning` and `retune`).
    private let current: () -> RecordingTuning
    private let retune: (RecordingTuning) -> [String]
    /// The config file's own values (nil: no file, as in link tests): kept beside each
    /// kept value, so a later edit of the file is seen to be newer (`ServiceSettings`).
    private let fileTuning: () -> RecordingTuning?
    private let store: ServerSettingsStore?
    private let logger: Logger

    public init(bounds: @escaping () -> ServerBounds, store: ServerSettingsStore?,
                current: @escaping () -> RecordingTuning, retune: @escaping (RecordingTuning) -> [String],
                fileTuning: @escaping () -> RecordingTuning? = { nil }, logger: Logger) {
        self.bounds = bounds
        self.store = store
        self.current = current
        self.retune = retune
        self.fileTuning = fileTuning
        self.logger = logger
    }

    /// Checks `change` for `source`, applies what is accepted, keeps exactly that (the config
    /// file's own values are not kept: the file holds them) and says what became of it.
    public func apply(_ change: SettingsChange, from source: SettingsSource) -> SettingsOutcome {
        let checked = SettingsRules.check(change, from: source, bounds: bounds())
        // Refusals and clamps are reported by each front end in its own words (the server's keys, the API's).
        let changes = checked.accepted.isEmpty ? [] : retune(checked.accepted.applied(to: current()))
        var notKept: String?
        if let store, !checked.accepted.isEmpty {
            do {
                try store.keep(checked.accepted, from: source, now: current(), fileTuning: fileTuning())
            } catch {
                notKept = "cannot keep the settings in \(store.url.path) for the next start: \(error)"
                logger.error("settings from \(source): \(notKept!)")
            }
        }
        return SettingsOutcome(applied: checked.accepted, clamped: checked.clamped, refused: checked.refused,
                               changes: changes, tuning: current(), notKept: notKept)
    }
}
