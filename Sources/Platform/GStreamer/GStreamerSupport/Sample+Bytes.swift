import CGStreamer
import Foundation

extension Sample {
    /// A copy of the buffer's bytes (an encoded picture, a small payload).
    public var bytes: Data? {
        guard let buffer else { return nil }
        let size = gst_buffer_get_size(buffer)
        var data = Data(count: Int(size))
        let copied = data.withUnsafeMutableBytes { gst_buffer_extract(buffer, 0, $0.baseAddress, size) }
        return copied == size ? data : nil
    }
}
