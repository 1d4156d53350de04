import CGStreamer
import GLibSupport
import Foundation

// The unsafe C boundary of the project: every raw GStreamer/GLib pointer is
// wrapped here, in typed Swift that owns its references. Nothing outside
// this module touches CGStreamer.

public typealias ClockTime = GstClockTime

public enum GStreamer {
    private static let initOnce: Void = { gst_init(nil, nil) }()

    /// Initialises GStreamer once per process.
    public static func initialize() { _ = initOnce }

    public static let clockTimeNone: ClockTime = cgst_clock_time_none()
}

/// A GStreamer error raised while building or running a pipeline.
public struct GStreamerError: Error, CustomStringConvertible {
    public var message: String
    public var debug: String?
    public init(_ message: String, debug: String? = nil) {
        self.message = message
        self.debug = debug
    }
    public var description: String { message }
}

/// Takes ownership of a GError and turns it into a Swift error.
func consume(_ error: UnsafeMutablePointer<GError>?) -> GStreamerError {
    guard let error else { return GStreamerError("unknown error") }
    defer { g_error_free(error) }
    return GStreamerError(String(cString: error.pointee.message))
}

/// A strong reference to a GstElement (or any GstObject subclass used as one).
///
/// Two `Element`s are equal when they wrap the same GStreamer object
/// (`pipeline.element(named:)` makes a new wrapper each time); `id` names
/// that object without keeping it alive. The C pointer stays in this module.
public class Element: Hashable, Identifiable, @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstElement>

    /// Wraps a reference the caller already owns (transfer full).
    init(owning pointer: UnsafeMutablePointer<GstElement>) {
        self.pointer = pointer
    }

    /// Wraps a borrowed pointer, taking a reference of our own (sinks floating refs).
    init(borrowing pointer: UnsafeMutablePointer<GstElement>) {
        self.pointer = pointer
        gst_object_ref_sink(UnsafeMutableRawPointer(pointer))
    }

    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    /// The identity of the GStreamer object, for use as a dictionary key
    /// where holding the element would keep it alive (a signal handler of
    /// the element itself). Valid as long as the element lives.
    public var id: ObjectID { ObjectID(pointer) }

    public static func == (a: Element, b: Element) -> Bool { a.pointer == b.pointer }
    public func hash(into hasher: inout Hasher) { hasher.combine(pointer) }

    public static func make(_ factory: String, name: String? = nil) throws -> Element {
        GStreamer.initialize()
        guard let e = gst_element_factory_make(factory, name) else {
            throw GStreamerError("cannot create element '\(factory)': the plugin is not installed")
        }
        return Element(borrowing: e)
    }

    var gobject: UnsafeMutablePointer<GObject> { UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GObject.self) }

    public var name: String { String(cString: cgst_object_name(pointer)) }

    /// Name of the factory that made this element (`splitmuxsink`, `appsink`, …).
    public var factoryName: String? {
        guard let factory = gst_element_get_factory(pointer) else { return nil }
        return String(cString: cgst_object_name(UnsafeMutableRawPointer(factory)))
    }

    /// Sets any property from its string form, as gst-launch would
    /// (enums by nick, structures in their serialised form).
    public func set(_ property: String, _ value: String) {
        gst_util_set_object_arg(gobject, property, value)
    }

    public func set(_ property: String, _ value: Bool) { set(property, value ? "true" : "false") }
    public func set<I: BinaryInteger>(_ property: String, _ value: I) { set(property, String(value)) }

    public enum State { case null, ready, paused, playing }

    /// The Swift state for a GstState; nil for GST_STATE_VOID_PENDING (no state).
    static func state(_ state: GstState) -> State? {
        switch state {
        case GST_STATE_NULL: return .null
        case GST_STATE_READY: return .ready
        case GST_STATE_PAUSED: return .paused
        case GST_STATE_PLAYING: return .playing
        default: return nil
        }
    }

    /// Changes state; false when the change failed outright (the bus says why).
    @discardableResult
    public func setState(_ state: State) -> Bool {
        let target: GstState
        switch state {
        case .null: target = GST_STATE_NULL
        case .ready: target = GST_STATE_READY
        case .paused: target = GST_STATE_PAUSED
        case .playing: target = GST_STATE_PLAYING
        }
        return gst_element_set_state(pointer, target) != GST_STATE_CHANGE_FAILURE
    }

    public func syncStateWithParent() { gst_element_sync_state_with_parent(pointer) }

    public var baseTime: ClockTime { gst_element_get_base_time(pointer) }

    public func staticPad(_ name: String) -> Pad? {
        gst_element_get_static_pad(pointer, name).map(Pad.init(owning:))
    }
}

public final class Pad: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstPad>
    init(owning pointer: UnsafeMutablePointer<GstPad>) { self.pointer = pointer }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    public var peer: Pad? { gst_pad_get_peer(pointer).map(Pad.init(owning:)) }

    public func link(to sink: Pad) -> Bool { gst_pad_link(pointer, sink.pointer) == GST_PAD_LINK_OK }
    public func unlink(from sink: Pad) { gst_pad_unlink(pointer, sink.pointer) }

    /// Sends end-of-stream into this (sink) pad.
    public func sendEndOfStream() -> Bool { gst_pad_send_event(pointer, gst_event_new_eos()) != 0 }
}

/// The identity of a GStreamer object, without a reference to it: equal for
/// the same object while it lives (its address may be reused afterwards).
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    private let address: UInt
    init<T>(_ pointer: UnsafeMutablePointer<T>) { address = UInt(bitPattern: pointer) }
    public var description: String { "0x" + String(address, radix: 16) }
}

/// Looks up the file duration with GstDiscoverer; nil when it is not playable.
public enum MediaProbe {
    public static func duration(of url: URL, timeoutSeconds: Double = 10) -> Double? {
        discover(url, timeoutSeconds: timeoutSeconds) { info in
            let videoStreams = gst_discoverer_info_get_video_streams(info)
            defer { gst_discoverer_stream_info_list_free(videoStreams) }
            guard videoStreams != nil else { return nil }
            let duration = gst_discoverer_info_get_duration(info)
            guard duration != GStreamer.clockTimeNone, duration > 0 else { return nil }
            return Double(duration) / 1e9
        }
    }

    /// The caps of the file's first audio stream (e.g. `audio/mpeg, mpegversion=(int)4, …`); nil when it has none.
    public static func audioCaps(of url: URL, timeoutSeconds: Double = 10) -> String? {
        discover(url, timeoutSeconds: timeoutSeconds) { info in
            guard let streams = gst_discoverer_info_get_audio_streams(info) else { return nil }
            defer { gst_discoverer_stream_info_list_free(streams) }
            guard let first = streams.pointee.data,
                  let caps = gst_discoverer_stream_info_get_caps(OpaquePointer(first)) else { return nil }
            defer { cgst_caps_unref(caps) }
            guard let text = gst_caps_to_string(caps) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
    }

    private static func discover<T>(_ url: URL, timeoutSeconds: Double, _ body: (OpaquePointer) -> T?) -> T? {
        GStreamer.initialize()
        var error: UnsafeMutablePointer<GError>?
        guard let discoverer = gst_discoverer_new(ClockTime(timeoutSeconds * 1e9), &error) else {
            if let error { g_error_free(error) }
            return nil
        }
        defer { g_object_unref(discoverer) }
        guard let uri = gst_filename_to_uri(url.path, nil) else { return nil }
        defer { g_free(uri) }
        guard let info = gst_discoverer_discover_uri(discoverer, uri, &error) else {
            if let error { g_error_free(error) }
            return nil
        }
        defer { g_object_unref(UnsafeMutableRawPointer(info)) }
        if let error { g_error_free(error) }
        guard gst_discoverer_info_get_result(info) == GST_DISCOVERER_OK else { return nil }
        return body(info)
    }
}

extension Element {
    /// Requests a pad from a request-pad template (`video` on splitmuxsink).
    public func requestPad(_ template: String) -> Pad? {
        gst_element_request_pad_simple(pointer, template).map(Pad.init(owning:))
    }

    /// splitmuxsink's `split-at-running-time`: the next file starts at the
    /// first keyframe at or after `runningTime`, whatever `max-size-time` says.
    public func splitAtRunningTime(_ runningTime: ClockTime) {
        cgst_splitmux_split_at_running_time(pointer, runningTime)
    }
}

extension Pad {
    /// Runs `action` on the streaming thread just before the next keyframe
    /// passes this pad, then lets the keyframe through and removes itself.
    /// Data keeps flowing meanwhile: frames before the keyframe pass as usual.
    /// The action gets the keyframe's running time (its timestamp in the
    /// pad's segment: an encoder may offset timestamps, as x264enc does).
    /// `action` returns false to pass this keyframe by and wait for the next.
    public func atNextKeyframe(_ action: @escaping (_ runningTime: ClockTime) -> Bool) {
        let box = CallbackBox(action)
        _ = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data, let buffer = cgst_pad_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            if cgst_buffer_is_delta(buffer) != 0 { return GST_PAD_PROBE_OK }
            let done = CallbackBox<(ClockTime) -> Bool>.from(data)(Pad.runningTime(of: cgst_buffer_pts(buffer), on: pad))
            return done ? GST_PAD_PROBE_REMOVE : GST_PAD_PROBE_OK
        }, box.retainedPointer, { CallbackBox<(ClockTime) -> Bool>.release($0) })
    }

    /// `timestamp` as running time in the segment `pad` carries (the
    /// timestamp itself before any segment).
    static func runningTime(of timestamp: ClockTime, on pad: UnsafeMutablePointer<GstPad>) -> ClockTime {
        guard let event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0) else { return timestamp }
        defer { cgst_event_unref(event) }
        var segment: UnsafePointer<GstSegment>?
        gst_event_parse_segment(event, &segment)
        guard let segment else { return timestamp }
        let running = gst_segment_to_running_time(segment, GST_FORMAT_TIME, timestamp)
        return cgst_clock_time_is_valid(running) != 0 ? running : timestamp
    }

    /// Runs `action` on the streaming thread for every buffer passing this
    /// pad, for as long as the pad lives, with the buffer's running time (nil
    /// when it carries no timestamp): the clock that names chunks. Keep it
    /// cheap: it is on the data path.
    public func onEveryBuffer(_ action: @escaping (_ runningTime: ClockTime?) -> Void) {
        let box = CallbackBox(action)
        _ = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data else { return GST_PAD_PROBE_OK }
            var time: ClockTime?
            if let buffer = cgst_pad_probe_info_buffer(info), cgst_clock_time_is_valid(cgst_buffer_pts(buffer)) != 0 {
                time = Pad.runningTime(of: cgst_buffer_pts(buffer), on: pad)
            }
            CallbackBox<(ClockTime?) -> Void>.from(data)(time)
            return GST_PAD_PROBE_OK
        }, box.retainedPointer, { CallbackBox<(ClockTime?) -> Void>.release($0) })
    }

    /// The media types (caps structure names, e.g. `audio/x-raw`) this pad
    /// can produce or accept now, as a caps query answers.
    public var possibleMediaTypes: [String] {
        guard let caps = gst_pad_query_caps(pointer, nil) else { return [] }
        defer { cgst_caps_unref(caps) }
        if gst_caps_is_any(caps) != 0 { return ["ANY"] }
        return (0..<gst_caps_get_size(caps)).compactMap { i in
            gst_caps_get_structure(caps, i).map { String(cString: gst_structure_get_name($0)) }
        }
    }

    /// Runs `action` on the streaming thread when end-of-stream passes this pad.
    public func onEndOfStream(_ action: @escaping () -> Void) {
        let box = CallbackBox(action)
        _ = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, { _, info, data in
            guard let info, let data, let event = cgst_pad_probe_info_event(info) else { return GST_PAD_PROBE_OK }
            guard cgst_event_type(event) == GST_EVENT_EOS else { return GST_PAD_PROBE_OK }
            CallbackBox<() -> Void>.from(data)()
            return GST_PAD_PROBE_REMOVE
        }, box.retainedPointer, { CallbackBox<() -> Void>.release($0) })
    }

    /// Asks the elements upstream of this source pad for a keyframe now.
    public func requestKeyframeUpstream() {
        let event = gst_video_event_new_upstream_force_key_unit(GStreamer.clockTimeNone, 1, 0)
        _ = gst_pad_send_event(pointer, event)
    }
}

/// A buffer passing a pad, lent to a probe's action for the length of the call
/// only: read it or hand it on (other boundaries take it through `package` access), never keep it.
public struct PassingBuffer {
    package let buffer: UnsafeMutableRawPointer
    package let pad: UnsafeMutableRawPointer
    /// A keyframe (no GST_BUFFER_FLAG_DELTA_UNIT).
    public let isKeyframe: Bool
    public var size: Int { Int(gst_buffer_get_size(buffer.assumingMemoryBound(to: GstBuffer.self))) }

    /// The buffer's timestamp as running time in the pad's segment (what a live source stamped at capture).
    public var runningTime: ClockTime? {
        let typed = buffer.assumingMemoryBound(to: GstBuffer.self)
        guard cgst_clock_time_is_valid(cgst_buffer_pts(typed)) != 0 else { return nil }
        return Pad.runningTime(of: cgst_buffer_pts(typed), on: pad.assumingMemoryBound(to: GstPad.self))
    }

    /// The base time of the pad's element (its pipeline's): `baseTime + runningTime` is the clock time.
    public var baseTime: ClockTime? {
        guard let element = gst_pad_get_parent_element(pad.assumingMemoryBound(to: GstPad.self)) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(element)) }
        return gst_element_get_base_time(element)
    }

    /// A copy of the bytes (costly: for tests and benchmarks, not the data path).
    public func copyBytes() -> Data {
        let typed = buffer.assumingMemoryBound(to: GstBuffer.self)
        var bytes = [UInt8](repeating: 0, count: size)
        let copied = bytes.withUnsafeMutableBytes { gst_buffer_extract(typed, 0, $0.baseAddress, gsize($0.count)) }
        return Data(bytes.prefix(Int(copied)))
    }
}

extension Pad {
    /// Runs `action` on the streaming thread for every buffer passing this
    /// pad, for as long as the pad lives. Keep it cheap and never blocking:
    /// it is on the data path (the recording's, for the RTSP stream's tap).
    public func onEveryPassingBuffer(_ action: @escaping (PassingBuffer) -> Void) {
        let box = CallbackBox(action)
        _ = gst_pad_add_probe(pointer, GST_PAD_PROBE_TYPE_BUFFER, { pad, info, data in
            guard let pad, let info, let data, let buffer = cgst_pad_probe_info_buffer(info) else { return GST_PAD_PROBE_OK }
            CallbackBox<(PassingBuffer) -> Void>.from(data)(
                PassingBuffer(buffer: UnsafeMutableRawPointer(buffer), pad: UnsafeMutableRawPointer(pad),
                              isKeyframe: cgst_buffer_is_delta(buffer) == 0))
            return GST_PAD_PROBE_OK
        }, box.retainedPointer, { CallbackBox<(PassingBuffer) -> Void>.release($0) })
    }
}

extension Pad: Equatable {
    /// The same GstPad.
    public static func == (a: Pad, b: Pad) -> Bool { a.pointer == b.pointer }
}
