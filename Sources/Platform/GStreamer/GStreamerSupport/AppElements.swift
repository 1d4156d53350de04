import CGStreamer
import GLibSupport
import Foundation

/// A reference to a GstSample (a buffer with its caps and segment).
public final class Sample: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of a sample reference.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }
    deinit { cgst_sample_unref(pointer) }

    var buffer: UnsafeMutablePointer<GstBuffer>? { gst_sample_get_buffer(pointer) }

    public var presentationTime: ClockTime? {
        guard let buffer else { return nil }
        let pts = cgst_buffer_pts(buffer)
        return pts == GStreamer.clockTimeNone ? nil : pts
    }

    public var duration: ClockTime? {
        guard let buffer else { return nil }
        let d = cgst_buffer_duration(buffer)
        return d == GStreamer.clockTimeNone ? nil : d
    }

    /// Running time of the first buffer's timestamp in its segment.
    public var runningTime: ClockTime? {
        // A sample handed over while the stream is torn down may carry no time segment yet.
        guard let pts = presentationTime, let segment = gst_sample_get_segment(pointer),
              segment.pointee.format == GST_FORMAT_TIME else { return nil }
        let rt = gst_segment_to_running_time(segment, GST_FORMAT_TIME, pts)
        return rt == GStreamer.clockTimeNone ? nil : rt
    }

    /// Width, height and frame rate from the caps, when they are raw or encoded video.
    public var videoInfo: (width: Int, height: Int, fps: Double)? {
        guard let caps = gst_sample_get_caps(pointer), let s = gst_caps_get_structure(caps, 0) else { return nil }
        var w: gint = 0, h: gint = 0, n: gint = 0, d: gint = 1
        guard gst_structure_get_int(s, "width", &w) != 0, gst_structure_get_int(s, "height", &h) != 0 else { return nil }
        if gst_structure_get_fraction(s, "framerate", &n, &d) == 0 || d == 0 { n = 0; d = 1 }
        return (Int(w), Int(h), Double(n) / Double(d))
    }
}

/// The `appsink` where captured raw frames leave the pipeline.
///
/// Threading: `onSample` and `onEndOfStream` run on GStreamer's streaming
/// thread of the capture chain, one call at a time, in frame order.
public final class AppSink {
    public let element: Element
    struct Handlers {
        let sample: (Sample) -> Bool
        let endOfStream: () -> Void
    }

    public init?(_ element: Element) {
        guard cgst_is_type(UnsafeMutableRawPointer(element.pointer), cgst_type_app_sink()) != 0 else { return nil }
        self.element = element
    }

    private var sink: UnsafeMutablePointer<GstAppSink> { UnsafeMutableRawPointer(element.pointer).assumingMemoryBound(to: GstAppSink.self) }

    /// `onSample` returns false to stop the stream (flow error).
    public func setHandlers(onSample: @escaping (Sample) -> Bool, onEndOfStream: @escaping () -> Void) {
        var callbacks = GstAppSinkCallbacks()
        callbacks.new_sample = { sink, data in
            guard let sink, let data else { return GST_FLOW_ERROR }
            guard let raw = gst_app_sink_pull_sample(sink) else { return GST_FLOW_EOS }
            let ok = CallbackBox<Handlers>.from(data).sample(Sample(owning: raw))
            return ok ? GST_FLOW_OK : GST_FLOW_ERROR
        }
        callbacks.eos = { _, data in
            guard let data else { return }
            CallbackBox<Handlers>.from(data).endOfStream()
        }
        let box = CallbackBox(Handlers(sample: onSample, endOfStream: onEndOfStream))
        gst_app_sink_set_callbacks(sink, &callbacks, box.retainedPointer, { CallbackBox<Handlers>.release($0) })
    }

    /// Drops the handlers (and what they captured).
    public func clearHandlers() {
        var callbacks = GstAppSinkCallbacks()
        gst_app_sink_set_callbacks(sink, &callbacks, nil, nil)
    }
}

/// The `appsrc` where processed frames re-enter the pipeline.
public final class AppSource {
    public let element: Element

    public init?(_ element: Element) {
        guard cgst_is_type(UnsafeMutableRawPointer(element.pointer), cgst_type_app_src()) != 0 else { return nil }
        self.element = element
    }

    private var source: UnsafeMutablePointer<GstAppSrc> { UnsafeMutableRawPointer(element.pointer).assumingMemoryBound(to: GstAppSrc.self) }

    /// Pushes a frame; caps follow the sample's. False once the stream is flushing or ended.
    public func push(_ sample: Sample) -> Bool {
        gst_app_src_push_sample(source, sample.pointer) == GST_FLOW_OK
    }

    public func endOfStream() { _ = gst_app_src_end_of_stream(source) }

    /// Makes the frames `isDue` picks reach the encoder as keyframes (with
    /// the stream headers): as each buffer leaves appsrc, on appsrc's own
    /// streaming thread, `isDue` gets its presentation time, and when it
    /// says so a downstream force-key-unit event goes out just before it,
    /// in order with the frames. Call once, before the pipeline plays.
    ///
    /// Not `gst_element_send_event` from the thread that pushes: that takes
    /// appsrc's STATE_LOCK, which a state change holds while it waits for
    /// streaming threads, and a frame path blocked on it can deadlock one.
    public func forceKeyframes(when isDue: @escaping (_ presentationTime: ClockTime) -> Bool) {
        guard let pad = element.staticPad("src") else { return }
        let box = CallbackBox(isDue)
        _ = gst_pad_add_probe(pad.pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data, let buffer = cgst_pad_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            let pts = cgst_buffer_pts(buffer)
            guard cgst_clock_time_is_valid(pts) != 0, CallbackBox<(ClockTime) -> Bool>.from(data)(pts) else { return GST_PAD_PROBE_OK }
            let none = GStreamer.clockTimeNone
            // The probe runs without the pad's lock; pushing an event from it is allowed and stays in order.
            if let event = gst_video_event_new_downstream_force_key_unit(none, none, none, 1, 0) {
                _ = gst_pad_push_event(pad, event)   // takes the event
            }
            return GST_PAD_PROBE_OK
        }, box.retainedPointer, { CallbackBox<(ClockTime) -> Bool>.release($0) })
    }

    /// Makes every push return at once from now on, without a state change:
    /// a push waiting for room (an encoder that stopped taking frames) is
    /// woken and queues its frame, and later ones never wait. For tearing
    /// the pipeline down: taking appsrc's state lock here instead (setting
    /// it to NULL on its own) waits for its streaming thread, which may be
    /// stuck in a sink downstream that only the pipeline's own state change
    /// releases.
    public func stopBlocking() {
        element.set("block", false)
        // Changing max-bytes wakes a push waiting for room (appsrc signals the change); 0 is no limit.
        element.set("max-bytes", 0)
    }

    /// Pushes raw bytes as one buffer with the given timestamps (caps are
    /// the appsrc's own). For tools and tests that synthesise video.
    public func push(bytes: [UInt8], presentationTime: ClockTime, duration: ClockTime) -> Bool {
        guard let buffer = gst_buffer_new_allocate(nil, gsize(bytes.count), nil) else { return false }
        _ = bytes.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize(bytes.count)) }
        buffer.pointee.pts = presentationTime
        buffer.pointee.duration = duration
        return gst_app_src_push_buffer(source, buffer) == GST_FLOW_OK   // takes the buffer
    }
}

/// `splitmuxsink`'s `format-location-full`: the handler gets the fragment
/// number and the first sample of the new fragment and returns the path to
/// write. Runs on splitmuxsink's streaming thread.
public final class FragmentNamer {
    public typealias Handler = (_ fragmentID: UInt32, _ firstSample: Sample?) -> String

    public static func connect(to element: Element, _ handler: @escaping Handler) {
        let callback: @convention(c) (UnsafeMutablePointer<GstElement>?, guint, OpaquePointer?, gpointer?) -> UnsafeMutablePointer<gchar>? = { _, id, sample, data in
            guard let data else { return nil }
            // The sample is borrowed from the signal: take our own reference.
            let wrapped = sample.map { s -> Sample in
                _ = gst_mini_object_ref(UnsafeMutableRawPointer(s).assumingMemoryBound(to: GstMiniObject.self))
                return Sample(owning: s)
            }
            let path = CallbackBox<Handler>.from(data)(UInt32(id), wrapped)
            return g_strdup(path)
        }
        let box = CallbackBox<Handler>(handler)
        g_signal_connect_data(UnsafeMutableRawPointer(element.pointer), "format-location-full",
                              unsafeBitCast(callback, to: GCallback.self), box.retainedPointer,
                              { data, _ in CallbackBox<Handler>.release(data) }, GConnectFlags(rawValue: 0))
    }
}
