import Foundation
import AllSparkProtocol
import Logging
import SoupSupport

/// `GET /api/v1/logs`: the service's recent log lines.
struct LogsAnswer: Encodable {
    struct Line: Encodable {
        var sequence: Int
        var time: Date
        var level: String
        var label: String
        var message: String
    }
    var lines: [Line]
    /// The highest sequence number given, for `after=` in the next request.
    var last: Int
}

extension Console {
    /// `?level=info&contains=text&after=N&limit=N`: lines at least `level`, holding `contains`, newer than `after`.
    func recentLogs(_ request: HTTPRequest) -> HTTPResponse {
        var level = Logger.Level.trace
        if let text = request.query["level"], !text.isEmpty {
            guard let parsed = Logger.Level(rawValue: text) else {
                return error(422, "invalid_value", "level must be one of the allowed values", field: "level",
                             allowed: Logger.Level.allCases.map(\.rawValue))
            }
            level = parsed
        }
        var after = 0, limit = 500
        for (name, bound) in [("after", Int.max), ("limit", 2000)] {
            guard let text = request.query[name] else { continue }
            guard let value = Int(text), value >= 0, value <= bound else {
                return error(422, "invalid_value", "\(name) must be a whole number from 0 to \(bound)", field: name)
            }
            if name == "after" { after = value } else { limit = value }
        }
        let contains = request.query["contains"].flatMap { $0.isEmpty ? nil : String($0.prefix(200)) }
        let records = logs.records(atLeast: level, containing: contains, after: after, limit: limit)
        // Peer text was made loggable where it was logged; a line that still holds control or format
        // characters (a multi-line message) is escaped the same way, so each record stays one line.
        let lines = records.map { LogsAnswer.Line(sequence: $0.sequence, time: $0.time, level: $0.level.rawValue, label: $0.label,
                                                  message: Self.hasControls($0.message) ? loggable($0.message, limit: 4000) : $0.message) }
        return json(200, LogsAnswer(lines: lines, last: records.last?.sequence ?? after))
    }

    static func hasControls(_ text: String) -> Bool {
        text.unicodeScalars.contains {
            switch $0.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse: return true
            default: return false
            }
        }
    }
}
