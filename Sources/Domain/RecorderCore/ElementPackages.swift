/// Which Debian 12 package provides a GStreamer element, so that an error for
/// a missing element can say what to install. Hardware encoders carry what
/// else they need: their elements exist only where the hardware and its driver do.
public enum ElementPackages {
    public struct Provider: Equatable, Sendable {
        public let package: String
        /// What the element needs besides the package (hardware, a driver); nil for software.
        public let needs: String?
    }

    /// The package providing `element`, when it is one the pipelines or their encoders use.
    public static func provider(of element: String) -> Provider? { table[element] }

    /// The advice for a missing `element`: the package to install, or how to find it.
    public static func advice(for element: String) -> String {
        guard let provider = provider(of: element) else {
            return "the name is misspelt or its plugin is not installed (gst-inspect-1.0 \(element) checks; apt-file search names the package of a plugin file)"
        }
        let install = "its plugin is not installed: apt install \(provider.package)"
        return provider.needs.map { "\(install); \($0)" } ?? install
    }

    private static let vaapi = "a hardware encoder: needs an Intel or AMD GPU with its VA-API driver (intel-media-va-driver or mesa-va-drivers); the element exists only where that works"

    private static let table: [String: Provider] = {
        var table: [String: Provider] = [:]
        func add(_ package: String, needs: String? = nil, _ elements: String...) {
            for element in elements { table[element] = Provider(package: package, needs: needs) }
        }
        add("gstreamer1.0-plugins-base", "videotestsrc", "videoconvert", "videoscale", "videorate", "appsrc", "appsink",
            "decodebin", "uridecodebin", "audiotestsrc", "audioconvert", "audioresample", "opusenc", "vorbisenc")
        add("gstreamer1.0-alsa", "alsasrc", "alsasink")
        add("gstreamer1.0-plugins-good", "splitmuxsink", "mp4mux", "qtmux", "qtdemux", "matroskamux", "v4l2src", "jpegdec",
            "jpegenc", "rtspsrc", "souphttpsrc", "multipartdemux", "rtph264depay", "rtpjpegdepay", "pulsesrc", "wavenc", "flvmux")
        add("gstreamer1.0-plugins-good", needs: "a hardware encoder: needs a V4L2 memory-to-memory encoder device (a Raspberry Pi, many ARM boards); the element exists only where the device does",
            "v4l2h264enc")
        add("gstreamer1.0-plugins-bad", "h264parse", "h265parse", "jpegparse", "openh264enc", "voaacenc", "x265enc", "rtmpsink")
        add("gstreamer1.0-plugins-bad", needs: vaapi, "vah264enc", "vah265enc")
        add("gstreamer1.0-plugins-bad", needs: "a hardware encoder: needs an NVIDIA GPU with its proprietary driver (non-free); the element exists only where the driver is loaded",
            "nvh264enc", "nvh265enc")
        add("gstreamer1.0-vaapi", needs: vaapi, "vaapih264enc", "vaapih265enc", "vaapipostproc")
        add("gstreamer1.0-plugins-ugly", "x264enc")
        add("gstreamer1.0-libav", "avenc_aac", "avdec_h264", "avdec_h265", "avdec_aac")
        return table
    }()
}
