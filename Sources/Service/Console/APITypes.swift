import Foundation

// The REST API's JSON shapes (snake_case keys, ISO 8601 times), one type
// per answer. Encoded with `ConsoleJSON.encoder`.

struct StatusAnswer: Encodable {
    struct Recording: Encodable {
        var state: String
        var framesCaptured: Int
        var framesRecorded: Int
        var chunksRecorded: Int
        var lastProblem: String?
        var videoFormat: String
        var chunkDurationMs: Int
        var pipeline: String
        var width: Int?
        var height: Int?
        var framesPerSecond: Double?
        var privacy: String
    }
    struct Storage: Encodable {
        var path: String
        var chunks: Int
        var bytes: Int64
        var bufferMaxBytes: Int64
        var diskFreeBytes: Int64?
        var oldest: Date?
        var newest: Date?
    }
    struct Server: Encodable {
        var state: String
        /// "ws" or "wss" while connected.
        var scheme: String?
        var address: String?
    }
    /// How recording goes (`Recorder.health`), with the status /healthz gives.
    struct Health: Encodable {
        struct Privacy: Encodable {
            var behind: Bool
            var heldFrames: Int
            var lateLastMinute: Int
            var droppedLastMinute: Int
            var blackedOutLastMinute: Int
            var hiddenShareLastMinute: Double
        }
        /// ok, degraded or not_recording.
        var status: String
        var problems: [String]
        var recordedFramesPerSecond: Double?
        var sourceFramesPerSecond: Double?
        var cpuPercent: Double?
        var temperatureCelsius: Double?
        var privacy: Privacy?
    }
    /// The wall clock as the recorder sees it.
    struct Clock: Encodable {
        /// Nil where synchronisation is not visible (no systemd-timesyncd).
        var synchronized: Bool?
        /// Times the wall clock was set since the recorder started, and the latest (seconds, negative: back).
        var steps: Int
        var lastStepSeconds: Double?
    }
    var version: String
    var device: String
    var time: Date
    var clock: Clock
    var recording: Recording
    var health: Health
    var storage: Storage
    var server: Server
    /// The RTSP stream out, when `stream.rtsp_listen` is set.
    var stream: Stream?

    struct Stream: Encodable {
        struct Client: Encodable {
            var address: String
            var connected: Date
        }
        /// "listening", or "not_listening" (it could not listen: the log says why).
        var state: String
        /// rtsp://HOST:PORT/live (rtsps with the console's certificate); HOST is the one the request
        /// came to when the stream listens on every interface.
        var url: String?
        var user: String
        var clients: [Client]
        var clientsRefused: Int
        var frames: Int
        var bytes: Int
        var framesDropped: Int
        /// Players closed because they stopped reading for stream.session_timeout_s.
        var clientsClosedStalled: Int
    }
}

struct ChunkAnswer: Encodable {
    var name: String
    var start: Date
    var end: Date
    var durationS: Double
    var sizeBytes: Int64
    var format: String
    var url: String
    /// False when it was recorded before the wall clock was synchronised: its times may be wrong.
    var clockSynchronized: Bool?
    /// The files recorded with it (timestamps, audio), in the order an upload sends them.
    var companions: [CompanionAnswer]
}

struct CompanionAnswer: Encodable {
    var name: String
    var kind: String
    var sizeBytes: Int64
    var mimeType: String
    var url: String
}

struct ChunksAnswer: Encodable {
    var chunks: [ChunkAnswer]
}

struct SettingsAnswer: Codable, Equatable {
    var videoFormat: String
    var chunkDurationMs: Int
    var bufferMaxMb: Int
}

struct ServerAnswer: Encodable {
    var name: String
    var host: String
    var addresses: [String]
    var port: Int
}

struct UploadRequest: Decodable {
    struct Range: Decodable {
        var from: Date
        var to: Date
    }
    var from: Date?
    var to: Date?
    var ranges: [Range]?
}

struct UploadAccepted: Encodable {
    struct Range: Encodable {
        var from: Date
        var to: Date
        var chunks: Int
    }
    var accepted: [Range]
}

/// `GET /api/v1/uploads`: the server link's upload queue.
struct UploadsAnswer: Encodable {
    struct InFlight: Encodable {
        var name: String
        var reason: String
        var attempt: Int
        var since: Date
    }
    struct Waiting: Encodable {
        var name: String
        var reason: String
        var attempts: Int
    }
    struct Watch: Encodable {
        var from: Date
        var to: Date
        var reason: String
    }
    struct Finished: Encodable {
        var name: String
        var ok: Bool
        var at: Date
        var message: String?
    }
    var inFlight: InFlight?
    var waiting: [Waiting]
    var watches: [Watch]
    /// The last uploads that ended, newest first.
    var finished: [Finished]
    var finishedOkTotal: Int
    var finishedFailedTotal: Int
}

struct LoginAnswer: Encodable {
    var token: String
    var csrfToken: String
    var user: String
}

struct SessionAnswer: Encodable {
    var user: String
    var csrfToken: String?
}

/// Every error the API answers has this one shape.
struct ErrorAnswer: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
        var field: String?
        var allowed: [String]?
    }
    var error: Detail
}

enum ConsoleJSON {
    /// Times carry milliseconds: chunks start and end on frames, not on whole seconds, and a
    /// page that placed them on whole seconds played the chunk after the moment clicked.
    /// (ISO8601DateFormatter is thread-safe.)
    private static let millisecondTimes: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
    private static let wholeSecondTimes = ISO8601DateFormatter()

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(millisecondTimes.string(from: date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = millisecondTimes.date(from: text) ?? wholeSecondTimes.date(from: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 time: \(text)")
            }
            return date
        }
        return decoder
    }()
}
