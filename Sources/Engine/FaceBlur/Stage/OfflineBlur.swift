import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import Recorder
import RecorderCore

/// Runs the face-blur stage over a video file: decode, blur, encode to mp4
/// or mov (by the output's extension). The same stage as the live
/// recorder, waiting for the detector instead of racing a camera.
public enum OfflineBlur {
    public struct Report: Sendable {
        public var framesIn: Int
        public var framesOut: Int
        public var seconds: Double
        public var counters: FaceBlurStage.Counters
        /// A replay's searches, answered exactly and approximately (`DetectionEvidence.Replay`).
        public var replayed: DetectionEvidence.Replay.Counts?
        public var framesPerSecond: Double { seconds > 0 ? Double(framesOut) / seconds : 0 }
    }

    public struct Progress: Sendable {
        public var frames: Int
        public var position: Double
        public var duration: Double?
        public var elapsed: Double
    }

    /// x264 speed presets, fastest first.
    public static let encoderPresets = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"]

    /// The encoder `blur` writes with (a fixed quantiser: the same picture
    /// quality whatever the content). A plain re-encode with it is the floor
    /// of what `blur` can change outside the faces (the tests and
    /// bench/live-faces --offline compare against one).
    public static func encoder(preset: String = "ultrafast") -> String {
        "x264enc speed-preset=\(preset) pass=quant quantizer=20 key-int-max=60"
    }

    /// `encoderPreset`: x264's speed preset. At the same quantiser the picture
    /// quality is about the same; slower presets make smaller files and cost
    /// more CPU.
    ///
    /// The output is written to a hidden temporary file beside it and moved
    /// to its name only once complete and playable (see `OutputFile`): the
    /// input is never opened for writing, and an existing output is replaced
    /// only with `force`. `live`: the file plays in real time through the
    /// live stage, as the recorder would take it from a camera (deadlines,
    /// late frames, templates, spare-time tiles; `settings` should be live
    /// ones), to see or replay what live recording does to a clip.
    /// `evidence`, `observeHidden` and `makeDetector`: as for `FaceBlurStage`.
    public static func run(input: String, output: String, settings: FaceBlurSettings,
                           encoderPreset: String = "ultrafast", force: Bool = false, live: Bool = false,
                           logger: Logger = Logger(label: "allspark.blur"),
                           evidence: DetectionEvidence.Role? = nil,
                           observeHidden: ((_ frame: Int, _ regions: [FaceRect]) -> Void)? = nil,
                           progress: ((Progress) -> Void)? = nil,
                           makeDetector: ((FaceBlurSettings) throws -> any FaceDetecting)? = nil) throws -> Report {
        guard FileManager.default.isReadableFile(atPath: input) else {
            throw GStreamerError("\(input): no such file")
        }
        let ext = (output as NSString).pathExtension.lowercased()
        guard let format = VideoFormat(rawValue: ext) else {
            throw GStreamerError("\(output): the output must end in .mp4 or .mov")
        }
        guard encoderPresets.contains(encoderPreset) else {
            throw GStreamerError("unknown encoder preset \(encoderPreset); use one of \(encoderPresets.joined(separator: ", "))")
        }
        let target: OutputFile
        do {
            target = try OutputFile(writing: output, from: input, force: force)
        } catch {
            throw GStreamerError("\(error)")
        }
        defer { target.discard() }   // unless committed
        let quote = { (path: String) in "\"" + path.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        // async=false on the file sink: its preroll would wait for frames
        // that only flow once the appsink side plays (one-pipeline deadlock).
        let audio = audioBranch(for: URL(fileURLWithPath: input), quoted: quote(input))
        let pipeline = try Pipeline.parse("""
            filesrc location=\(quote(input)) ! decodebin ! videoconvert ! video/x-raw,format=I420 ! appsink name=blur_in \
            appsrc name=blur_out ! videoconvert ! \(encoder(preset: encoderPreset)) \
            ! h264parse ! \(format.muxerFactory) name=mux ! filesink async=false location=\(quote(target.temporaryPath)) \
            \(audio.description)
            """)
        if let kept = audio.kept { logger.info("\(input): keeping its audio track (\(kept))") }
        guard let sinkElement = pipeline.element(named: "blur_in"), let sink = AppSink(sinkElement),
              let sourceElement = pipeline.element(named: "blur_out"), let source = AppSource(sourceElement) else {
            throw GStreamerError("cannot build the blur pipeline")
        }
        let stage = try FaceBlurStage(settings: settings, realTime: live, logger: logger, evidence: evidence,
                                      observeHidden: observeHidden, makeDetector: makeDetector)
        let path = FramePath(sink: sink, source: source, processor: stage)
        path.start(realTime: live)

        let started = Date()
        do {
            try pipeline.playToEnd(whilePlaying: {
                progress.map { report in
                    MainLoop.every(0.5) {
                        report(Progress(frames: path.statistics.recorded, position: pipeline.position ?? 0,
                                        duration: pipeline.duration, elapsed: Date().timeIntervalSince(started)))
                        return true
                    }
                }
            })
        } catch {
            path.detach()
            throw GStreamerError("\(input): \(error); \(output) was not written")
        }
        path.detach()
        guard MediaProbe.duration(of: URL(fileURLWithPath: target.temporaryPath)) != nil else {
            throw GStreamerError("\(input): the blurred result is not playable; \(output) was not written")
        }
        do {
            try target.commit()
        } catch {
            throw GStreamerError("\(error)")
        }
        let seconds = Date().timeIntervalSince(started)
        let stats = path.statistics
        var replayed: DetectionEvidence.Replay.Counts?
        if case .replay(let replay) = evidence { replayed = replay.counts }
        return Report(framesIn: stats.captured, framesOut: stats.recorded, seconds: seconds, counters: stage.counters, replayed: replayed)
    }

    /// The input's audio, read a second time from the file (audio has no
    /// faces, so it bypasses the privacy stage) into the muxer: AAC is
    /// copied as it is (mp4 and mov both hold it), any other codec is
    /// decoded and encoded to AAC. Empty without an audio track.
    static func audioBranch(for input: URL, quoted: String) -> (description: String, kept: String?) {
        guard let caps = MediaProbe.audioCaps(of: input) else { return ("", nil) }
        if caps.hasPrefix("audio/mpeg"), caps.contains("mpegversion=(int)4") {
            return ("filesrc location=\(quoted) ! parsebin ! audio/mpeg,mpegversion=4 ! queue ! aacparse ! mux.audio_%u", "AAC, copied")
        }
        return ("filesrc location=\(quoted) ! decodebin ! audio/x-raw ! queue ! audioconvert ! audioresample ! avenc_aac ! aacparse ! mux.audio_%u",
                "encoded to AAC")
    }
}
