import Foundation
import GStreamerSupport
import Logging
import Storage

/// What a finished chunk's companions are made from: fixed when the chunk
/// opened (settings apply from the next chunk) and when it closed.
struct CompanionJob: Sendable {
    /// The chunk's name's start (epoch ms) and its exact span on the pipeline's (monotonic) clock, which the audio is kept on.
    var startMs: Int64
    var startClockNs: UInt64
    var endClockNs: UInt64
    /// Capture times (epoch ms) of the chunk's frames in order; nil: no timestamps file.
    var frameTimesMs: [Int64]?
    var audio: AudioFormat

    /// `<frame index> : <epoch ms>`, one line per frame, joined by `\n`, no trailing newline.
    static func timestampsText(_ times: [Int64]) -> String {
        times.enumerated().map { "\($0.offset) : \($0.element)" }.joined(separator: "\n")
    }
}

/// Writes a finished chunk's companion files (`Companion`) into the storage
/// folder: each appears under its final name only once complete (a hidden
/// temporary renamed into place). A companion that cannot be written is
/// logged and left out; the chunk itself is never held back by it.
///
/// Threading: `write` runs on the recorder's worker (an AAC encode takes a
/// moment, and the audio may still be arriving).
struct CompanionWriter {
    let folder: StorageFolder
    let audio: AudioTrack?
    let logger: Logger

    /// How long to wait for the audio to reach the chunk's end (a chunk is
    /// closed a GOP after its end, so the audio is normally there already).
    static let audioWait = 2.0

    func write(_ job: CompanionJob) -> [Companion] {
        let candidates = Companion.candidates(forChunkStartingAt: job.startMs)
        var written: [Companion] = []
        if let times = job.frameTimesMs, let companion = candidates.first(where: { $0.kind == .timestamps }) {
            do {
                try folder.writeAtomically(Data(CompanionJob.timestampsText(times).utf8), as: companion.file)
                written.append(companion)
            } catch {
                logger.error("cannot write \(companion.file): \(error)")
            }
        }
        if job.audio != .none, let companion = candidates.first(where: { $0.kind == .audio && $0.file.hasSuffix("." + job.audio.fileExtension) }) {
            if let audio {
                if let samples = audio.cut(fromNs: job.startClockNs, toNs: job.endClockNs, wait: Self.audioWait) {
                    do {
                        try writeAudio(samples, format: job.audio, as: companion.file)
                        written.append(companion)
                    } catch {
                        logger.error("cannot write \(companion.file): \(error)")
                    }
                } else {
                    logger.warning("no audio was captured during chunk_\(job.startMs); \(companion.file) left out")
                }
            } else {
                logger.debug("audio \(job.audio.rawValue) asked, but the pipeline has no audio_in branch")
            }
        }
        return written
    }

    private func writeAudio(_ samples: Data, format: AudioFormat, as name: String) throws {
        switch format {
        case .none:
            return
        case .wav:
            try folder.writeAtomically(AudioTrack.wav(samples), as: name)
        case .m4a:
            let temporary = try folder.createTemporary(for: name)
            do {
                try Self.encodeAAC(samples, to: folder.directory.appendingPathComponent(temporary).path)
                try folder.rename(temporary, to: name)
            } catch {
                try? folder.remove(temporary)
                throw error
            }
        }
    }

    /// AAC in MPEG-4 (avenc_aac, from gstreamer1.0-libav), encoded on the calling thread.
    static func encodeAAC(_ samples: Data, to path: String) throws {
        let pipeline = try Pipeline.parse("appsrc name=pcm format=time caps=\(AudioTrack.caps) ! audioconvert ! avenc_aac ! mp4mux ! filesink name=out")
        guard let out = pipeline.element(named: "out"), let pcm = pipeline.element(named: "pcm").flatMap(AppSource.init) else {
            throw GStreamerError("the AAC encoder pipeline is incomplete")
        }
        out.set("location", path)
        // The appsrc takes buffers once started.
        pipeline.setState(.paused)
        // One-second buffers with exact timestamps.
        let step = AudioTrack.sampleRate * AudioTrack.bytesPerSample
        var offset = 0
        let bytes = [UInt8](samples)
        while offset < bytes.count {
            let end = min(bytes.count, offset + step)
            let first = UInt64(offset / AudioTrack.bytesPerSample), count = UInt64((end - offset) / AudioTrack.bytesPerSample)
            let pts = first * 1_000_000_000 / UInt64(AudioTrack.sampleRate)
            let next = (first + count) * 1_000_000_000 / UInt64(AudioTrack.sampleRate)
            guard pcm.push(bytes: Array(bytes[offset..<end]), presentationTime: ClockTime(pts), duration: ClockTime(next - pts)) else {
                throw GStreamerError("the AAC encoder refused the audio")
            }
            offset = end
        }
        pcm.endOfStream()
        try pipeline.runToEnd(timeoutSeconds: 30)
    }
}
