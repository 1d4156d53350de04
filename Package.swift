// swift-tools-version:5.10
import PackageDescription

// Four layers, one folder each (README "Layout"); a layer uses only those listed before it.
//
// Sources/Platform  C libraries and their Swift boundaries; only a boundary imports its C module
//   GLib/        CGLib, GLibSupport            the main loop that drives everything, the service's clock (LoopClock), the ownership check, callback boxes
//   GStreamer/   CGStreamer, GStreamerSupport  typed Swift over GStreamer; element and pad pointers stay inside
//   Soup/        CSoup, CSoupShim, SoupSupport WebSocket client (handshake over GIO, upload gate), HTTP server
//   Avahi/       CAvahi, AvahiSupport          client, service browser and resolver with typed events
//   RTSPServer/  CRTSPServer, CRTSPServerShim, RTSPServerSupport  the RTSP stream out (gst-rtsp-server on a thread of its own)
//   OpenCV/      CFaceDetector, FaceDetectorSupport  CenterFace via OpenCV DNN, block means, pixelation
//   LibFaceDetection/ CYuNet, YuNetSupport      YuNet (libfacedetection), loaded at run time
//   ONNXRuntime/ CONNXRuntime                  ONNX Runtime's C API, loaded at run time (CenterFace's faster runtime)
//   Systemd/     SystemdSupport                sd_notify over its datagram socket, journald `<N>` log priorities
// Sources/Domain    pure Swift
//   AllSparkProtocol   the wire messages, reply ledger, server addresses, peer text (Foundation only)
//   Storage            the storage folder, chunk catalog, retention plan and guard, shared pins
//   RecorderCore       config, TOML, pipeline templates, the chunk timeline, the settings path (Settings.swift), RecorderControl
// Sources/Engine    the media engine
//   Recorder           pipeline, frame path, chunk sink, recording session, preview tap
//   FaceBlur           the privacy stage: detection, tracking, camera motion, anonymisation, offline blur
// Sources/Service   what runs the engine and talks to the world
//   ServerLink         the AllSpark connection: connection, session, one file per command, upload queue
//   Discovery          browsing _allspark._tcp, the auto-connect policy
//   RecorderService    the service core: recorder + privacy stage + link + discovery + settings, one lifecycle
//   Console            the web console, REST API, metrics and live preview over the service core
// Sources/App       allspark-recorder, the command line
// Sources/Build     embed-resources, the tool of the EmbedResources build plugin (Plugins/): data files into code
// Tests mirror this (Tests/<layer>/<Target>Tests); Tests/Support holds the shared test libraries and helper executables.

let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let metrics = Target.Dependency.product(name: "CoreMetrics", package: "swift-metrics")

let package = Package(
    name: "allspark-recorder",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "allspark-recorder", targets: ["allspark-recorder"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // PBKDF2 for the console password (_CryptoExtras), SHA-256.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
        // Counters and timers where events happen (swift-metrics), kept per service in a Prometheus
        // registry that the console's /metrics writes out (swift-prometheus).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        // MARK: Platform

        .systemLibrary(name: "CGLib", path: "Sources/Platform/GLib/CGLib",
                       pkgConfig: "glib-2.0 gobject-2.0", providers: [.apt(["libglib2.0-dev"])]),
        .target(name: "GLibSupport", dependencies: ["CGLib"], path: "Sources/Platform/GLib/GLibSupport"),

        .systemLibrary(name: "CGStreamer", path: "Sources/Platform/GStreamer/CGStreamer",
                       pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-video-1.0 gstreamer-pbutils-1.0",
                       providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        .target(name: "GStreamerSupport", dependencies: ["CGStreamer", "GLibSupport", logging],
                path: "Sources/Platform/GStreamer/GStreamerSupport"),

        .systemLibrary(name: "CSoup", path: "Sources/Platform/Soup/CSoup",
                       pkgConfig: "libsoup-3.0", providers: [.apt(["libsoup-3.0-dev"])]),
        // The WebSocket handshake over GIO and a gated output stream under
        // libsoup's WebSocket, so big uploads stream from the file (see its header).
        .target(name: "CSoupShim", dependencies: ["CSoup"], path: "Sources/Platform/Soup/CSoupShim"),
        .target(name: "SoupSupport", dependencies: ["CSoup", "CSoupShim", "GLibSupport"], path: "Sources/Platform/Soup/SoupSupport"),

        // gst-rtsp-server for the privacy-safe RTSP stream: a C half (auth subclass, client caps,
        // feeding the shared media, its own thread) with a plain C header, and its Swift boundary.
        .systemLibrary(name: "CRTSPServer", path: "Sources/Platform/RTSPServer/CRTSPServer",
                       pkgConfig: "gstreamer-rtsp-server-1.0 gstreamer-app-1.0", providers: [.apt(["libgstrtspserver-1.0-dev"])]),
        .target(name: "CRTSPServerShim", dependencies: ["CRTSPServer"], path: "Sources/Platform/RTSPServer/CRTSPServerShim",
                linkerSettings: [.linkedLibrary("gstrtspserver-1.0"), .linkedLibrary("gstrtsp-1.0"), .linkedLibrary("gstapp-1.0"),
                                 .linkedLibrary("gstreamer-1.0"), .linkedLibrary("gio-2.0"), .linkedLibrary("gobject-2.0"),
                                 .linkedLibrary("glib-2.0")]),
        .target(name: "RTSPServerSupport", dependencies: ["CRTSPServerShim", "GStreamerSupport", logging],
                path: "Sources/Platform/RTSPServer/RTSPServerSupport"),

        .systemLibrary(name: "CAvahi", path: "Sources/Platform/Avahi/CAvahi",
                       pkgConfig: "avahi-client avahi-glib", providers: [.apt(["libavahi-client-dev", "libavahi-glib-dev"])]),
        .target(name: "AvahiSupport", dependencies: ["CAvahi"], path: "Sources/Platform/Avahi/AvahiSupport"),

        // CenterFace through OpenCV DNN behind a C interface. Debian's
        // libopencv-dnn-dev has no pkg-config file of its own (opencv4.pc
        // comes with libopencv-dev and drags in VTK): headers and libraries by name.
        // ONNX Runtime, loaded at run time (dlopen) from the library scripts/fetch-face-model fetches.
        .target(name: "CONNXRuntime", path: "Sources/Platform/ONNXRuntime/CONNXRuntime",
                linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "CFaceDetector",
            dependencies: ["CONNXRuntime"],
            path: "Sources/Platform/OpenCV/CFaceDetector",
            cxxSettings: [.unsafeFlags(["-isystem", "/usr/include/opencv4"])],
            linkerSettings: [
                .linkedLibrary("opencv_dnn"), .linkedLibrary("opencv_imgproc"),
                .linkedLibrary("opencv_core"), .linkedLibrary("m"),
            ]
        ),
        .target(name: "FaceDetectorSupport", dependencies: ["CFaceDetector"], path: "Sources/Platform/OpenCV/FaceDetectorSupport"),
        // libfacedetection's YuNet, loaded at run time (dlopen) from the library scripts/fetch-face-model fetches.
        .target(
            name: "CYuNet",
            path: "Sources/Platform/LibFaceDetection/CYuNet",
            cxxSettings: [.unsafeFlags(["-isystem", "/usr/include/opencv4"])],
            linkerSettings: [.linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core"), .linkedLibrary("dl")]
        ),
        .target(name: "YuNetSupport", dependencies: ["CYuNet"], path: "Sources/Platform/LibFaceDetection/YuNetSupport"),

        // argv as the kernel passed it (a setenv before main hides it from Swift's runtime).
        .target(name: "CProcessArguments", path: "Sources/Platform/Process/CProcessArguments"),
        .target(name: "ProcessArguments", dependencies: ["CProcessArguments"], path: "Sources/Platform/Process/ProcessArguments"),

        // No C module: sd_notify is a datagram to a unix socket (see SystemdNotifier), journald reads `<N>` prefixes.
        .target(name: "SystemdSupport", dependencies: [logging], path: "Sources/Platform/Systemd/SystemdSupport"),

        // MARK: Domain

        .target(name: "AllSparkProtocol", dependencies: [], path: "Sources/Domain/AllSparkProtocol"),
        .target(name: "Storage", dependencies: [logging], path: "Sources/Domain/Storage"),
        .target(name: "RecorderCore", dependencies: ["AllSparkProtocol", "Storage", logging], path: "Sources/Domain/RecorderCore"),

        // MARK: Engine

        .target(name: "Recorder", dependencies: ["Storage", "RecorderCore", "GStreamerSupport", "GLibSupport", logging],
                path: "Sources/Engine/Recorder"),
        .target(name: "FaceBlur",
                dependencies: ["FaceDetectorSupport", "YuNetSupport", "GStreamerSupport", "GLibSupport", "Recorder", "RecorderCore", logging, metrics],
                path: "Sources/Engine/FaceBlur"),

        // MARK: Service

        .target(name: "ServerLink",
                dependencies: ["AllSparkProtocol", "SoupSupport", "Storage", "RecorderCore", "GLibSupport", logging],
                path: "Sources/Service/ServerLink"),
        .target(name: "Discovery", dependencies: ["AllSparkProtocol", "AvahiSupport", "GLibSupport", "RecorderCore", logging],
                path: "Sources/Service/Discovery"),
        .target(name: "RecorderService",
                dependencies: ["AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "FaceBlur", "ServerLink", "Discovery",
                               "GLibSupport", "GStreamerSupport", "SoupSupport", "SystemdSupport", "RTSPServerSupport", logging, metrics,
                               .product(name: "Prometheus", package: "swift-prometheus")],
                path: "Sources/Service/RecorderService"),
        .target(name: "Console",
                dependencies: ["RecorderService", "AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "ServerLink",
                               "SoupSupport", "GLibSupport", "GStreamerSupport", "RTSPServerSupport", logging,
                               .product(name: "Crypto", package: "swift-crypto"),
                               .product(name: "_CryptoExtras", package: "swift-crypto")],
                path: "Sources/Service/Console",
                // The page (console.html) and the API document (openapi.json), embedded at build time.
                exclude: ["Resources"],
                plugins: ["EmbedResources"]),

        // MARK: Build tools

        // Turns a target's Resources/ files into Swift source (EmbeddedResources), see the plugin.
        .executableTarget(name: "embed-resources", path: "Sources/Build/embed-resources"),
        .plugin(name: "EmbedResources", capability: .buildTool(), dependencies: ["embed-resources"], path: "Plugins/EmbedResources"),

        // MARK: App

        .executableTarget(
            name: "allspark-recorder",
            dependencies: [
                "Console", "RecorderService", "AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "GStreamerSupport",
                "GLibSupport", "FaceBlur", "ServerLink", "SoupSupport", "Discovery", "SystemdSupport", "ProcessArguments",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), logging,
            ],
            path: "Sources/App/allspark-recorder"
        ),

        // MARK: Test support

        .target(name: "RecorderTestSupport",
                dependencies: ["Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "SoupSupport", "FaceBlur", "ClockTesting", logging],
                path: "Tests/Support/RecorderTestSupport"),
        // The service's clock for tests (`TestClock`, a `LoopClock` that moves only when the test moves it).
        .target(name: "ClockTesting", dependencies: ["GLibSupport"], path: "Tests/Support/ClockTesting"),
        // The server link's testing library: an in-memory channel and connector on a clock
        // the test moves, so protocol tests run without sockets, video or real waiting.
        .target(name: "ServerLinkTesting",
                dependencies: ["ServerLink", "ClockTesting", "AllSparkProtocol", "SoupSupport", "Storage", "RecorderCore", logging],
                path: "Tests/Support/ServerLinkTesting"),
        // A storage folder with the user's files beside it, for the tests that nothing outside it is touched.
        .target(name: "StorageTestSupport", path: "Tests/Support/StorageTestSupport"),
        // The AllSpark test server as a process, for tests that run it inside a network namespace.
        .executableTarget(name: "allspark-test-server", dependencies: ["RecorderTestSupport", "GLibSupport"],
                          path: "Tests/Support/AllsparkTestServer"),
        // Holds pins in a storage folder from another process, for StorageTests.
        .executableTarget(name: "storage-pin-holder", dependencies: ["Storage"], path: "Tests/Support/StoragePinHolder"),

        // MARK: Tests, by layer

        .testTarget(name: "PlatformTests", dependencies: ["GLibSupport", "GStreamerSupport", "SoupSupport", "RecorderTestSupport"],
                    path: "Tests/Platform/PlatformTests"),
        .testTarget(name: "AllSparkProtocolTests", dependencies: ["AllSparkProtocol"], path: "Tests/Domain/AllSparkProtocolTests"),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "StorageTestSupport", logging], path: "Tests/Domain/StorageTests"),
        .testTarget(name: "RecorderCoreTests", dependencies: ["RecorderCore", "StorageTestSupport"], path: "Tests/Domain/RecorderCoreTests"),
        .testTarget(name: "RecorderTests",
                    dependencies: ["Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport", "ClockTesting", logging],
                    path: "Tests/Engine/RecorderTests"),
        .testTarget(name: "FaceBlurTests",
                    dependencies: ["FaceBlur", "Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport", logging],
                    path: "Tests/Engine/FaceBlurTests",
                    // Recorded detections and faces of the corpus videos, read from the checkout (CorpusReplayTests).
                    exclude: ["Replays"]),
        .testTarget(name: "ServerLinkTests",
                    dependencies: ["ServerLink", "ServerLinkTesting", "AllSparkProtocol", "SoupSupport", "Recorder", "Storage",
                                   "RecorderCore", "GLibSupport", "RecorderTestSupport", logging],
                    path: "Tests/Service/ServerLinkTests"),
        .testTarget(name: "DiscoveryTests",
                    dependencies: ["Discovery", "AllSparkProtocol", "RecorderCore", "GLibSupport", "RecorderTestSupport", logging],
                    path: "Tests/Service/DiscoveryTests"),
        .testTarget(name: "RecorderServiceTests",
                    dependencies: ["RecorderService", "Recorder", "RecorderCore", "ServerLink", "GLibSupport", "RecorderTestSupport",
                                   "SystemdSupport", logging],
                    path: "Tests/Service/RecorderServiceTests"),
        .testTarget(name: "ConsoleTests",
                    dependencies: ["Console", "RecorderService", "Recorder", "RecorderCore", "FaceBlur", "GLibSupport", "RecorderTestSupport"],
                    path: "Tests/Service/ConsoleTests"),
    ]
)
