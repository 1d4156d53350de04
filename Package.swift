// swift-tools-version:5.10
import PackageDescription

// Layout (one target per concern):
//   CGLib, CGStreamer, CSoup, CAvahi  system library modules (pkg-config) + tiny inline shims
//   GLibSupport                 the GLib main loop that drives everything, and the callback box the C boundaries share
//   GStreamerSupport            the unsafe C boundary: typed Swift over GStreamer
//   CFaceDetector               C++ shim: CenterFace face detection (OpenCV DNN), pixelation
//   RecorderCore                pure Swift: config, TOML, pipeline templates, chunk catalog, retention
//   Recorder                    the media engine: pipeline, frame path, chunk lifecycle, service
//   FaceBlur                    the privacy stage: detection thread, tracking, anonymisation
//   CSoupShim                   C: WebSocket handshake over GIO, gated stream for streamed uploads
//   SoupSupport                 the libsoup boundary: WebSocket client and a small HTTP/WebSocket server
//   ServerLink                  the AllSpark server connection (protocol over SoupSupport)
//   Discovery                   finding AllSpark servers: the Avahi browser (_allspark._tcp) and the auto-connect policy
//   allspark-recorder           the command-line executable
let package = Package(
    name: "allspark-recorder",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "allspark-recorder", targets: ["allspark-recorder"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CGLib",
            pkgConfig: "glib-2.0 gobject-2.0",
            providers: [.apt(["libglib2.0-dev"])]
        ),
        .systemLibrary(
            name: "CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-video-1.0 gstreamer-pbutils-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]
        ),
        .systemLibrary(
            name: "CSoup",
            pkgConfig: "libsoup-3.0",
            providers: [.apt(["libsoup-3.0-dev"])]
        ),
        .systemLibrary(
            name: "CAvahi",
            pkgConfig: "avahi-client avahi-glib",
            providers: [.apt(["libavahi-client-dev", "libavahi-glib-dev"])]
        ),
        // CenterFace through OpenCV DNN behind a C interface. Debian's
        // libopencv-dnn-dev has no pkg-config file of its own (opencv4.pc
        // comes with libopencv-dev and drags in VTK): headers and libraries by name.
        .target(
            name: "CFaceDetector",
            cxxSettings: [.unsafeFlags(["-isystem", "/usr/include/opencv4"])],
            linkerSettings: [
                .linkedLibrary("opencv_dnn"), .linkedLibrary("opencv_imgproc"),
                .linkedLibrary("opencv_core"), .linkedLibrary("m"),
            ]
        ),
        .target(
            name: "FaceBlur",
            dependencies: ["CFaceDetector", "GStreamerSupport", "GLibSupport", "Recorder", "RecorderCore", .product(name: "Logging", package: "swift-log")]
        ),
        // The WebSocket handshake over GIO and a gated output stream under
        // libsoup's WebSocket, so big uploads stream from the file (see its header).
        .target(
            name: "CSoupShim",
            dependencies: ["CSoup"]
        ),
        .target(
            name: "SoupSupport",
            dependencies: ["CSoup", "CSoupShim", "GLibSupport"]
        ),
        .target(
            name: "ServerLink",
            dependencies: ["SoupSupport", "RecorderCore", "GLibSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "Discovery",
            dependencies: ["CAvahi", "GLibSupport", "RecorderCore", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "GLibSupport",
            dependencies: ["CGLib"]
        ),
        .target(
            name: "GStreamerSupport",
            dependencies: ["CGStreamer", "GLibSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "RecorderCore",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "Recorder",
            dependencies: [
                "RecorderCore", "GStreamerSupport", "GLibSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "allspark-recorder",
            dependencies: [
                "Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "FaceBlur", "ServerLink", "SoupSupport", "Discovery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The AllSpark test server as a process, for tests that run it inside a network namespace.
        .executableTarget(
            name: "allspark-test-server",
            dependencies: ["RecorderTestSupport", "GLibSupport"],
            path: "Tests/AllsparkTestServer"
        ),
        .target(
            name: "RecorderTestSupport",
            dependencies: ["Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "SoupSupport", "FaceBlur"],
            path: "Tests/RecorderTestSupport"
        ),
        .testTarget(
            name: "RecorderCoreTests",
            dependencies: ["RecorderCore"]
        ),
        .testTarget(
            name: "ServerLinkTests",
            dependencies: ["ServerLink", "SoupSupport", "Recorder", "RecorderCore", "GLibSupport", "CGLib", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "DiscoveryTests",
            dependencies: ["Discovery", "RecorderCore", "GLibSupport", "CGLib", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "FaceBlurTests",
            dependencies: ["FaceBlur", "Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "RecorderTests",
            dependencies: ["Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
    ]
)
