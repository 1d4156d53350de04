import Foundation

// The AllSpark wire protocol as deployed servers speak it (shared/DESIGN.md).
// Pure value types: parsing is tolerant of what servers add, strict about
// what the recorder acts on, and never throws past `ServerMessage.parse`.
// Foundation only: the recorder's own types (chunk records, tuning, formats)
// are mapped onto these by the server link. Values are checked here for their
// type only; their ranges are the box's, checked with every other source's
// by RecorderCore's `SettingsRules`.

/// A message from the server, classified.
public enum ServerMessage: Equatable, Sendable {
    /// `{"type":"clientConfig","config":{…}}`; unknown keys are ignored.
    case clientConfig(ClientConfigUpdate)
    /// `{"command":"uploadTimeRange","startTime":s,"endTime":s}`, validated: finite, start < end.
    case uploadTimeRange(start: Double, end: Double, message: String?)
    /// `{"command":"record",…}` with optional `duration` (sent in ms, held here in s) and `autoUpload`.
    case record(message: String?, duration: Double?, autoUpload: Bool)
    /// Any other command: logged, nothing done.
    case otherCommand(name: String)
    /// `{"status":"success"|"error","message":…}`: the reply to the oldest message that earns one.
    case status(success: Bool, message: String?)

    /// Why a text frame was not acted on (logged, then ignored).
    public struct Rejection: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Largest text message worth parsing; servers send a few hundred bytes.
    public static let maximumTextBytes = 64 * 1024

    public static func parse(_ text: String) -> Result<ServerMessage, Rejection> {
        guard text.utf8.count <= maximumTextBytes else {
            return .failure(Rejection(description: "message of \(text.utf8.count) bytes is larger than \(maximumTextBytes); ignored"))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)),
              let json = object as? [String: Any] else {
            return .failure(Rejection(description: "not a JSON object: \(loggable(text, limit: 120))"))
        }
        if let type = json["type"] as? String {
            guard type == "clientConfig" else { return .failure(Rejection(description: "unknown message type \"\(loggable(type))\"")) }
            guard let config = json["config"] as? [String: Any] else {
                return .failure(Rejection(description: "clientConfig without a \"config\" object"))
            }
            return .success(.clientConfig(ClientConfigUpdate(config)))
        }
        if let command = json["command"] as? String {
            let message = json["message"] as? String
            switch command {
            case "uploadTimeRange":
                guard let start = number(json["startTime"]), let end = number(json["endTime"]) else {
                    return .failure(Rejection(description: "uploadTimeRange needs numeric startTime and endTime"))
                }
                guard start.isFinite, end.isFinite, start < end else {
                    return .failure(Rejection(description: "uploadTimeRange [\(start), \(end)) is not a valid range"))
                }
                return .success(.uploadTimeRange(start: start, end: end, message: message))
            case "record":
                // In milliseconds: the only client that knew the command, the iOS app 0.2, read it so.
                let duration = number(json["duration"]).flatMap { $0.isFinite && $0 > 0 ? $0 / 1000 : nil }
                return .success(.record(message: message, duration: duration, autoUpload: jsonBool(json["autoUpload"]) ?? false))
            default:
                return .success(.otherCommand(name: command))
            }
        }
        if let status = json["status"] as? String {
            return .success(.status(success: status == "success", message: json["message"] as? String))
        }
        return .failure(Rejection(description: "neither type, command nor status: \(loggable(text, limit: 120))"))
    }

    private static func number(_ value: Any?) -> Double? { jsonNumber(value)?.doubleValue }
}

/// The fields of a `clientConfig` the recorder understands, each validated on its own.
public struct ClientConfigUpdate: Equatable, Sendable {
    /// The containers a server may ask for (`"none"`, record no video, sets `recordsVideo` instead).
    public enum VideoFormat: String, Sendable { case mp4, mov }
    /// `audioFormat`: the file beside each chunk.
    public enum AudioFormat: String, Sendable { case none, wav, m4a }
    /// `timestampFormat`: the file beside each chunk.
    public enum TimestampFormat: String, Sendable { case none, txt }

    public var videoFormat: VideoFormat?
    /// False for `videoFormat` "none" (record no video), true for a container.
    public var recordsVideo: Bool?
    public var chunkDurationMs: Int?
    public var bufferMaxMB: Int?
    /// `fps`: frames per second asked of the source.
    public var framerate: Double?
    public var audioFormat: AudioFormat?
    public var timestampFormat: TimestampFormat?
    /// Keys for sensors a Linux box does not have (`poseFormat`, `depthFormat`) → the value asked
    /// for, when it asks for files ("none" asks for nothing): accepted, nothing is produced.
    public var notApplicable: [String: String] = [:]
    /// Field → why it was not accepted.
    public var rejected: [String: String] = [:]
    /// Keys present but not understood (newer servers add some).
    public var ignoredKeys: [String] = []

    /// Keys the link reads elsewhere: neither parsed here nor "ignored" (`communicationsPolicy`,
    /// read by the link's communications policy).
    public static let handledElsewhere: Set<String> = ["communicationsPolicy"]
    /// The sensor keys of `notApplicable`.
    static let sensorKeys = ["poseFormat": "json", "depthFormat": "png"]

    public init(videoFormat: VideoFormat? = nil, recordsVideo: Bool? = nil, chunkDurationMs: Int? = nil,
                bufferMaxMB: Int? = nil, framerate: Double? = nil, audioFormat: AudioFormat? = nil,
                timestampFormat: TimestampFormat? = nil) {
        self.videoFormat = videoFormat
        self.recordsVideo = recordsVideo
        self.chunkDurationMs = chunkDurationMs
        self.bufferMaxMB = bufferMaxMB
        self.framerate = framerate
        self.audioFormat = audioFormat
        self.timestampFormat = timestampFormat
    }

    /// True when a field that the recorder keeps for the next start was accepted.
    public var changesTuning: Bool {
        videoFormat != nil || recordsVideo != nil || chunkDurationMs != nil || bufferMaxMB != nil
            || framerate != nil || audioFormat != nil || timestampFormat != nil
    }

    init(_ config: [String: Any]) {
        for (key, value) in config {
            let shown = loggable("\(value)")
            switch key {
            case "videoFormat":
                if let s = value as? String, s.lowercased() == "none" {
                    recordsVideo = false
                } else if let s = value as? String, let f = VideoFormat(rawValue: s.lowercased()) {
                    videoFormat = f
                    recordsVideo = true
                } else {
                    rejected[key] = "\(shown) is not \"mp4\", \"mov\" or \"none\""
                }
            case "videoChunkDurationMs":
                chunkDurationMs = Self.integer(value)
                if chunkDurationMs == nil { rejected[key] = "\(shown) is not a whole number of milliseconds" }
            case "videoBufferMaxMB":
                bufferMaxMB = Self.integer(value)
                if bufferMaxMB == nil { rejected[key] = "\(shown) is not a whole number of MB" }
            case "fps":
                if let n = jsonNumber(value)?.doubleValue, n.isFinite { framerate = n } else {
                    rejected[key] = "\(shown) is not a number"
                }
            case "audioFormat":
                if let s = value as? String, let f = AudioFormat(rawValue: s.lowercased()) { audioFormat = f } else {
                    rejected[key] = "\(shown) is not \"wav\", \"m4a\" or \"none\""
                }
            case "timestampFormat":
                if let s = value as? String, let f = TimestampFormat(rawValue: s.lowercased()) { timestampFormat = f } else {
                    rejected[key] = "\(shown) is not \"txt\" or \"none\""
                }
            case let sensor where Self.sensorKeys[sensor] != nil:
                let expected = Self.sensorKeys[sensor]!
                if let s = value as? String, s.lowercased() == "none" { break }
                if let s = value as? String, s.lowercased() == expected { notApplicable[key] = expected } else {
                    rejected[key] = "\(shown) is not \"\(expected)\" or \"none\""
                }
            case let other where Self.handledElsewhere.contains(other):
                break
            default:
                ignoredKeys.append(key)
            }
        }
        ignoredKeys.sort()
    }

    /// A JSON number (not a boolean) that is a whole number an Int holds.
    private static func integer(_ value: Any) -> Int? { jsonInteger(value) }
}

/// A JSON number, not a boolean. JSONSerialization hands both out as
/// NSNumber, and on Linux `0 is Bool` and `1 is Bool` are true, so the
/// boolean is told apart by its storage type ("c"), not by a cast.
public func jsonNumber(_ value: Any?) -> NSNumber? {
    guard let n = value as? NSNumber, String(cString: n.objCType) != "c" else { return nil }
    return n
}

/// A JSON `true` or `false`, not a number (`value as? Bool` takes 0 and 1 too).
public func jsonBool(_ value: Any?) -> Bool? {
    guard let n = value as? NSNumber, String(cString: n.objCType) == "c" else { return nil }
    return n.boolValue
}

/// A JSON number that is a whole number, not a boolean (`value as? Int` takes `true`).
public func jsonInteger(_ value: Any?) -> Int? {
    guard let n = jsonNumber(value), n.doubleValue.rounded() == n.doubleValue, abs(n.doubleValue) < 1e15 else { return nil }
    return n.intValue
}

/// Messages the recorder sends.
public enum ClientMessage {
    public struct ClientInfo: Encodable, Equatable {
        public var type = "clientInfo"
        public var clientName: String
        public init(clientName: String) { self.clientName = clientName }
    }

    /// Phase 1 of an upload; the file follows as one binary message.
    public struct UploadMetadata: Encodable, Equatable {
        public var type = "upload"
        public var filename: String
        public var filesize: Int64
        public var mimetype: String
        public init(filename: String, filesize: Int64, mimetype: String) {
            self.filename = filename
            self.filesize = filesize
            self.mimetype = mimetype
        }
    }

    public struct ChunkSaved: Encodable, Equatable {
        public struct Dimensions: Encodable, Equatable { public var width: Int; public var height: Int }
        public var type = "chunkSaved"
        public var startTime: Double
        public var endTime: Double
        public var camera: String
        public var size: Int64
        public var format: String
        public var fps: Double
        public var dimensions: Dimensions
        public init(startTime: Double, endTime: Double, camera: String, size: Int64, format: String,
                    fps: Double, width: Int, height: Int) {
            self.startTime = startTime
            self.endTime = endTime
            self.camera = camera
            self.size = size
            self.format = format
            self.fps = fps
            dimensions = Dimensions(width: width, height: height)
        }
    }

    /// Compact JSON text for a message.
    public static func text<M: Encodable>(_ message: M) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(message)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
