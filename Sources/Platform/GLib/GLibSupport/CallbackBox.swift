/// Carries a Swift value (usually a closure) through a C `gpointer`:
/// `retainedPointer` hands one reference to C, `release` is the matching
/// GDestroyNotify. Shared by the GLib, GStreamer, libsoup and Avahi
/// boundaries, and by nothing else (`package` access).
package final class CallbackBox<T> {
    package let value: T
    package init(_ value: T) { self.value = value }
    package var retainedPointer: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }
    package static func from(_ pointer: UnsafeRawPointer) -> T {
        Unmanaged<CallbackBox<T>>.fromOpaque(pointer).takeUnretainedValue().value
    }
    package static func release(_ pointer: UnsafeRawPointer?) {
        if let pointer { Unmanaged<CallbackBox<T>>.fromOpaque(pointer).release() }
    }
}
