/// The H.264 encoder a pipeline's `${encoder}` stands for (`recording.encoder`):
/// the software x264 everywhere, or the box's hardware. A pipeline that wants
/// its own chain sets `pipeline.vars.encoder` instead, which wins.
public enum VideoEncoder: String, CaseIterable, Sendable {
    case x264, openh264, v4l2, vaapi, nvenc

    /// The element chain for `${encoder}`: a keyframe every second (chunks are cut on keyframes)
    /// at `bitrateKbps`. The hardware chains are checked with gst-inspect-1.0 only where installed.
    ///
    /// x264's keyframes come only every second (`scenecut=0`), as the hardware encoders' do. With its
    /// scene-cut detection a whip-pan read as a run of scene cuts: keyframes on up to six frames in a
    /// row, each several times a predicted frame's size, which the bitrate then took from the frames
    /// around them (the crowd clip, docs/privacy.md). A predicted frame codes a cut with intra blocks.
    public func chain(framerate: Int, bitrateKbps: Int) -> String {
        switch self {
        case .x264:
            return "x264enc tune=zerolatency speed-preset=veryfast key-int-max=\(framerate) option-string=scenecut=0 bitrate=\(bitrateKbps)"
        case .openh264:
            return "openh264enc rate-control=bitrate bitrate=\(bitrateKbps * 1000) gop-size=\(framerate) complexity=low"
        case .v4l2:
            // Stateful V4L2 memory-to-memory encoders (Raspberry Pi and others) take their settings as controls.
            return "v4l2h264enc extra-controls=\"encode,video_bitrate=\(bitrateKbps * 1000),h264_i_frame_period=\(framerate)\""
        case .vaapi:
            return "vaapih264enc rate-control=cbr bitrate=\(bitrateKbps) keyframe-period=\(framerate)"
        case .nvenc:
            return "nvh264enc preset=low-latency-hq rc-mode=cbr bitrate=\(bitrateKbps) gop-size=\(framerate)"
        }
    }

    /// The element the chain starts with (for errors and checks).
    public var element: String {
        String(chain(framerate: 30, bitrateKbps: 1000).prefix { $0 != " " })
    }
}
