import Foundation
import RecorderCore

/// Decides which frame starts the next chunk, before it reaches the encoder.
///
/// splitmuxsink left to itself cuts one GOP short with real cameras: with
/// `max-size-time` and keyframe requests, the keyframe it asks for lands on
/// the first frame at or after the limit, whose timestamp jitters a few
/// milliseconds past it, so the GOP ending there "overruns" and it cuts at
/// the keyframe before. Instead the frame path asks here about every frame:
/// the first one at or past the chunk's start + its length starts the next
/// chunk, so it goes to the encoder as a keyframe and splitmuxsink is told
/// to split exactly there (`onCut`). A chunk is then its length to within a frame.
///
/// A step of the wall clock (`WallClock`) also starts the next chunk, so no
/// chunk spans two times: the chunk open at the step ends there, and the
/// next is named in the new time. The wall clock's offset is read at every
/// frame and kept from each chunk's first frame on (`offsets`), which names it.
///
/// Threading: `startsChunk` runs on the capture thread (the frame path's
/// pushes); `setLength` on the main loop; `restart` on the encoder's
/// streaming thread (a container switch); `wallClockOffset` on
/// splitmuxsink's streaming thread. State is under `lock`; `onCut` is
/// called outside it.
final class ChunkCuts: @unchecked Sendable {
    private let lock = NSLock()
    private let wallClock: WallClock
    /// The wall clock's offset from each chunk's first frame on.
    private var offsets = WallClockOffsets()
    /// Nil while no chunks are written (no video recorded): no frame starts one.
    private var lengthNs: UInt64?
    /// Running time of the current chunk's first frame; nil before the first frame.
    private var chunkStart: UInt64?
    /// Frame timestamps are rounded to the nanosecond: a frame due exactly at
    /// the chunk's end may come out a hair before it, and still ends the chunk.
    private static let roundingSlackNs: UInt64 = 1_000_000
    /// Asks the chunk sink to start a new chunk at this running time (set before the pipeline plays).
    var onCut: ((UInt64) -> Void)?

    init(lengthMs: Int?, wallClock: WallClock) {
        lengthNs = lengthMs.map { UInt64($0) * 1_000_000 }
        self.wallClock = wallClock
    }

    /// True when the frame at `runningTime` (about to be pushed) starts a new
    /// chunk; the sink has then been asked to split there.
    func startsChunk(at runningTime: UInt64) -> Bool {
        let (offset, step) = wallClock.observe()
        lock.lock()
        // No chunks are written: nothing is named, so no offset is kept (a step is still logged and counted).
        guard let length = lengthNs else { lock.unlock(); return false }
        guard let start = chunkStart else {
            // The first frame starts the first chunk; an encoder's first frame is a keyframe anyway.
            chunkStart = runningTime
            offsets.set(offset, from: runningTime)
            lock.unlock()
            return false
        }
        guard step != nil || runningTime &+ Self.roundingSlackNs >= start &+ length else { lock.unlock(); return false }
        chunkStart = runningTime
        offsets.set(offset, from: runningTime)
        lock.unlock()
        onCut?(runningTime)
        return true
    }

    /// The wall clock's offset (wall minus monotonic) for the chunk whose first
    /// frame is at `runningTime`; nil before any frame was pushed.
    func wallClockOffset(atRunningTime runningTime: UInt64) -> Int64? {
        lock.withLock { offsets.offsetNs(atRunningTime: runningTime) }
    }

    /// A new length for the chunk being written and those after it (nil: no chunks).
    func setLength(ms: Int?) {
        lock.withLock { lengthNs = ms.map { UInt64($0) * 1_000_000 } }
    }

    /// A new chunk sink took over at the keyframe at `runningTime`: its first chunk starts there.
    func restart(at runningTime: UInt64, lengthMs: Int?) {
        let offset = wallClock.currentOffsetNs
        lock.withLock {
            chunkStart = runningTime
            offsets.set(offset, from: runningTime)
            lengthNs = lengthMs.map { UInt64($0) * 1_000_000 }
        }
    }
}
