import CGStreamer
import Foundation

/// A raw video frame mapped into memory: the planes of an I420 or NV12
/// picture, valid only inside the closure that received it.
public struct VideoFrame {
    public enum Format: Equatable { case i420, nv12 }
    public struct Plane {
        public let data: UnsafeMutablePointer<UInt8>
        /// Bytes per row.
        public let stride: Int
    }

    public let format: Format
    public let width: Int
    public let height: Int
    /// Y, then U and V (I420) or interleaved UV (NV12).
    public let planes: [Plane]

    public var luma: Plane { planes[0] }
}

public struct VideoFrameError: Error, CustomStringConvertible {
    public var description: String
}

extension Sample {
    /// Maps the frame for reading and writing and runs `body` on it. The
    /// buffer is written in place when this sample holds the only
    /// reference; otherwise it is copied first. Returns the sample to pass
    /// on (self, or a new sample around the copy).
    public func modifyingVideoFrame(_ body: (VideoFrame) throws -> Void) throws -> Sample {
        guard let buffer else { throw VideoFrameError(description: "sample without a buffer") }
        var target = self
        var writable = buffer
        if cgst_buffer_is_writable(buffer) == 0 {
            guard let copy = gst_buffer_copy_deep(buffer) else { throw VideoFrameError(description: "cannot copy a shared buffer") }
            guard let sample = gst_sample_new(copy, gst_sample_get_caps(pointer), gst_sample_get_segment(pointer), nil) else {
                cgst_buffer_unref(copy)
                throw VideoFrameError(description: "cannot wrap the copied buffer")
            }
            cgst_buffer_unref(copy)   // the new sample holds it
            target = Sample(owning: sample)
            writable = copy
        }
        try target.map(writable, flags: GstMapFlags(rawValue: GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue), body)
        return target
    }

    /// Maps the frame read-only. Do not write through the planes.
    public func readingVideoFrame<T>(_ body: (VideoFrame) throws -> T) throws -> T {
        guard let buffer else { throw VideoFrameError(description: "sample without a buffer") }
        var result: T?
        try map(buffer, flags: GST_MAP_READ) { result = try body($0) }
        return result!
    }

    private func map(_ buffer: UnsafeMutablePointer<GstBuffer>, flags: GstMapFlags, _ body: (VideoFrame) throws -> Void) throws {
        guard let caps = gst_sample_get_caps(pointer) else { throw VideoFrameError(description: "sample without caps") }
        var info = GstVideoInfo()
        guard gst_video_info_from_caps(&info, caps) != 0 else { throw VideoFrameError(description: "caps are not raw video") }
        var frame = GstVideoFrame()
        guard gst_video_frame_map(&frame, &info, buffer, flags) != 0 else {
            throw VideoFrameError(description: "cannot map the video frame")
        }
        defer { gst_video_frame_unmap(&frame) }
        let format: VideoFrame.Format
        switch cgst_video_frame_format(&frame) {
        case GST_VIDEO_FORMAT_I420: format = .i420
        case GST_VIDEO_FORMAT_NV12: format = .nv12
        default:
            throw VideoFrameError(description: "unsupported raw format \(String(cString: gst_video_format_to_string(cgst_video_frame_format(&frame)))); end the capture part with video/x-raw,format=I420 or NV12")
        }
        let planeCount = format == .i420 ? 3 : 2
        let planes = (0..<planeCount).map { i in
            VideoFrame.Plane(data: cgst_video_frame_plane(&frame, guint(i)), stride: Int(cgst_video_frame_stride(&frame, guint(i))))
        }
        try body(VideoFrame(format: format, width: Int(cgst_video_frame_width(&frame)),
                            height: Int(cgst_video_frame_height(&frame)), planes: planes))
    }
}
