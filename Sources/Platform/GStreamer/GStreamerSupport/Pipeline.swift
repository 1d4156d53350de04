import CGStreamer
import GLibSupport
import Foundation

/// Why `gst_parse_launch` refused a description.
public struct ParseFailure: Error, CustomStringConvertible {
    public var message: String
    /// Element factories the description names that are not installed.
    public var missingElements: [String]
    public var description: String { message }
}

public final class Pipeline: Element, @unchecked Sendable {
    /// Parses a gst-launch description into a pipeline (not started).
    public static func parse(_ description: String) throws -> Pipeline {
        GStreamer.initialize()
        let context = gst_parse_context_new()
        defer { gst_parse_context_free(context) }
        var error: UnsafeMutablePointer<GError>?
        let element = gst_parse_launch_full(description, context, GST_PARSE_FLAG_FATAL_ERRORS, &error)
        var missing: [String] = []
        if let list = gst_parse_context_get_missing_elements(context) {
            var cursor = list
            while let name = cursor.pointee { missing.append(String(cString: name)); cursor += 1 }
            g_strfreev(list)
        }
        guard let element, error == nil else {
            if let element { gst_object_unref(UnsafeMutableRawPointer(element)) }
            throw ParseFailure(message: consume(error).message, missingElements: missing)
        }
        // A single element parses to itself, not to a pipeline: wrap it.
        if cgst_is_type(UnsafeMutableRawPointer(element), gst_pipeline_get_type()) == 0 {
            let pipeline = gst_pipeline_new(nil)!
            gst_bin_add(UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self), element)
            return Pipeline(borrowing: pipeline)
        }
        return Pipeline(borrowing: element)
    }

    var bin: UnsafeMutablePointer<GstBin> { UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GstBin.self) }

    public func element(named name: String) -> Element? {
        gst_bin_get_by_name(bin, name).map(Element.init(owning:))
    }

    public func add(_ element: Element) -> Bool { gst_bin_add(bin, element.pointer) != 0 }

    /// Removes (and thereby releases the bin's reference to) an element; stop it first.
    public func remove(_ element: Element) { gst_bin_remove(bin, element.pointer) }

    /// Runs the pipeline on the system clock in MONOTONIC mode (GStreamer's
    /// default, set explicitly: the clock is shared by the process), so that
    /// `base_time + running_time` of a buffer is its CLOCK_MONOTONIC capture
    /// time, and a wall clock set back or forward neither stalls nor bursts
    /// the live sources and sinks that wait on the clock. Not an element's
    /// clock either (an audio source offers its own), so every run of the
    /// pipeline measures on the same clock.
    public func useMonotonicClock() {
        let clock = gst_system_clock_obtain()!
        gst_util_set_object_arg(UnsafeMutableRawPointer(clock).assumingMemoryBound(to: GObject.self), "clock-type", "monotonic")
        gst_pipeline_use_clock(UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: GstPipeline.self), clock)
        gst_object_unref(UnsafeMutableRawPointer(clock))
    }

    /// Current position in seconds (nil when unknown).
    public var position: Double? {
        var value: gint64 = -1
        guard gst_element_query_position(pointer, GST_FORMAT_TIME, &value) != 0, value >= 0 else { return nil }
        return Double(value) / 1e9
    }

    /// Stream duration in seconds (nil when unknown).
    public var duration: Double? {
        var value: gint64 = -1
        guard gst_element_query_duration(pointer, GST_FORMAT_TIME, &value) != 0, value > 0 else { return nil }
        return Double(value) / 1e9
    }

    /// Takes the first error waiting on the bus, if any (after a failed state change).
    public func takeError() -> String? {
        guard let bus = gst_element_get_bus(pointer) else { return nil }
        defer { gst_object_unref(UnsafeMutableRawPointer(bus)) }
        guard let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) else { return nil }
        defer { cgst_message_unref(message) }
        if case .error(let text, let debug, _) = BusMessage(message).kind {
            return "\(String(cString: cgst_object_name(cgst_message_src(message)))): \(text)" + BusMessage.detail(debug)
        }
        return nil
    }

    /// Watches the bus from the thread-default GLib main context. Keep the
    /// returned watch alive as long as messages are wanted.
    public func watchBus(_ handler: @escaping (BusMessage) -> Void) -> BusWatch {
        BusWatch(bus: gst_element_get_bus(pointer)!, handler: handler)
    }
}

/// A bus watch; removing it (or releasing it) stops the callbacks.
public final class BusWatch {
    private let bus: UnsafeMutablePointer<GstBus>
    private var sourceID: guint = 0

    init(bus: UnsafeMutablePointer<GstBus>, handler: @escaping (BusMessage) -> Void) {
        self.bus = bus
        let box = CallbackBox(handler)
        sourceID = gst_bus_add_watch_full(bus, G_PRIORITY_DEFAULT, { _, message, data in
            guard let message, let data else { return 1 }
            CallbackBox<(BusMessage) -> Void>.from(data)(BusMessage(message))
            return 1   // G_SOURCE_CONTINUE
        }, box.retainedPointer, { CallbackBox<(BusMessage) -> Void>.release($0) })
    }

    public func remove() {
        if sourceID != 0 { g_source_remove(sourceID); sourceID = 0 }
    }

    deinit {
        remove()
        gst_object_unref(UnsafeMutableRawPointer(bus))
    }
}

/// The parts of a bus message the recorder reacts to, copied out of C.
public struct BusMessage {
    public enum Kind: Equatable {
        /// `noSpaceLeft` marks GST_RESOURCE_ERROR_NO_SPACE_LEFT (a full disk).
        case error(message: String, debug: String?, noSpaceLeft: Bool)
        case warning(message: String)
        case endOfStream
        /// nil: no state (GStreamer's VOID_PENDING).
        case stateChanged(old: Element.State?, new: Element.State?)
        /// An element message with a named structure (e.g. splitmuxsink-fragment-closed).
        case element(name: String)
        case other
    }

    public let kind: Kind

    /// The useful last line of GStreamer's debug text (e.g. `No such file "/x"`), in parentheses.
    public static func detail(_ debug: String?) -> String {
        guard let line = debug?.split(separator: "\n").last.map(String.init), !line.isEmpty,
              !line.hasPrefix("../"), !line.contains("GstPipeline:") else { return "" }
        return " (\(line))"
    }
    /// Name of the object that posted the message.
    public let sourceName: String
    /// The posting object (an element, a pad …), with a reference of our own
    /// so that it can be compared after the message is gone.
    private let source: ObjectReference?
    /// String fields of the message structure (for element messages).
    public let strings: [String: String]
    /// Unsigned 64-bit fields of the message structure (times).
    public let times: [String: ClockTime]

    init(_ message: UnsafeMutablePointer<GstMessage>) {
        let src = cgst_message_src(message)
        source = src.map(ObjectReference.init(borrowing:))
        sourceName = src.map { String(cString: cgst_object_name($0)) } ?? "?"
        var strings: [String: String] = [:]
        var times: [String: ClockTime] = [:]
        switch cgst_message_type(message) {
        case GST_MESSAGE_ERROR:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_error(message, &error, &debug)
            let debugText = debug.map { String(cString: $0) }
            g_free(debug)
            let full = error.map { $0.pointee.domain == gst_resource_error_quark()
                && $0.pointee.code == GST_RESOURCE_ERROR_NO_SPACE_LEFT.rawValue } ?? false
            kind = .error(message: consume(error).message, debug: debugText, noSpaceLeft: full)
        case GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            gst_message_parse_warning(message, &error, &debug)
            g_free(debug)
            kind = .warning(message: consume(error).message)
        case GST_MESSAGE_EOS:
            kind = .endOfStream
        case GST_MESSAGE_STATE_CHANGED:
            var old = GST_STATE_VOID_PENDING, new = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING
            gst_message_parse_state_changed(message, &old, &new, &pending)
            kind = .stateChanged(old: Element.state(old), new: Element.state(new))
        case GST_MESSAGE_ELEMENT:
            if let structure = gst_message_get_structure(message) {
                let count = gst_structure_n_fields(structure)
                for i in 0..<count {
                    guard let fieldName = gst_structure_nth_field_name(structure, guint(i)) else { continue }
                    let field = String(cString: fieldName)
                    if let s = gst_structure_get_string(structure, fieldName) {
                        strings[field] = String(cString: s)
                    }
                    var value: guint64 = 0
                    if gst_structure_get_uint64(structure, fieldName, &value) != 0 {
                        times[field] = value
                    }
                }
                kind = .element(name: String(cString: gst_structure_get_name(structure)))
            } else {
                kind = .other
            }
        default:
            kind = .other
        }
        self.strings = strings
        self.times = times
    }
}

extension BusMessage {
    /// True when the message was posted by `element` or by something inside
    /// it (a bin's child, at any depth, or one of their pads).
    public func comes(fromInside element: Element) -> Bool {
        guard let source else { return false }
        return Element.object(source.pointer, isOrIsInside: element.pointer)
    }
}

/// A strong reference to any GstObject (a message's poster need not be an element).
final class ObjectReference {
    let pointer: UnsafeMutablePointer<GstObject>
    init(borrowing pointer: UnsafeMutablePointer<GstObject>) {
        self.pointer = pointer
        _ = gst_object_ref(UnsafeMutableRawPointer(pointer))
    }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }
}

extension Pipeline {
    /// Plays a finite pipeline to its end on the calling thread, reading the
    /// bus directly (no main loop: for a worker thread). Throws the first
    /// error, or when `timeoutSeconds` pass first. Leaves the pipeline in NULL.
    public func runToEnd(timeoutSeconds: Double) throws {
        guard let bus = gst_element_get_bus(pointer) else { throw GStreamerError("the pipeline has no bus") }
        defer {
            setState(.null)
            gst_object_unref(UnsafeMutableRawPointer(bus))
        }
        guard setState(.playing) else {
            throw GStreamerError("the pipeline cannot play: \(takeError() ?? "unknown error")")
        }
        let wanted = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, ClockTime(timeoutSeconds * 1e9), wanted) else {
            throw GStreamerError("the pipeline did not finish within \(Int(timeoutSeconds)) s")
        }
        defer { cgst_message_unref(message) }
        let parsed = BusMessage(message)
        if case .error(let text, let debug, _) = parsed.kind {
            throw GStreamerError("\(parsed.sourceName): \(text)\(BusMessage.detail(debug))")
        }
    }

    /// Plays a finite pipeline (a file to decode or encode) on the calling
    /// thread's main loop until end-of-stream. Throws the first error, or
    /// when `timeoutSeconds` pass first. `whilePlaying` runs once the loop
    /// runs (e.g. to start a progress timer); what it returns is cancelled at the end.
    public func playToEnd(timeoutSeconds: Double = .infinity,
                          whilePlaying: (() -> MainLoop.Source?)? = nil) throws {
        let loop = MainLoop()
        var failure: String?
        let watch = watchBus { message in
            switch message.kind {
            case .endOfStream: loop.quit()
            case .error(let text, let debug, _):
                failure = "\(message.sourceName): \(text)\(BusMessage.detail(debug))"
                loop.quit()
            default: break
            }
        }
        defer {
            setState(.null)
            watch.remove()
        }
        guard setState(.playing) else {
            throw GStreamerError("the pipeline cannot play: \(takeError() ?? "unknown error")")
        }
        let extra = whilePlaying?()
        let finished = timeoutSeconds.isFinite ? loop.run(forAtMost: timeoutSeconds) : { loop.run(); return true }()
        extra?.cancel()
        if let failure { throw GStreamerError(failure) }
        if !finished { throw GStreamerError("the pipeline did not finish within \(Int(timeoutSeconds)) s") }
    }
}
