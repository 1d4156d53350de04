import AllSparkProtocol
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Storage

extension VideoFormat {
    /// GStreamer muxer element that writes this container (media knowledge,
    /// so it stays here rather than in Storage, which only names chunk files).
    public var muxerFactory: String { self == .mp4 ? "mp4mux" : "qtmux" }
}

/// The recorder's configuration: value types, validated once at load.
public struct RecorderConfig: Equatable, Sendable {
    public struct Device: Equatable, Sendable {
        /// Shown by the AllSpark server; defaults to the host name.
        public var name: String
        /// No `device.name` was set: `name` is the host name, which `DeviceName` makes unique.
        public var nameIsHostName = false
    }
    public struct Server: Equatable, Sendable {
        /// `host:port`, optionally with a scheme; empty means "use discovery".
        public var host: String
        public var verifyTLS: Bool
        public var discovery: Bool
        public var reconnectDelaySeconds: Double
        public var announceChunks: Bool
        /// The server's cap on one message, in MiB (300: aiohttp's max_msg_size); a file of this size
        /// or more is not sent (servers accept one byte less at most).
        public var maxUploadMB: Int
        /// Tries per chunk before an upload is given up (a reconnect in between counts one).
        public var uploadAttempts: Int
        /// Average upload rate cap in kbit/s (0: none).
        public var maxUploadKbps: Int = 0
        /// False: the server's automatic requests (one chunk, right after its chunkSaved) are declined.
        public var acceptAutoUploads = true

        public var maxUploadBytes: Int64 { Int64(maxUploadMB) * 1024 * 1024 }
        /// What the server may ask for (`max_request_future_s`, `min_buffer_mb`, `max_buffer_mb`, `min_chunk_ms`,
        /// `max_chunk_ms`, `max_record_duration_s`).
        public var bounds = ServerBounds()
        /// How the time in uploaded file names is written: "ms" (servers since 0.5), "seconds" (older ones).
        public var fileNames = UploadFileNames.milliseconds
        /// Block with rfkill the radios the server's communicationsPolicy forbids (never the one the link uses).
        public var enforceCommunicationsPolicy = false
        /// With no host set, look for a pairing QR code in the live picture and take the server it names.
        public var pairByQR = false
    }
    public struct Recording: Equatable, Sendable {
        /// Absolute path of the pipeline description.
        public var pipeline: String
        /// Absolute path of the chunk folder.
        public var storageDirectory: String
        public var videoFormat: VideoFormat
        public var chunkDurationMs: Int
        public var bufferMaxMB: Int
        /// No frame for this long means the source froze: the chunk is finished and the source restarted.
        public var frameTimeoutSeconds: Double = 5
        /// The box's own defaults for the companions (`recording.audio_format`, `recording.timestamp_format`).
        public var audioFormat: AudioFormat = .none
        public var timestampFormat: TimestampFormat = .none
        /// Set only by a server (`videoFormat` "none", `fps`) and kept with its settings.
        public var recordsVideo = true
        public var framerate: Double?
        /// The file whose existence says the wall clock is synchronised (systemd-timesyncd's);
        /// chunks recorded while its folder exists and it does not are marked so.
        public var clockSyncFlag: String = Self.systemdTimeSyncFlag
        public static let systemdTimeSyncFlag = "/run/systemd/timesync/synchronized"

        public var bufferMaxBytes: Int64 { Int64(bufferMaxMB) * 1024 * 1024 }
    }
    public struct Privacy: Equatable, Sendable {
        public var faceBlur: Bool
        /// Absolute path of the CenterFace ONNX model.
        public var model: String
        /// `pixelate` or `fill`.
        public var mode: String
        public var threshold: Double
        /// Fraction of the face box added on each side (the whole head).
        public var margin: Double
        public var holdMs: Int
        /// Whole-frame detector input width (nil: the stage's default, live or offline).
        public var detectWidth: Int?
        /// Frames between whole-frame passes and tile passes while the
        /// picture changes (nil: the stage's default, which differs between
        /// live recording and the offline `blur` command), and at most
        /// between searches around a known face.
        public var wholeEvery: Int?
        public var tileEvery: Int?
        public var followEvery: Int
        public var maxLatencyMs: Int
        /// Live, when detection cannot search a frame completely in time:
        /// `pixelate` (record it with what no search confirmed pixelated) or
        /// `lower_fps` (do not record it).
        public var whenBehind: String = "pixelate"
        /// How much tiles are enlarged for the detector (nil: the stage's
        /// default, which differs between live and offline): 1 searches
        /// them at full resolution (faces from ~22 px), 1.5 finds faces from
        /// ~15 px at 2.25 times the tile searches.
        public var tileScale: Double? = nil
        /// The network searches around known faces run on first: "centerface"
        /// or "yunet" (CenterFace searching again where it misses).
        public var followNetwork: String = "centerface"
        /// YuNet's confidence threshold (its scores are not CenterFace's).
        public var yuNetThreshold: Double = 0.5
        /// What runs CenterFace: "auto" (ONNX Runtime where installed, else
        /// OpenCV DNN), "onnxruntime" or "opencv".
        public var runtime: String = "auto"
        /// Which searches run CenterFace in 8-bit integers: "auto" (follows,
        /// where ONNX Runtime and the quantised model, accepted on this CPU,
        /// are installed) or "float" (none).
        public var precision: String = "auto"
        /// Live: how much the spare-time tiles are enlarged (searched only
        /// with CPU the machine leaves idle; 0: none).
        public var spareTileScale: Double = 1.5
    }

    /// The local web console and REST API (`[console]`).
    public struct Console: Equatable, Sendable {
        public var enabled: Bool
        /// The address to listen on ("0.0.0.0" for every IPv4 interface, "::" for every interface).
        public var host: String
        public var port: Int
        /// PEM certificate and key: the console then speaks HTTPS only.
        public var tlsCertificate: String?
        public var tlsKey: String?
        /// Live preview: at most this many frames per second, scaled down to at most this width.
        public var previewFps: Double
        public var previewWidth: Int
    }

    /// The privacy-safe RTSP stream out (`[stream]`).
    public struct Stream: Equatable, Sendable {
        /// Where the RTSP server listens (`stream.rtsp_listen`); nil: no stream (the default).
        public var rtspHost: String?
        public var rtspPort: Int
        /// At most this many clients at once, and from one address; more are refused (503).
        public var maxClients: Int
        public var maxClientsPerAddress: Int
        /// A client that stops talking (no RTCP, no keep-alive) loses its session after this long.
        public var sessionTimeoutSeconds: Int
        /// The mount: rtsp://host:port/live.
        public static let path = "/live"

        public init(rtspHost: String? = nil, rtspPort: Int = 8554, maxClients: Int = 10, maxClientsPerAddress: Int = 4,
                    sessionTimeoutSeconds: Int = 20) {
            self.rtspHost = rtspHost
            self.rtspPort = rtspPort
            self.maxClients = maxClients
            self.maxClientsPerAddress = maxClientsPerAddress
            self.sessionTimeoutSeconds = sessionTimeoutSeconds
        }

        public var isEnabled: Bool { rtspHost != nil }
    }

    public var device: Device
    public var server: Server
    public var recording: Recording
    public var privacy: Privacy
    public var console = Console(enabled: false, host: "127.0.0.1", port: 8090, tlsCertificate: nil, tlsKey: nil,
                                 previewFps: 5, previewWidth: 640)
    public var stream = Stream()
    /// Values substituted for `${name}` in pipeline descriptions.
    public var pipelineVariables: [String: String]
    /// The file this was loaded from (for messages and SIGHUP reloads).
    public var sourceFile: String
    /// Where the paths that can fail later were set ("demo.toml:12", "--set"),
    /// so that a missing pipeline or model is traced to its config line.
    public var keyOrigins: [String: String] = [:]

    /// Where `key` was set, for messages: "recorder.toml:12 (recording.pipeline)",
    /// "--set recording.pipeline", or that it is the default.
    public func origin(of key: String) -> String {
        guard let origin = keyOrigins[key] else { return "\(key) (not set in \(sourceFile): the default)" }
        return origin == "--set" ? "--set \(key)" : "\(origin) (\(key))"
    }

    /// The tunables a server, the console or SIGHUP may change on a running recorder; setting it
    /// sets every one of them (the one place that maps them onto `recording`).
    public var tuning: RecordingTuning {
        get {
            RecordingTuning(videoFormat: recording.videoFormat, chunkDurationMs: recording.chunkDurationMs,
                            bufferMaxMB: recording.bufferMaxMB, recordsVideo: recording.recordsVideo,
                            audioFormat: recording.audioFormat, timestampFormat: recording.timestampFormat,
                            framerate: recording.framerate)
        }
        set {
            recording.videoFormat = newValue.videoFormat
            recording.chunkDurationMs = newValue.chunkDurationMs
            recording.bufferMaxMB = newValue.bufferMaxMB
            recording.recordsVideo = newValue.recordsVideo
            recording.audioFormat = newValue.audioFormat
            recording.timestampFormat = newValue.timestampFormat
            recording.framerate = newValue.framerate
        }
    }
}

/// What can be re-tuned live without restarting capture.
public struct RecordingTuning: Equatable, Sendable, Codable {
    public var videoFormat: VideoFormat
    /// False: record no video (the server's `videoFormat` "none"); chunks stop from the next one.
    public var recordsVideo: Bool
    public var chunkDurationMs: Int
    public var bufferMaxMB: Int
    public var audioFormat: AudioFormat
    public var timestampFormat: TimestampFormat
    /// Frames per second asked of the source (nil: the pipeline's own rate).
    public var framerate: Double?

    public init(videoFormat: VideoFormat, chunkDurationMs: Int, bufferMaxMB: Int, recordsVideo: Bool = true,
                audioFormat: AudioFormat = .none, timestampFormat: TimestampFormat = .none, framerate: Double? = nil) {
        self.videoFormat = videoFormat
        self.recordsVideo = recordsVideo
        self.chunkDurationMs = chunkDurationMs
        self.bufferMaxMB = bufferMaxMB
        self.audioFormat = audioFormat
        self.timestampFormat = timestampFormat
        self.framerate = framerate
    }

    // Settings kept by an earlier version lack the newer keys.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(videoFormat: try c.decode(VideoFormat.self, forKey: .videoFormat),
                  chunkDurationMs: try c.decode(Int.self, forKey: .chunkDurationMs),
                  bufferMaxMB: try c.decode(Int.self, forKey: .bufferMaxMB),
                  recordsVideo: try c.decodeIfPresent(Bool.self, forKey: .recordsVideo) ?? true,
                  audioFormat: try c.decodeIfPresent(AudioFormat.self, forKey: .audioFormat) ?? .none,
                  timestampFormat: try c.decodeIfPresent(TimestampFormat.self, forKey: .timestampFormat) ?? .none,
                  framerate: try c.decodeIfPresent(Double.self, forKey: .framerate))
    }

    public var bufferMaxBytes: Int64 { Int64(bufferMaxMB) * 1024 * 1024 }
}

public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Reads `recorder.toml`-style files, applies `--set` overrides and validates.
public enum ConfigLoader {
    enum Kind { case string, bool, integer, number, path, strings }
    struct Key { let name: String; let kind: Kind }

    /// Every key the config understands, besides `[pipeline.vars]`.
    static let keys: [Key] = [
        Key(name: "device.name", kind: .string),
        Key(name: "server.host", kind: .string),
        Key(name: "server.verify_tls", kind: .bool),
        Key(name: "server.discovery", kind: .bool),
        Key(name: "server.pair_by_qr", kind: .bool),
        Key(name: "server.reconnect_delay_s", kind: .number),
        Key(name: "server.announce_chunks", kind: .bool),
        Key(name: "server.max_upload_mb", kind: .integer),
        Key(name: "server.upload_attempts", kind: .integer),
        Key(name: "server.file_names", kind: .string),
        Key(name: "server.enforce_communications_policy", kind: .bool),
        Key(name: "server.max_request_future_s", kind: .number),
        Key(name: "server.min_buffer_mb", kind: .integer),
        Key(name: "server.max_buffer_mb", kind: .integer),
        Key(name: "server.min_chunk_ms", kind: .integer),
        Key(name: "server.max_chunk_ms", kind: .integer),
        Key(name: "server.max_upload_kbps", kind: .integer),
        Key(name: "server.accept_auto_uploads", kind: .bool),
        Key(name: "server.max_record_duration_s", kind: .number),
        Key(name: "recording.pipeline", kind: .path),
        Key(name: "recording.storage_dir", kind: .path),
        Key(name: "recording.video_format", kind: .string),
        Key(name: "recording.chunk_duration_ms", kind: .integer),
        Key(name: "recording.buffer_max_mb", kind: .integer),
        Key(name: "recording.frame_timeout_s", kind: .number),
        Key(name: "recording.audio_format", kind: .string),
        Key(name: "recording.timestamp_format", kind: .string),
        Key(name: "recording.encoder", kind: .string),
        Key(name: "recording.clock_sync_flag", kind: .path),
        Key(name: "privacy.face_blur", kind: .bool),
        Key(name: "privacy.model", kind: .path),
        Key(name: "privacy.mode", kind: .string),
        Key(name: "privacy.threshold", kind: .number),
        Key(name: "privacy.margin", kind: .number),
        Key(name: "privacy.hold_ms", kind: .integer),
        Key(name: "privacy.detect_width", kind: .integer),
        Key(name: "privacy.whole_every", kind: .integer),
        Key(name: "privacy.tile_every", kind: .integer),
        Key(name: "privacy.tile_scale", kind: .number),
        Key(name: "privacy.follow_network", kind: .string),
        Key(name: "privacy.yunet_threshold", kind: .number),
        Key(name: "privacy.runtime", kind: .string),
        Key(name: "privacy.precision", kind: .string),
        Key(name: "privacy.spare_tile_scale", kind: .number),
        Key(name: "privacy.follow_every", kind: .integer),
        Key(name: "privacy.max_latency_ms", kind: .integer),
        Key(name: "privacy.when_behind", kind: .string),
        Key(name: "console.enabled", kind: .bool),
        Key(name: "console.listen", kind: .string),
        Key(name: "console.tls_certificate", kind: .path),
        Key(name: "console.tls_key", kind: .path),
        Key(name: "console.preview_fps", kind: .number),
        Key(name: "console.preview_width", kind: .integer),
        Key(name: "stream.rtsp_listen", kind: .string),
        Key(name: "stream.max_clients", kind: .integer),
        Key(name: "stream.max_clients_per_address", kind: .integer),
        Key(name: "stream.session_timeout_s", kind: .integer),
    ]
    static let variablesPrefix = "pipeline.vars."

    /// Loads `file` and applies `overrides` (`section.key=value` strings from `--set`).
    public static func load(file: String, overrides: [String] = [],
                            hostName: String = ProcessInfo.processInfo.hostName) throws -> RecorderConfig {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw ConfigError("\(file): cannot read the config file (\(error.localizedDescription))")
        }
        let document = try TOMLDocument(parsing: text, file: file)
        return try make(document: document, file: file, overrides: overrides, hostName: hostName)
    }

    /// A value with where it came from, for messages and for resolving relative paths.
    struct Setting {
        let value: TOMLValue
        let origin: String   // "demo.toml:12" or "--set"
        let baseDirectory: String
    }

    public static func make(document: TOMLDocument, file: String, overrides: [String],
                            hostName: String) throws -> RecorderConfig {
        let fileDirectory = (absolute(file, relativeTo: FileManager.default.currentDirectoryPath) as NSString)
            .deletingLastPathComponent
        var settings: [String: Setting] = [:]
        for (key, entry) in document.entries {
            guard key.hasPrefix(variablesPrefix) || keys.contains(where: { $0.name == key }) else {
                throw ConfigError("\(file):\(entry.line): unknown key '\(key)'. Known keys: "
                    + keys.map(\.name).joined(separator: ", ") + ", and pipeline.vars.<name>")
            }
            settings[key] = Setting(value: entry.value, origin: "\(file):\(entry.line)", baseDirectory: fileDirectory)
        }
        let cwd = FileManager.default.currentDirectoryPath
        for override in overrides {
            guard let eq = override.firstIndex(of: "=") else {
                throw ConfigError("--set \(override): expected section.key=value, e.g. --set recording.chunk_duration_ms=10000")
            }
            let key = String(override[..<eq]).trimmingCharacters(in: .whitespaces)
            let raw = String(override[override.index(after: eq)...])
            let value: TOMLValue
            if key.hasPrefix(variablesPrefix), key.count > variablesPrefix.count {
                value = .string(raw)
            } else if let known = keys.first(where: { $0.name == key }) {
                value = try parseOverride(raw, kind: known.kind, key: key)
            } else {
                throw ConfigError("--set \(override): unknown key '\(key)'. Known keys: "
                    + keys.map(\.name).joined(separator: ", ") + ", and pipeline.vars.<name>")
            }
            settings[key] = Setting(value: value, origin: "--set", baseDirectory: cwd)
        }

        let reader = SettingReader(settings: settings, file: file)
        let deviceName = try reader.string("device.name", default: hostName)
        let host = try reader.string("server.host", default: "")
        if !host.isEmpty {
            do { _ = try ServerAddress(parsing: host) } catch {
                throw ConfigError("\(reader.origin("server.host")): \(error)")
            }
        }
        let verifyTLS = try reader.bool("server.verify_tls", default: true)
        let discovery = try reader.bool("server.discovery", default: true)
        let reconnect = try reader.number("server.reconnect_delay_s", default: 5, range: 0.1...3600)
        let announce = try reader.bool("server.announce_chunks", default: true)
        let maxUpload = try reader.integer("server.max_upload_mb", default: 300, range: 1...4096)
        let uploadAttempts = try reader.integer("server.upload_attempts", default: 5, range: 1...100)
        let maxUploadKbps = try reader.integer("server.max_upload_kbps", default: 0, range: 0...10_000_000)
        let acceptAutoUploads = try reader.bool("server.accept_auto_uploads", default: true)
        guard let pipeline = try reader.path("recording.pipeline") else {
            throw ConfigError("\(file): missing key 'pipeline' in [recording]: the path of a pipeline description, e.g. pipeline = \"../pipelines/test.pipeline\"")
        }
        let storage = try reader.path("recording.storage_dir") ?? "/var/lib/allspark-recorder/chunks"
        let formatName = try reader.string("recording.video_format", default: "mp4")
        guard let format = VideoFormat(rawValue: formatName) else {
            throw ConfigError("\(reader.origin("recording.video_format")): recording.video_format = \"\(formatName)\" is not allowed; use \"mp4\" or \"mov\"")
        }
        let duration = try reader.integer("recording.chunk_duration_ms", default: 30_000, range: ConfigLimits.chunkDurationMs)
        let bufferMax = try reader.integer("recording.buffer_max_mb", default: 16_000, range: ConfigLimits.bufferMaxMB)
        let frameTimeout = try reader.number("recording.frame_timeout_s", default: 5, range: 1...600)
        let clockSyncFlag = try reader.path("recording.clock_sync_flag") ?? RecorderConfig.Recording.systemdTimeSyncFlag
        let audioName = try reader.string("recording.audio_format", default: "none")
        guard let audioFormat = AudioFormat(rawValue: audioName) else {
            throw ConfigError("\(reader.origin("recording.audio_format")): recording.audio_format = \"\(audioName)\" is not allowed; use \"none\", \"wav\" or \"m4a\"")
        }
        let timestampName = try reader.string("recording.timestamp_format", default: "none")
        guard let timestampFormat = TimestampFormat(rawValue: timestampName) else {
            throw ConfigError("\(reader.origin("recording.timestamp_format")): recording.timestamp_format = \"\(timestampName)\" is not allowed; use \"none\" or \"txt\"")
        }
        let faceBlur = try reader.bool("privacy.face_blur", default: true)
        // The model sits in ../models beside the config folder unless said otherwise.
        let model = try reader.path("privacy.model")
            ?? absolute("../models/centerface.onnx", relativeTo: fileDirectory)
        let mode = try reader.string("privacy.mode", default: "pixelate")
        guard ["pixelate", "fill"].contains(mode) else {
            throw ConfigError("\(reader.origin("privacy.mode")): privacy.mode = \"\(mode)\" is not allowed; use \"pixelate\" or \"fill\"")
        }
        let threshold = try reader.number("privacy.threshold", default: 0.3, range: 0.05...0.95)
        let margin = try reader.number("privacy.margin", default: 0.3, range: 0...2)
        let holdMs = try reader.integer("privacy.hold_ms", default: 1000, range: 0...10_000)
        let detectWidth = reader.has("privacy.detect_width") ? try reader.integer("privacy.detect_width", default: 0, range: 128...1920) : nil
        if let detectWidth, detectWidth % 32 != 0 {
            throw ConfigError("\(reader.origin("privacy.detect_width")): privacy.detect_width = \(detectWidth) must be a multiple of 32 (e.g. 640)")
        }
        // Unset: the stage picks (live and offline differ).
        let wholeEvery = reader.has("privacy.whole_every") ? try reader.integer("privacy.whole_every", default: 0, range: 1...120) : nil
        let tileEvery = reader.has("privacy.tile_every") ? try reader.integer("privacy.tile_every", default: 0, range: 0...240) : nil
        let tileScale = reader.has("privacy.tile_scale") ? try reader.number("privacy.tile_scale", default: 1, range: 1...3) : nil
        let followNetwork = try reader.string("privacy.follow_network", default: "centerface")
        guard ["centerface", "yunet"].contains(followNetwork) else {
            throw ConfigError("\(reader.origin("privacy.follow_network")): privacy.follow_network = \"\(followNetwork)\" is not allowed; use \"centerface\" or \"yunet\"")
        }
        let yuNetThreshold = try reader.number("privacy.yunet_threshold", default: 0.5, range: 0.2...0.95)
        let spareTileScale = try reader.number("privacy.spare_tile_scale", default: 1.5, range: 0...3)
        if spareTileScale > 0, spareTileScale < 1 {
            throw ConfigError("\(reader.origin("privacy.spare_tile_scale")): privacy.spare_tile_scale = \(spareTileScale) must be 0 (no spare-time tiles) or from 1 to 3 (e.g. 1.5)")
        }
        let runtime = try reader.string("privacy.runtime", default: "auto")
        guard ["auto", "onnxruntime", "opencv"].contains(runtime) else {
            throw ConfigError("\(reader.origin("privacy.runtime")): privacy.runtime = \"\(runtime)\" is not allowed; use \"auto\", \"onnxruntime\" or \"opencv\"")
        }
        let precision = try reader.string("privacy.precision", default: "auto")
        guard ["auto", "float"].contains(precision) else {
            throw ConfigError("\(reader.origin("privacy.precision")): privacy.precision = \"\(precision)\" is not allowed; use \"auto\" or \"float\"")
        }
        let followEvery = try reader.integer("privacy.follow_every", default: 8, range: 1...30)
        let maxLatencyMs = try reader.integer("privacy.max_latency_ms", default: 2500, range: 50...10_000)
        let whenBehind = try reader.string("privacy.when_behind", default: "pixelate")
        guard ["pixelate", "lower_fps"].contains(whenBehind) else {
            throw ConfigError("\(reader.origin("privacy.when_behind")): privacy.when_behind = \"\(whenBehind)\" is not allowed; use \"pixelate\" or \"lower_fps\"")
        }
        if deviceName.trimmingCharacters(in: .whitespaces).isEmpty {
            throw ConfigError("\(reader.origin("device.name")): device.name must not be empty (leave it out to use the host name)")
        }

        var variables: [String: String] = [:]
        for (key, setting) in settings where key.hasPrefix(variablesPrefix) {
            let name = String(key.dropFirst(variablesPrefix.count))
            switch setting.value {
            case .string(let s): variables[name] = s
            case .integer(let i): variables[name] = String(i)
            case .float(let d): variables[name] = String(d)
            case .boolean(let b): variables[name] = String(b)
            case .array:
                throw ConfigError("\(setting.origin): pipeline.vars.\(name) must be a string, a number or a boolean, not an array")
            }
        }
        let encoderName = try reader.string("recording.encoder", default: VideoEncoder.x264.rawValue)
        guard let encoder = VideoEncoder(rawValue: encoderName) else {
            throw ConfigError("\(reader.origin("recording.encoder")): recording.encoder = \"\(encoderName)\" is not allowed; use "
                              + VideoEncoder.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))
        }
        // ${encoder} for the pipelines; a chain of one's own in pipeline.vars.encoder wins.
        if variables["encoder"] == nil {
            variables["encoder"] = encoder.chain(framerate: variables["framerate"].flatMap { Int($0) } ?? 30,
                                                 bitrateKbps: variables["bitrate_kbps"].flatMap { Int($0) } ?? 4000)
        }

        var config = RecorderConfig(
            device: .init(name: deviceName, nameIsHostName: !reader.has("device.name")),
            server: .init(host: host, verifyTLS: verifyTLS, discovery: discovery,
                          reconnectDelaySeconds: reconnect, announceChunks: announce,
                          maxUploadMB: maxUpload, uploadAttempts: uploadAttempts,
                          maxUploadKbps: maxUploadKbps, acceptAutoUploads: acceptAutoUploads),
            recording: .init(pipeline: pipeline, storageDirectory: storage, videoFormat: format,
                             chunkDurationMs: duration, bufferMaxMB: bufferMax, frameTimeoutSeconds: frameTimeout,
                             audioFormat: audioFormat, timestampFormat: timestampFormat, clockSyncFlag: clockSyncFlag),
            privacy: .init(faceBlur: faceBlur, model: model, mode: mode, threshold: threshold, margin: margin,
                           holdMs: holdMs, detectWidth: detectWidth, wholeEvery: wholeEvery, tileEvery: tileEvery,
                           followEvery: followEvery, maxLatencyMs: maxLatencyMs, whenBehind: whenBehind,
                           tileScale: tileScale, followNetwork: followNetwork, yuNetThreshold: yuNetThreshold,
                           runtime: runtime, precision: precision, spareTileScale: spareTileScale),
            pipelineVariables: variables,
            sourceFile: file)
        for key in ["recording.pipeline", "privacy.model"] where reader.has(key) {
            config.keyOrigins[key] = reader.origin(key)
        }
        config.server.bounds = try serverBounds(reader, bufferMaxMB: bufferMax)
        let fileNames = try reader.string("server.file_names", default: UploadFileNames.milliseconds.rawValue)
        guard let naming = UploadFileNames(rawValue: fileNames) else {
            throw ConfigError("\(reader.origin("server.file_names")): server.file_names = \"\(fileNames)\" is not allowed; use \"ms\" (servers since 0.5) or \"seconds\" (older servers)")
        }
        config.server.fileNames = naming
        config.server.enforceCommunicationsPolicy = try reader.bool("server.enforce_communications_policy", default: false)
        config.server.pairByQR = try reader.bool("server.pair_by_qr", default: false)
        config.console = try console(reader)
        config.stream = try stream(reader)
        return config
    }

    /// `[stream]`: the RTSP stream is off unless `stream.rtsp_listen` names an address and port.
    static func stream(_ reader: SettingReader) throws -> RecorderConfig.Stream {
        var stream = RecorderConfig.Stream()
        let listen = try reader.string("stream.rtsp_listen", default: "")
        if !listen.trimmingCharacters(in: .whitespaces).isEmpty {
            let (host, port) = try listenAddress(listen, key: "stream.rtsp_listen", reader: reader,
                                                 examples: "\"0.0.0.0:8554\", \"127.0.0.1:8554\" or \"[::]:8554\"")
            guard port != 0 else {
                throw ConfigError("\(reader.origin("stream.rtsp_listen")): stream.rtsp_listen = \"\(listen)\": port 0 is not allowed; RTSP clients need a fixed port, e.g. \"0.0.0.0:8554\"")
            }
            stream.rtspHost = host
            stream.rtspPort = port
        }
        stream.maxClients = try reader.integer("stream.max_clients", default: 10, range: 1...64)
        stream.maxClientsPerAddress = try reader.integer("stream.max_clients_per_address", default: 4, range: 1...64)
        if stream.maxClientsPerAddress > stream.maxClients {
            throw ConfigError("\(reader.origin("stream.max_clients_per_address")): stream.max_clients_per_address = \(stream.maxClientsPerAddress) is above stream.max_clients = \(stream.maxClients)")
        }
        stream.sessionTimeoutSeconds = try reader.integer("stream.session_timeout_s", default: 20, range: 5...300)
        return stream
    }

    /// `host:port` for a server to listen on: an IP address of this box (IPv6 in brackets) and a port.
    static func listenAddress(_ listen: String, key: String, reader: SettingReader, examples: String) throws -> (host: String, port: Int) {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]),
              (0...65_535).contains(port) else {
            throw ConfigError("\(reader.origin(key)): \(key) = \"\(listen)\" is not an address and port; use e.g. \(examples)")
        }
        var host = String(listen[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var scratch = in6_addr()
        guard inet_pton(AF_INET, host, &scratch) == 1 || inet_pton(AF_INET6, host, &scratch) == 1 else {
            throw ConfigError("\(reader.origin(key)): \(key) = \"\(listen)\": \"\(host)\" is not an IP address of this box; use \"0.0.0.0\" (every IPv4 interface), \"127.0.0.1\" (this box only) or \"[::]\"")
        }
        return (host, port)
    }

    /// `[console]`: on by default, on every interface, port 8090 (it always asks for a password).
    static func console(_ reader: SettingReader) throws -> RecorderConfig.Console {
        let enabled = try reader.bool("console.enabled", default: true)
        let listen = try reader.string("console.listen", default: "0.0.0.0:8090")
        let (host, port) = try listenAddress(listen, key: "console.listen", reader: reader,
                                             examples: "\"0.0.0.0:8090\", \"127.0.0.1:8090\" or \"[::]:8090\"")
        let certificate = try reader.path("console.tls_certificate")
        let key = try reader.path("console.tls_key")
        if (certificate == nil) != (key == nil) {
            throw ConfigError("\(reader.origin(certificate == nil ? "console.tls_key" : "console.tls_certificate")): set both console.tls_certificate and console.tls_key (PEM files), or neither")
        }
        let fps = try reader.number("console.preview_fps", default: 5, range: 0.2...30)
        let width = try reader.integer("console.preview_width", default: 640, range: 64...3840)
        return .init(enabled: enabled, host: host, port: port, tlsCertificate: certificate, tlsKey: key,
                     previewFps: fps, previewWidth: width)
    }

    /// `[server]` bounds on what a server may ask. The buffer a server sets may be lower than
    /// the box's own `recording.buffer_max_mb`, never higher unless `server.max_buffer_mb` is
    /// set above it on purpose.
    static func serverBounds(_ reader: SettingReader, bufferMaxMB: Int) throws -> ServerBounds {
        let future = try reader.number("server.max_request_future_s", default: ServerBounds.defaultMaxRequestFutureSeconds,
                                       range: 0...31_536_000)
        let maxBuffer = try reader.integer("server.max_buffer_mb", default: bufferMaxMB, range: ConfigLimits.bufferMaxMB)
        let minBuffer = try reader.integer("server.min_buffer_mb", default: min(ServerBounds.defaultMinBufferMB, maxBuffer),
                                           range: ConfigLimits.bufferMaxMB)
        if minBuffer > maxBuffer {
            throw ConfigError("\(reader.origin("server.min_buffer_mb")): server.min_buffer_mb = \(minBuffer) is above server.max_buffer_mb = \(maxBuffer)")
        }
        let maxChunk = try reader.integer("server.max_chunk_ms", default: ServerBounds.defaultMaxChunkMs, range: ConfigLimits.chunkDurationMs)
        let minChunk = try reader.integer("server.min_chunk_ms", default: min(ServerBounds.defaultMinChunkMs, maxChunk),
                                          range: ConfigLimits.chunkDurationMs)
        if minChunk > maxChunk {
            throw ConfigError("\(reader.origin("server.min_chunk_ms")): server.min_chunk_ms = \(minChunk) is above server.max_chunk_ms = \(maxChunk)")
        }
        let record = try reader.number("server.max_record_duration_s", default: ServerBounds.defaultMaxRecordDurationSeconds,
                                       range: 1...604_800)
        return ServerBounds(maxRequestFutureSeconds: future, minBufferMB: minBuffer, maxBufferMB: maxBuffer,
                            minChunkMs: minChunk, maxChunkMs: maxChunk, maxRecordDurationSeconds: record)
    }

    static func parseOverride(_ raw: String, kind: Kind, key: String) throws -> TOMLValue {
        switch kind {
        case .string, .path: return .string(raw)
        case .strings:
            // `--set key=["a", "b"]` in TOML's own array syntax; a bare word is a one-element list.
            guard raw.trimmingCharacters(in: .whitespaces).hasPrefix("[") else { return .array([.string(raw)]) }
            do {
                let document = try TOMLDocument(parsing: "v = \(raw)", file: "--set \(key)")
                guard document.entries.count == 1, let value = document["v"]?.value else {
                    throw ConfigError("--set \(key)=\(raw): expected one array, e.g. [\"a\", \"b\"]")
                }
                return value
            } catch let error as TOMLError {
                throw ConfigError("--set \(key)=\(raw): \(error.reason)")
            }
        case .bool:
            switch raw.lowercased() {
            case "true", "yes", "on", "1": return .boolean(true)
            case "false", "no", "off", "0": return .boolean(false)
            default: throw ConfigError("--set \(key)=\(raw): expected true or false")
            }
        case .integer:
            guard let i = Int(raw.replacingOccurrences(of: "_", with: "")) else {
                throw ConfigError("--set \(key)=\(raw): expected an integer")
            }
            return .integer(i)
        case .number:
            guard let d = Double(raw), d.isFinite else { throw ConfigError("--set \(key)=\(raw): expected a number") }
            return .float(d)
        }
    }

    static func absolute(_ path: String, relativeTo base: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        return ((base as NSString).appendingPathComponent(expanded) as NSString).standardizingPath
    }

    /// Typed access to the merged settings with errors that name origin, key and what is allowed.
    struct SettingReader {
        let settings: [String: Setting]
        let file: String

        func origin(_ key: String) -> String { settings[key]?.origin ?? file }

        func has(_ key: String) -> Bool { settings[key] != nil }

        private func typeError(_ key: String, expected: String, got: TOMLValue) -> ConfigError {
            ConfigError("\(origin(key)): \(key) must be \(expected), not \(got.typeName)")
        }

        func string(_ key: String, default value: String) throws -> String {
            guard let setting = settings[key] else { return value }
            guard case .string(let s) = setting.value else { throw typeError(key, expected: "a string", got: setting.value) }
            return s
        }

        /// An array of strings (`key = ["a", "b"]`); a single string is not taken for a one-element array.
        func strings(_ key: String, default value: [String] = []) throws -> [String] {
            guard let setting = settings[key] else { return value }
            guard case .array(let items) = setting.value else {
                throw typeError(key, expected: "an array of strings, e.g. [\"a\", \"b\"]", got: setting.value)
            }
            return try items.enumerated().map { index, item in
                guard case .string(let s) = item else {
                    throw ConfigError("\(setting.origin): \(key)[\(index)] must be a string, not \(item.typeName)")
                }
                return s
            }
        }

        func path(_ key: String) throws -> String? {
            guard let setting = settings[key] else { return nil }
            guard case .string(let s) = setting.value else { throw typeError(key, expected: "a path string", got: setting.value) }
            guard !s.isEmpty else { throw ConfigError("\(setting.origin): \(key) must not be empty") }
            return ConfigLoader.absolute(s, relativeTo: setting.baseDirectory)
        }

        func bool(_ key: String, default value: Bool) throws -> Bool {
            guard let setting = settings[key] else { return value }
            guard case .boolean(let b) = setting.value else { throw typeError(key, expected: "true or false", got: setting.value) }
            return b
        }

        func integer(_ key: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
            guard let setting = settings[key] else { return value }
            guard case .integer(let i) = setting.value else { throw typeError(key, expected: "an integer", got: setting.value) }
            guard range.contains(i) else {
                throw ConfigError("\(setting.origin): \(key) = \(i) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)")
            }
            return i
        }

        func number(_ key: String, default value: Double, range: ClosedRange<Double>) throws -> Double {
            guard let setting = settings[key] else { return value }
            let d: Double
            switch setting.value {
            case .integer(let i): d = Double(i)
            case .float(let f): d = f
            default: throw typeError(key, expected: "a number", got: setting.value)
            }
            guard range.contains(d) else {
                throw ConfigError("\(setting.origin): \(key) = \(d) is out of range; allowed: \(range.lowerBound)…\(range.upperBound)")
            }
            return d
        }
    }
}
