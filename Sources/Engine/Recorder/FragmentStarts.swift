/// Where each chunk of one sink ends: at the start of the chunk after it.
///
/// splitmuxsink reports a chunk closed by a split at the start of the next
/// chunk, but finalises chunks asynchronously, so their "closed" messages may
/// come out of order: a later chunk may close before the one before it. The
/// start of the later chunk must then outlive its own close, because it is
/// still the end of the earlier one.
///
/// Pure bookkeeping; `ChunkSink` keeps one per sink under its lock.
struct FragmentStarts: Equatable {
    /// Running times of the first frames of the chunks opened, oldest first.
    private(set) var starts: [UInt64] = []

    /// A chunk whose first frame has running time `start` opened.
    mutating func opened(at start: UInt64) { starts.append(start) }

    /// The chunk that started at `start` closed while chunks starting at
    /// `stillOpen` are open: returns where it ends (its successor's start),
    /// nil if no chunk followed it. Forgets the starts nobody can end at any more.
    mutating func closed(startingAt start: UInt64, stillOpen: [UInt64]) -> UInt64? {
        let successor = starts.first { $0 > start }
        // Every start before the earliest chunk still open is a closed chunk's.
        let earliestOpen = stillOpen.min() ?? .max
        starts.removeAll { $0 < earliestOpen }
        return successor
    }
}
