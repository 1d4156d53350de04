/// Puts finished chunks back in the order they started before they are reported.
///
/// The chunk sink finalises each chunk with its own muxer (splitmuxsink's
/// `async-finalize`), so under load a short last chunk can close, and be
/// named, before the long one before it has written its index: CI once saw
/// `chunkSaved` for a 0.4 s chunk go out before the 2 s chunk that preceded
/// it. The catalog does not care, but the server and anything reading the
/// reports in turn expect the oldest first, as the iOS app sends them.
///
/// A chunk is held while a chunk that started earlier is still open or still
/// being named; once none is, it is released with the others behind it.
/// A chunk that turned out not to be kept (`named(nil, …)`) releases those
/// behind it just the same.
///
/// Pure value, keyed by each chunk's start on the pipeline's monotonic clock
/// (recording order, whatever the wall clock did): the recording
/// session keeps one on the main loop.
public struct ChunkReportOrder<Chunk> {
    /// Closed chunks whose naming has not come back yet.
    private var naming: Set<UInt64> = []
    /// Named chunks waiting for an older one.
    private var held: [UInt64: Chunk] = [:]

    public init() {}

    /// A chunk closed and went to be named.
    public mutating func closed(startNs: UInt64) { naming.insert(startNs) }

    /// Its naming came back (`chunk` nil when it is not kept). `oldestOpenStartNs`:
    /// the start of the oldest chunk still being written or closing, if any.
    /// Returns what can be reported now, oldest first.
    public mutating func named(_ chunk: Chunk?, startNs: UInt64, oldestOpenStartNs: UInt64?) -> [Chunk] {
        naming.remove(startNs)
        if let chunk { held[startNs] = chunk }
        return release(oldestOpenStartNs: oldestOpenStartNs)
    }

    /// What can be reported now, oldest first. With `oldestOpenStartNs` nil (the
    /// recording stopped: what is still open is never closed), only chunks
    /// still being named hold the younger ones back.
    public mutating func release(oldestOpenStartNs: UInt64?) -> [Chunk] {
        let blockedFrom = min(naming.min() ?? .max, oldestOpenStartNs ?? .max)
        let ready = held.keys.filter { $0 < blockedFrom }.sorted()
        return ready.compactMap { held.removeValue(forKey: $0) }
    }

    /// Chunks named and not yet released.
    public var heldCount: Int { held.count }
}
