import XCTest
import GLibSupport
import Recorder
import RecorderCore
import RecorderService
import RecorderTestSupport

/// Pairing by showing the camera a QR code: a camera (a still picture of a
/// code made by `qrencode`, played live through `imagefreeze`) shows the
/// address of a real libsoup AllSpark server on loopback; the service, with
/// `server.pair_by_qr = true` and no host, reads it, checks `/api/health`,
/// keeps it and connects. The scanner's frames never reach the chunks.
final class QRPairingTests: XCTestCase {
    /// A config recording a live picture of `picture` with pairing on and no server host.
    func writeConfig(_ folder: TemporaryDirectory, picture: URL, storage: String, verifyTLS: Bool = true) throws -> String {
        let pipeline = folder.file("qr-camera.pipeline")
        try """
            # A still picture played as a live camera.
            filesrc location=${picture} ! pngdec ! videoconvert ! imagefreeze is-live=true
              ! videoscale add-borders=true
              ! video/x-raw,format=I420,width=320,height=240,pixel-aspect-ratio=1/1,framerate=15/1
              ! appsink name=blur_in
            appsrc name=blur_out ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 bitrate=300
              ! h264parse ! splitmuxsink name=chunks
            """.write(to: pipeline, atomically: true, encoding: .utf8)
        let file = folder.file("recorder.toml")
        try """
            [device]
            name = "pairing-test"
            [server]
            host = ""
            discovery = false
            pair_by_qr = true
            verify_tls = \(verifyTLS)
            reconnect_delay_s = 0.3
            [recording]
            pipeline = "\(pipeline.path)"
            storage_dir = "\(storage)"
            chunk_duration_ms = 1000
            [privacy]
            face_blur = false
            [pipeline.vars]
            picture = "\(picture.path)"
            """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    func testAQRCodeInThePicturePairsKeepsTheHostAndConnectsWithoutRecordingTheScannersFrames() throws {
        let server = try AllSparkTestServer()
        let folder = TemporaryDirectory()
        let picture = folder.file("pairing.png")
        // As the server's page shows it: <address>:<port>.
        let qr = try runTool("qrencode", ["-o", picture.path, "-s", "6", "-m", "4", server.address])
        XCTAssertEqual(qr.status, 0, "qrencode (Debian package qrencode, scripts/setup --tests): \(qr.output)")
        let storage = folder.file("recordings").path
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, picture: picture, storage: storage)))
        var paired: [String] = []
        service.onPaired = { paired.append($0) }
        try service.start()
        XCTAssertTrue(service.isPairing, "pair_by_qr with no host: looking for a code")
        XCTAssertNil(service.link, "no host, no discovery: no link until paired")

        XCTAssertTrue(waitOnMainLoop(15) { server.clientNames.contains("pairing-test") },
                      "the link connected to the server the code names")
        // Kept with the scheme its health check answered on (the test server has no TLS):
        // the link goes straight to it, without a wss attempt at each connect.
        let host = "ws://\(server.address)"
        XCTAssertEqual(paired, [host])
        XCTAssertFalse(service.isPairing, "paired: no longer looking")
        let recorder = try XCTUnwrap(service.recorder)
        XCTAssertFalse(recorder.qrScanner.isScanning, "the scanner is torn down once paired")
        let saved = try XCTUnwrap(ServerLinkStore(storageDirectory: storage).load(), "the choice is kept in server-link.json")
        XCTAssertEqual(saved.host, host)
        XCTAssertEqual(saved.by, "QR code")
        XCTAssertEqual(service.configuration.server.host, host)

        // A chunk is announced on the new link, then stop.
        XCTAssertTrue(waitOnMainLoop(10) { server.texts.contains { $0.contains("chunkSaved") } })
        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(20) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)

        // The scanner took a few frames (at its low rate) and none of them reached a chunk:
        // the chunks hold exactly the frames the frame path captured, each once.
        let stats = recorder.frameStatistics
        let scanned = recorder.qrScanner.framesScanned
        XCTAssertGreaterThan(scanned, 0)
        XCTAssertLessThan(scanned, stats.captured / 3, "a frame every \(QRScanner.defaultInterval) s, not every frame")
        var framesInChunks = 0
        for chunk in recorder.catalog.all { framesInChunks += try countFrames(in: recorder.catalog.url(of: chunk)) }
        XCTAssertEqual(stats.captured, stats.recorded)
        XCTAssertEqual(framesInChunks, stats.recorded, "every chunk frame came through the frame path once; none from the scanner")
    }

    /// The server's page shows `ws://<address>:<port>` even when the server runs TLS (all or nothing on
    /// its port): the code's scheme is a hint, so wss is tried first and the pairing keeps wss.
    func testAWsCodeShownByATLSServerPairsOverWss() throws {
        let folder = TemporaryDirectory()
        let server = try AllSparkTestServer(certificate: try makeSelfSignedCertificate(in: folder))
        let picture = folder.file("pairing.png")
        XCTAssertEqual(try runTool("qrencode", ["-o", picture.path, "-s", "6", "-m", "4", "ws://\(server.address)"]).status, 0)
        let storage = folder.file("recordings").path
        // A self-signed test certificate: verify_tls = false, as a box pairing with such a server needs.
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, picture: picture, storage: storage,
                                                                                             verifyTLS: false)))
        var paired: [String] = []
        service.onPaired = { paired.append($0) }
        try service.start()
        XCTAssertTrue(waitOnMainLoop(20) { server.clientNames.contains("pairing-test") }, "the link connected over TLS")
        XCTAssertEqual(paired, ["wss://\(server.address)"], "kept with the scheme the server answered on")
        XCTAssertEqual(ServerLinkStore(storageDirectory: storage).load()?.host, "wss://\(server.address)")
        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(20) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)
    }

    /// With the certificate checked, an untrusted one ends the attempt: no fall back to plain ws.
    func testAWsCodeWhoseTLSServerIsUntrustedIsNotPairedAndNeverDowngraded() throws {
        let folder = TemporaryDirectory()
        let server = try AllSparkTestServer(certificate: try makeSelfSignedCertificate(in: folder))
        let picture = folder.file("pairing.png")
        XCTAssertEqual(try runTool("qrencode", ["-o", picture.path, "-s", "6", "-m", "4", "ws://\(server.address)"]).status, 0)
        let storage = folder.file("recordings").path
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, picture: picture, storage: storage)))
        try service.start()
        let recorder = try XCTUnwrap(service.recorder)
        XCTAssertTrue(waitOnMainLoop(20) { recorder.qrScanner.codesRead >= 3 }, "the code is read again and again")
        XCTAssertTrue(service.isPairing, "still looking: the certificate is not trusted")
        XCTAssertNil(ServerLinkStore(storageDirectory: storage).load(), "nothing kept")
        XCTAssertFalse(server.clientNames.contains("pairing-test"))
        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(20) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)
    }

    func testACodeThatIsNotAServerOrWhoseServerIsDownIsIgnoredAndScanningGoesOn() throws {
        let folder = TemporaryDirectory()
        // A port nothing listens on: the code is valid, the health check fails.
        let down = try AllSparkTestServer()
        let address = down.address
        down.kill()
        let picture = folder.file("pairing.png")
        XCTAssertEqual(try runTool("qrencode", ["-o", picture.path, "-s", "6", address]).status, 0)
        let storage = folder.file("recordings").path
        let service = try RecorderService(settings: ServiceSettings(configFile: try writeConfig(folder, picture: picture, storage: storage)))
        try service.start()
        let recorder = try XCTUnwrap(service.recorder)
        XCTAssertTrue(waitOnMainLoop(10) { recorder.qrScanner.codesRead >= 3 }, "the code is read again and again")
        XCTAssertTrue(service.isPairing, "still looking: the code's server does not answer")
        XCTAssertNil(service.link)
        XCTAssertNil(ServerLinkStore(storageDirectory: storage).load(), "nothing kept")
        let stopped = expectation(description: "stopped")
        service.stop(reason: "test") { stopped.fulfill() }
        XCTAssertTrue(waitOnMainLoop(20) { if case .stopped = service.state { return true }; return false })
        wait(for: [stopped], timeout: 0)
        XCTAssertFalse(recorder.qrScanner.isScanning, "stopping the service stops the scanner")
    }

    func testThePairCommandReplacesTheHostOnDemandAndExitsOncePaired() throws {
        let server = try AllSparkTestServer()
        let folder = TemporaryDirectory()
        let picture = folder.file("pairing.png")
        // Some pages add a scheme and a slash.
        XCTAssertEqual(try runTool("qrencode", ["-o", picture.path, "-s", "6", "http://\(server.address)/"]).status, 0)
        let storage = folder.file("recordings").path
        let config = try writeConfig(folder, picture: picture, storage: storage)
        // Pairing off in the file and a (dead) host set: the command pairs anyway, and replaces it.
        let (status, output) = try runWhileServing(recorderExecutable, [
            "pair", "--config", config, "--timeout", "20", "--set", "server.pair_by_qr=false", "--set", "server.host=ws://127.0.0.1:1"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("paired with ws://\(server.address)"), output)
        XCTAssertEqual(ServerLinkStore(storageDirectory: storage).load()?.host, "ws://\(server.address)")
        XCTAssertTrue(server.clientNames.contains("pairing-test"), "it connected before exiting")
    }
}
