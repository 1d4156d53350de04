/// What the box lets a server ask for: the box owns its limits
/// (`[server] max_request_future_s`, `min_buffer_mb`, `max_buffer_mb`,
/// `min_chunk_ms`, `max_chunk_ms`, `max_record_duration_s`). A request outside them is clamped to them,
/// and the clamp is logged by the caller (each `clamp…` says what it did).
public struct ServerBounds: Equatable, Sendable {
    /// How far past now a requested range may reach (a range into the future
    /// uploads every chunk recorded in it, as it is recorded).
    public var maxRequestFutureSeconds: Double
    /// The smallest and largest ring buffer a server may set (`videoBufferMaxMB`).
    public var minBufferMB: Int
    public var maxBufferMB: Int
    /// The shortest and longest chunk a server may set (`videoChunkDurationMs`): a chunk is
    /// one upload message (servers take at most 300 MiB), and very short ones multiply files.
    public var minChunkMs: Int
    public var maxChunkMs: Int
    /// The longest `record` duration (with `autoUpload`) a server may ask for.
    public var maxRecordDurationSeconds: Double

    public static let defaultMaxRequestFutureSeconds = 3600.0
    public static let defaultMinBufferMB = 1024
    public static let defaultMaxRecordDurationSeconds = 3600.0
    public static let defaultMinChunkMs = 2_000
    public static let defaultMaxChunkMs = 300_000

    public init(maxRequestFutureSeconds: Double = defaultMaxRequestFutureSeconds,
                minBufferMB: Int = defaultMinBufferMB, maxBufferMB: Int = 16_000,
                minChunkMs: Int = defaultMinChunkMs, maxChunkMs: Int = defaultMaxChunkMs,
                maxRecordDurationSeconds: Double = defaultMaxRecordDurationSeconds) {
        self.maxRequestFutureSeconds = maxRequestFutureSeconds
        self.minBufferMB = min(minBufferMB, maxBufferMB)
        self.maxBufferMB = maxBufferMB
        self.minChunkMs = min(minChunkMs, maxChunkMs)
        self.maxChunkMs = maxChunkMs
        self.maxRecordDurationSeconds = maxRecordDurationSeconds
    }

    /// The part of `[start, end)` that reaches no further than `maxRequestFutureSeconds`
    /// past `now` (nil when nothing is left), and whether it was cut.
    public func clampRange(start: Double, end: Double, now: Double) -> (range: (start: Double, end: Double)?, clamped: Bool) {
        let limit = now + maxRequestFutureSeconds
        guard end > limit else { return ((start, end), false) }
        return (start < limit ? (start, limit) : nil, true)
    }

    /// `mb` within `minBufferMB…maxBufferMB`.
    public func clampBuffer(_ mb: Int) -> Int { Swift.min(Swift.max(mb, minBufferMB), maxBufferMB) }

    /// `ms` within `minChunkMs…maxChunkMs`.
    public func clampChunkDuration(_ ms: Int) -> Int { Swift.min(Swift.max(ms, minChunkMs), maxChunkMs) }

    /// `seconds` no longer than `maxRecordDurationSeconds`.
    public func clampRecordDuration(_ seconds: Double) -> Double { Swift.min(seconds, maxRecordDurationSeconds) }
}
