import CGStreamer
import Foundation

/// Work on recorded files, for worker threads: a still picture of a file at
/// an offset, and several files joined into one without re-encoding. Both
/// block the calling thread (never the main loop's) and read the bus directly.
public enum MediaFiles {
    /// A JPEG of the video of `file` at `offset` seconds, `width` pixels wide (height by aspect).
    public static func jpegStill(of file: String, at offset: Double, width: Int, timeoutSeconds: Double = 10) throws -> Data {
        let pipeline = try Pipeline.parse("""
            filesrc location="\(escaped(file))" ! qtdemux ! h264parse ! avdec_h264 ! videoconvert ! videoscale
              ! video/x-raw,width=\(width),pixel-aspect-ratio=1/1 ! jpegenc quality=75 ! appsink name=out sync=false max-buffers=1
            """)
        defer { pipeline.setState(.null) }
        guard let out = pipeline.element(named: "out") else { throw GStreamerError("no appsink") }
        try pipeline.prerolled(timeoutSeconds)
        if offset > 0 {
            // ACCURATE: decoded from the keyframe before, so the picture is the frame at `offset` (keyframes are ~1 s apart).
            let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
            guard gst_element_seek_simple(pipeline.pointer, GST_FORMAT_TIME, flags, gint64(offset * 1e9)) != 0 else {
                throw GStreamerError("cannot seek to \(offset) s")
            }
            try pipeline.prerolled(timeoutSeconds)
        }
        let sink = UnsafeMutableRawPointer(out.pointer).assumingMemoryBound(to: GstAppSink.self)
        guard let raw = gst_app_sink_try_pull_preroll(sink, ClockTime(timeoutSeconds * 1e9)) else {
            throw GStreamerError("no picture at \(offset) s")
        }
        let sample = Sample(owning: raw)
        guard let bytes = sample.bytes else { throw GStreamerError("an empty picture") }
        return bytes
    }

    /// One part of a join: a file, and the part of it wanted (seconds from its start; nil for its start or end).
    public struct Part: Sendable {
        public var file: String
        public var from: Double?
        public var to: Double?
        public init(file: String, from: Double? = nil, to: Double? = nil) {
            self.file = file
            self.from = from
            self.to = to
        }
    }

    /// What a join made.
    public struct Joined: Sendable {
        /// Seconds of video written.
        public var duration: Double
        /// Parts left out because their picture differed from the first's (a muxer takes one format per track).
        public var skipped: [String]
    }

    /// Joins the H.264 video of `parts`, in order, into one MP4 at `output` without re-encoding:
    /// each part's encoded frames are read (from the keyframe at or before its `from`, up to its
    /// `to`) and given one running clock, so the gaps between parts vanish and the result plays
    /// as one video. Cuts fall on frames, the start on a keyframe (a second apart in recordings).
    public static func joinVideo(_ parts: [Part], into output: String, timeoutSeconds: Double = 600) throws -> Joined {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        let writer = try Pipeline.parse("""
            appsrc name=in format=time ! h264parse ! mp4mux faststart=true ! filesink location="\(escaped(output))"
            """)
        defer { writer.setState(.null) }
        guard let inElement = writer.element(named: "in") else { throw GStreamerError("no appsrc") }
        let source = UnsafeMutableRawPointer(inElement.pointer).assumingMemoryBound(to: GstAppSrc.self)
        var caps: UnsafeMutablePointer<GstCaps>?
        defer { if let caps { cgst_caps_unref(caps) } }
        var clock: ClockTime = 0     // where the next part starts on the output's clock
        var skipped: [String] = []
        var started = false
        for part in parts {
            let reader = try Pipeline.parse("""
                filesrc location="\(escaped(part.file))" ! qtdemux ! h264parse ! video/x-h264,stream-format=avc,alignment=au
                  ! appsink name=out sync=false max-buffers=8
                """)
            defer { reader.setState(.null) }
            guard let outElement = reader.element(named: "out") else { throw GStreamerError("no appsink") }
            let sink = UnsafeMutableRawPointer(outElement.pointer).assumingMemoryBound(to: GstAppSink.self)
            try reader.prerolled(max(1, deadline.timeIntervalSinceNow))
            if let from = part.from, from > 0 {
                let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_KEY_UNIT.rawValue | GST_SEEK_FLAG_SNAP_BEFORE.rawValue)
                guard gst_element_seek_simple(reader.pointer, GST_FORMAT_TIME, flags, gint64(from * 1e9)) != 0 else {
                    throw GStreamerError("\(part.file): cannot seek to \(from) s")
                }
                try reader.prerolled(max(1, deadline.timeIntervalSinceNow))
            }
            guard reader.setState(.playing) else { throw GStreamerError("\(part.file) cannot be read: \(reader.takeError() ?? "")") }
            var base: ClockTime?
            var end: ClockTime = clock
            var partSkipped = false
            while Date() < deadline {
                guard let raw = gst_app_sink_try_pull_sample(sink, ClockTime(max(0.1, deadline.timeIntervalSinceNow) * 1e9)) else {
                    if gst_app_sink_is_eos(sink) != 0 { break }
                    throw GStreamerError("\(part.file): \(reader.takeError() ?? "no frame in time")")
                }
                let sample = Sample(owning: raw)
                guard let buffer = sample.buffer else { continue }
                if !started {
                    guard let first = gst_sample_get_caps(sample.pointer) else { throw GStreamerError("\(part.file) has no video format") }
                    caps = gst_caps_copy(first)
                    gst_app_src_set_caps(source, caps)
                    guard writer.setState(.playing) else { throw GStreamerError("cannot write \(output): \(writer.takeError() ?? "")") }
                    started = true
                } else if base == nil, let caps, let these = gst_sample_get_caps(sample.pointer), gst_caps_is_equal(caps, these) == 0 {
                    skipped.append(part.file)
                    partSkipped = true
                    break
                }
                let pts = cgst_buffer_pts(buffer), dts = cgst_buffer_dts(buffer)
                let decode = cgst_clock_time_is_valid(dts) != 0 ? dts : pts
                guard cgst_clock_time_is_valid(decode) != 0 else { continue }
                // The cut at the end goes by decoding order: every frame kept has its references.
                if let to = part.to, Double(decode) / 1e9 >= to { break }
                if base == nil { base = decode }
                let shift = { (t: ClockTime) -> ClockTime in
                    cgst_clock_time_is_valid(t) == 0 ? t : clock + (t > base! ? t - base! : 0)
                }
                guard let copy = gst_buffer_copy(buffer) else { continue }
                cgst_buffer_set_times(copy, shift(pts), shift(decode))
                let duration = cgst_buffer_duration(copy)
                let next = shift(decode) + (cgst_clock_time_is_valid(duration) != 0 ? duration : 33_333_333)
                if next > end { end = next }
                // Takes the buffer; blocks only while the writer's queue is full.
                guard gst_app_src_push_buffer(source, copy) == GST_FLOW_OK else {
                    throw GStreamerError("cannot write \(output): \(writer.takeError() ?? "the writer stopped")")
                }
            }
            if Date() >= deadline { throw GStreamerError("the join did not finish within \(Int(timeoutSeconds)) s") }
            if !partSkipped { clock = end }
        }
        guard started else { throw GStreamerError("no video in the chosen range") }
        _ = gst_app_src_end_of_stream(source)
        guard let bus = gst_element_get_bus(writer.pointer) else { throw GStreamerError("the writer has no bus") }
        defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
        let wanted = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, ClockTime(max(1, deadline.timeIntervalSinceNow) * 1e9), wanted) else {
            throw GStreamerError("the file was not finished in time")
        }
        defer { cgst_message_unref(message) }
        let parsed = BusMessage(message)
        if case .error(let text, let debug, _) = parsed.kind {
            throw GStreamerError("\(parsed.sourceName): \(text)\(BusMessage.detail(debug))")
        }
        return Joined(duration: Double(clock) / 1e9, skipped: skipped)
    }

    private static func escaped(_ path: String) -> String {
        path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}

extension Pipeline {
    /// Brings the pipeline to PAUSED and waits (on the calling thread) until it has prerolled.
    func prerolled(_ timeoutSeconds: Double) throws {
        let change = gst_element_set_state(pointer, GST_STATE_PAUSED)
        guard change != GST_STATE_CHANGE_FAILURE else { throw GStreamerError(takeError() ?? "the file cannot be read") }
        var state = GST_STATE_NULL, pending = GST_STATE_NULL
        let result = gst_element_get_state(pointer, &state, &pending, ClockTime(timeoutSeconds * 1e9))
        switch result {
        case GST_STATE_CHANGE_SUCCESS, GST_STATE_CHANGE_NO_PREROLL: return
        case GST_STATE_CHANGE_ASYNC: throw GStreamerError("the file did not open within \(Int(timeoutSeconds)) s")
        default: throw GStreamerError(takeError() ?? "the file cannot be read")
        }
    }
}
