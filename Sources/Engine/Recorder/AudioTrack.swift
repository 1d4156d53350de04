import Foundation
import GStreamerSupport

/// The audio captured through `appsink name=audio_in`, kept just long
/// enough to cut each finished chunk's stretch out of it.
///
/// Every buffer is stored with the time of its first sample on the
/// pipeline's monotonic clock (base time + running time: the clock that
/// measures the chunks' spans),
/// so a cut starts at the chunk's first frame and lasts exactly as long as
/// the chunk; a stretch the source did not deliver (it started late, or
/// dropped audio) is silence, so the audio never drifts against the video.
///
/// Threading: `append` runs on the audio branch's streaming thread, `cut`
/// on the recorder's worker; everything is under `condition`.
final class AudioTrack: @unchecked Sendable {
    /// What the loader converts the audio path to (DESIGN.md: PCM 16-bit mono 44.1 kHz).
    static let sampleRate = 44_100
    static let bytesPerSample = 2
    static let caps = "audio/x-raw,format=S16LE,layout=interleaved,rate=\(sampleRate),channels=1"

    private struct Piece {
        var startNs: UInt64
        var samples: Data
        var endNs: UInt64 { startNs + UInt64(samples.count / AudioTrack.bytesPerSample) * 1_000_000_000 / UInt64(AudioTrack.sampleRate) }
    }

    private let condition = MonotonicCondition()
    private var pieces: [Piece] = []
    private var ended = false
    /// How much audio to keep at most behind the newest (set from the chunk length):
    /// bounds memory while no chunk is cut (video off, a stalled writer).
    private var keepNs: UInt64 = 120_000_000_000

    /// Starts taking the sink's buffers. `baseTime` gives the pipeline's base time when a buffer arrives.
    func attach(to sink: AppSink, baseTime: @escaping () -> ClockTime) {
        // The service owns these: no waiting for a preroll, no clock sync
        // (the timestamps are what matter), and nothing dropped silently.
        sink.element.set("sync", false)
        sink.element.set("async", false)
        sink.element.set("drop", false)
        sink.element.set("enable-last-sample", false)
        sink.setHandlers(onSample: { [weak self] sample in
            guard let self, let running = sample.runningTime, let bytes = sample.bytes else { return true }
            self.append(startNs: UInt64(baseTime()) + UInt64(running), samples: bytes)
            return true
        }, onEndOfStream: { [weak self] in self?.end() })
    }

    /// False while no chunk asks for audio: buffers are not kept then.
    private var wanted = true

    func setWanted(_ wanted: Bool) {
        condition.lock(); defer { condition.unlock() }
        self.wanted = wanted
    }

    func append(startNs: UInt64, samples: Data) {
        condition.lock(); defer { condition.unlock() }
        guard wanted else { return }
        pieces.append(Piece(startNs: startNs, samples: samples))
        let newest = pieces.last!.endNs
        if newest > keepNs { pieces.removeAll { $0.endNs < newest - keepNs } }
        condition.broadcast()
    }

    /// No more audio will come (the branch ended or the session stops).
    func end() {
        condition.lock(); defer { condition.unlock() }
        ended = true
        condition.broadcast()
    }

    func setChunkLength(ms: Int) {
        condition.lock(); defer { condition.unlock() }
        // A chunk's audio is cut a little after the chunk closes: keep two chunks and a margin.
        keepNs = UInt64(2 * ms + 30_000) * 1_000_000
    }

    /// The samples from `startNs` to `endNs` (pipeline clock), waiting up to
    /// `wait` seconds for the audio to reach `endNs`; silence where nothing
    /// was captured. nil when no captured audio overlaps the stretch at all.
    /// Audio before `endNs` is dropped afterwards (chunks are cut in order).
    func cut(fromNs startNs: UInt64, toNs endNs: UInt64, wait: Double) -> Data? {
        guard endNs > startNs else { return nil }
        condition.lock(); defer { condition.unlock() }
        let deadline = MonotonicCondition.deadline(after: wait)
        while !ended, (pieces.last?.endNs ?? 0) < endNs, condition.wait(until: deadline) {}
        let count = Self.sampleIndex(endNs - startNs)
        var out = Data(count: count * Self.bytesPerSample)
        var any = false
        for piece in pieces where piece.endNs > startNs && piece.startNs < endNs {
            // Where the piece's first sample falls in the output, in samples (may be negative).
            let offset = piece.startNs >= startNs ? Self.sampleIndex(piece.startNs - startNs) : -Self.sampleIndex(startNs - piece.startNs)
            let pieceCount = piece.samples.count / Self.bytesPerSample
            let from = max(0, -offset), to = min(pieceCount, count - offset)
            guard from < to else { continue }
            any = true
            out.replaceSubrange((offset + from) * Self.bytesPerSample..<(offset + to) * Self.bytesPerSample,
                                with: piece.samples[piece.samples.startIndex + from * Self.bytesPerSample..<piece.samples.startIndex + to * Self.bytesPerSample])
        }
        pieces.removeAll { $0.endNs <= endNs }
        return any ? out : nil
    }

    private static func sampleIndex(_ ns: UInt64) -> Int {
        Int((ns * UInt64(sampleRate) + 500_000_000) / 1_000_000_000)
    }

    /// A WAV file (RIFF, PCM) holding `samples` in `caps`' format.
    static func wav(_ samples: Data) -> Data {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count))
        data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16)
        u16(1)                                                   // PCM
        u16(1)                                                   // mono
        u32(UInt32(sampleRate))
        u32(UInt32(sampleRate * bytesPerSample))                 // byte rate
        u16(UInt16(bytesPerSample))                              // block align
        u16(UInt16(bytesPerSample * 8))                          // bits per sample
        data.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count))
        data.append(samples)
        return data
    }
}
