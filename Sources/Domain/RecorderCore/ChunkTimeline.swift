/// What a chunk sink writes: the container and the chunk length.
public struct ChunkSettings: Equatable, Sendable, CustomStringConvertible {
    public var format: VideoFormat
    public var chunkDurationMs: Int
    /// False: frames go to no chunk at all (the server's `videoFormat` "none").
    public var recordsVideo: Bool

    public init(format: VideoFormat, chunkDurationMs: Int, recordsVideo: Bool = true) {
        self.format = format
        self.chunkDurationMs = chunkDurationMs
        self.recordsVideo = recordsVideo
    }

    public init(_ tuning: RecordingTuning) {
        self.init(format: tuning.videoFormat, chunkDurationMs: tuning.chunkDurationMs, recordsVideo: tuning.recordsVideo)
    }

    public var description: String { recordsVideo ? "\(format.rawValue), \(chunkDurationMs) ms" : "no video" }
}

/// The order in which requested chunk settings reach a running chunk sink.
///
/// A length change applies at once (the sink's next split honours it), but
/// a container switch takes a new sink at the next keyframe, which arrives
/// later on a streaming thread. Requests that come meanwhile wait here and
/// are applied one at a time, in the order asked: the next switch starts
/// only after the previous swap completed, and each new sink is configured
/// with the length in force when its switch starts, so a length asked
/// before the switch goes to the new sink and one asked after it follows it.
///
/// Pure value: the chunk sink keeps one and performs the `Step`s it returns.
public struct ChunkTimeline: Equatable, Sendable {
    /// What the sink receiving frames now writes.
    public private(set) var written: ChunkSettings
    /// The switch started and waiting for its keyframe, if any.
    public private(set) var pendingSwitch: ChunkSettings?
    /// Changes asked for and not yet started, oldest first.
    public private(set) var queued: [Change] = []

    public enum Change: Equatable, Sendable {
        case container(VideoFormat)
        case chunkLength(ms: Int)
        /// Start or stop recording video (a switch to a chunk sink or to none).
        case recording(Bool)
    }

    /// What the sink must do now.
    public enum Step: Equatable, Sendable {
        /// Set the length on the sink receiving frames now.
        case setChunkLength(ms: Int)
        /// Start a switch: at the next keyframe, move the frames to a new
        /// sink with these settings; then call `switchCompleted()`.
        case switchSink(to: ChunkSettings)
    }

    public init(_ settings: ChunkSettings) { written = settings }

    /// Where the sink ends up once every queued change is applied.
    public var requested: ChunkSettings {
        var settings = pendingSwitch ?? written
        for change in queued {
            switch change {
            case .container(let format): settings.format = format
            case .chunkLength(let ms): settings.chunkDurationMs = ms
            case .recording(let on): settings.recordsVideo = on
            }
        }
        return settings
    }

    /// True while nothing is pending: what is written is what was asked.
    public var isSettled: Bool { pendingSwitch == nil && queued.isEmpty }

    /// Asks for `target`: queues a container change and a length change
    /// where it differs from what is already asked (the length first, so
    /// a switch asked together with it gets the new length). Returns the
    /// steps to perform now, in order.
    public mutating func request(_ target: ChunkSettings) -> [Step] {
        let asked = requested
        if target.chunkDurationMs != asked.chunkDurationMs { queued.append(.chunkLength(ms: target.chunkDurationMs)) }
        if target.format != asked.format { queued.append(.container(target.format)) }
        if target.recordsVideo != asked.recordsVideo { queued.append(.recording(target.recordsVideo)) }
        return advance()
    }

    /// The pending switch's new sink receives the frames now. Returns the
    /// queued steps that can start now, in order.
    public mutating func switchCompleted() -> [Step] {
        guard let done = pendingSwitch else { return [] }
        written = done
        pendingSwitch = nil
        return advance()
    }

    /// The pending switch could not be made (the sink is being torn down,
    /// or a link failed): the old sink keeps the frames, and every change
    /// still queued is dropped; whoever restarts the sink starts it with `requested`.
    @discardableResult
    public mutating func abandon() -> ChunkSettings {
        let wanted = requested
        pendingSwitch = nil
        queued = []
        return wanted
    }

    private mutating func advance() -> [Step] {
        var steps: [Step] = []
        while pendingSwitch == nil, !queued.isEmpty {
            switch queued.removeFirst() {
            case .chunkLength(let ms):
                guard ms != written.chunkDurationMs else { continue }
                written.chunkDurationMs = ms
                steps.append(.setChunkLength(ms: ms))
            case .container(let format):
                guard format != written.format else { continue }
                // With no chunk sink there is nothing to switch: the sink made when video resumes takes it.
                guard written.recordsVideo else { written.format = format; continue }
                var next = written
                next.format = format
                pendingSwitch = next
                steps.append(.switchSink(to: next))
            case .recording(let on):
                guard on != written.recordsVideo else { continue }
                var next = written
                next.recordsVideo = on
                pendingSwitch = next
                steps.append(.switchSink(to: next))
            }
        }
        return steps
    }
}
