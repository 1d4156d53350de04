// swift-tools-version:5.10
import PackageDescription

// Layout (one target per concern):
//   CGLib, CGStreamer, CSoup, CAvahi  system library modules (pkg-config) + tiny inline shims
//   GLibSupport                 the GLib main loop that drives everything, and the callback box the C boundaries share
//   GStreamerSupport            the GStreamer boundary: typed Swift over GStreamer; element and pad pointers stay inside
//   CFaceDetector               C++ shim: CenterFace face detection (OpenCV DNN), pixelation
//   FaceDetectorSupport         the OpenCV boundary: CenterFace net, detection in a region, block means, pixelation in Swift types
//   AllSparkProtocol            pure Swift, Foundation only: the wire messages, the reply ledger, server addresses, peer text
//   Storage                     pure Swift: the storage folder, chunk catalog, retention rules and guard, shared pins
//   RecorderCore                pure Swift: config, TOML, pipeline templates
//   Recorder                    the media engine: pipeline, frame path, chunk lifecycle, service
//   FaceBlur                    the privacy stage: detection thread, tracking, anonymisation
//   CSoupShim                   C: WebSocket handshake over GIO, gated stream for streamed uploads
//   SoupSupport                 the libsoup boundary: WebSocket client and a small HTTP/WebSocket server
//   ServerLink                  the AllSpark server connection: connection, session, one file per command, upload queue
//   ServerLinkTesting           (Tests/) an in-memory channel and a test-controlled clock the link runs over in tests
//   AvahiSupport                the Avahi boundary: client with its state, service browser and resolver, typed events
//   Discovery                   finding AllSpark servers: browsing _allspark._tcp over AvahiSupport, the auto-connect policy
//   RecorderService             the service core: recorder + privacy stage + server link + discovery + settings, one lifecycle
//   allspark-recorder           the command-line executable
// Each C module is imported by its boundary target alone (…Support, SoupSupport
// with CSoupShim); every other target and every test speaks Swift types.
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
            name: "FaceDetectorSupport",
            dependencies: ["CFaceDetector"]
        ),
        .target(
            name: "FaceBlur",
            dependencies: ["FaceDetectorSupport", "GStreamerSupport", "GLibSupport", "Recorder", "RecorderCore", .product(name: "Logging", package: "swift-log")]
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
            name: "AllSparkProtocol"
        ),
        .target(
            name: "ServerLink",
            dependencies: ["AllSparkProtocol", "SoupSupport", "Storage", "RecorderCore", "GLibSupport", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "AvahiSupport",
            dependencies: ["CAvahi"]
        ),
        .target(
            name: "Discovery",
            dependencies: ["AllSparkProtocol", "AvahiSupport", "GLibSupport", "RecorderCore", .product(name: "Logging", package: "swift-log")]
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
            name: "Storage",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "RecorderCore",
            dependencies: ["AllSparkProtocol", "Storage", .product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "Recorder",
            dependencies: [
                "Storage", "RecorderCore", "GStreamerSupport", "GLibSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The service core: owns and wires recorder, privacy stage, server link,
        // discovery and settings with one start/reload/stop lifecycle.
        .target(
            name: "RecorderService",
            dependencies: [
                "AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "FaceBlur", "ServerLink", "Discovery", "GLibSupport", "GStreamerSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The web console and REST API over the service core (libsoup's SoupServer on the same main loop).
        .target(
            name: "Console",
            dependencies: [
                "RecorderService", "AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "ServerLink", "SoupSupport", "GLibSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "allspark-recorder",
            dependencies: [
                "Console", "RecorderService", "AllSparkProtocol", "Recorder", "Storage", "RecorderCore", "GStreamerSupport", "GLibSupport", "FaceBlur", "ServerLink", "SoupSupport", "Discovery",
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
        // Holds pins in a storage folder from another process, for StorageTests.
        .executableTarget(
            name: "storage-pin-holder",
            dependencies: ["Storage"],
            path: "Tests/StoragePinHolder"
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: ["Storage", .product(name: "Logging", package: "swift-log")]
        ),
        // The server link's testing library: an in-memory channel and connector, and a clock
        // the test moves, so protocol tests run without sockets, video or real waiting.
        .target(
            name: "ServerLinkTesting",
            dependencies: ["ServerLink", "AllSparkProtocol", "SoupSupport", "Storage", "RecorderCore", .product(name: "Logging", package: "swift-log")],
            path: "Tests/ServerLinkTesting"
        ),
        .testTarget(
            name: "AllSparkProtocolTests",
            dependencies: ["AllSparkProtocol"]
        ),
        .testTarget(
            name: "RecorderCoreTests",
            dependencies: ["RecorderCore"]
        ),
        .testTarget(
            name: "ServerLinkTests",
            dependencies: ["ServerLink", "ServerLinkTesting", "AllSparkProtocol", "SoupSupport", "Recorder", "Storage", "RecorderCore", "RecorderService", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "DiscoveryTests",
            dependencies: ["Discovery", "AllSparkProtocol", "RecorderCore", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "FaceBlurTests",
            dependencies: ["FaceBlur", "Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "ConsoleTests",
            dependencies: ["Console", "RecorderService", "Recorder", "RecorderCore", "FaceBlur", "GLibSupport", "RecorderTestSupport"]
        ),
        .testTarget(
            name: "RecorderServiceTests",
            dependencies: ["RecorderService", "Recorder", "RecorderCore", "ServerLink", "GLibSupport", "RecorderTestSupport"]
        ),
        .testTarget(
            name: "RecorderTests",
            dependencies: ["Recorder", "RecorderCore", "GStreamerSupport", "GLibSupport", "RecorderTestSupport",
                           .product(name: "Logging", package: "swift-log")]
        ),
    ]
)
