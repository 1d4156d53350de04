import Foundation

/// A time as users write it in a query (`chunks --from`, `upload --from`,
/// `/api/v1/chunks?from=`): epoch seconds, a negative number of seconds
/// before now (`-300`: five minutes ago), or an ISO 8601 time.
public enum QueryTime {
    public static let expected = "epoch seconds, seconds before now (-300), or an ISO 8601 time like 2026-11-21T10:00:00Z"

    /// Epoch seconds; nil when `text` is none of the forms.
    public static func parse(_ text: String, now: Double = Date().timeIntervalSince1970) -> Double? {
        if let seconds = Double(text) {
            guard seconds.isFinite else { return nil }
            return seconds < 0 ? now + seconds : seconds
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
