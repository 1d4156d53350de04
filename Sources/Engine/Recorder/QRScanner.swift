import Foundation
import GLibSupport
import GStreamerSupport
import Logging

/// Looks for QR codes in the captured picture, for pairing with a server.
///
/// It sees frames as they leave `blur_in`, before the privacy stage: a code
/// held up to the camera must be readable whatever the stage hides. So its
/// frames go only into a pipeline of its own (`appsrc ! videoconvert ! zbar
/// ! fakesink`), never toward the encoder, the chunks or the preview.
///
/// Costs nothing while not scanning: the pipeline is built by `start` and
/// torn down by `stop`; until then `offer` returns after one locked check.
/// The capture thread never waits for it: a frame is taken at most every
/// `interval` seconds and only while the scanner has finished the last one;
/// every other offer is dropped.
///
/// Threading: `offer` runs on the capture streaming thread; `start`, `stop`
/// and `onCode` belong to the main loop (the bus watch delivers there).
/// `lock` guards what both touch.
public final class QRScanner: @unchecked Sendable {
    /// Seconds between frames handed to the scanner: a code held still is
    /// found within a second, and the camera's frame rate costs nothing.
    public static let defaultInterval = 0.5

    /// Called on the main loop with the text of each QR code read (the same
    /// code again each time it is read: the caller decides what is new).
    public var onCode: ((String) -> Void)?

    private let interval: UInt64
    private let logger: Logger
    private let lock = NSLock()
    /// The scanner's input while scanning (under `lock`).
    private var input: AppSource?
    /// A frame is inside the scanner and not yet through it (under `lock`).
    private var busy = false
    /// Monotonic time (ns) from which the next frame is taken (under `lock`).
    private var nextDue: UInt64 = 0
    /// Frames handed to the scanner since it started (under `lock`).
    private var scanned = 0

    // Main loop only.
    /// QR codes read since the scanner was made (tests, logs).
    public private(set) var codesRead = 0
    private var pipeline: Pipeline?
    private var busWatch: BusWatch?

    public init(interval: Double = QRScanner.defaultInterval, logger: Logger = Logger(label: "allspark.pairing")) {
        self.interval = UInt64(interval * 1e9)
        self.logger = logger
    }

    public var isScanning: Bool { lock.withLock { input != nil } }
    /// Frames handed to the scanner since it started (tests, logs).
    public var framesScanned: Int { lock.withLock { scanned } }

    /// Offered every captured frame, before the privacy stage (streaming thread). Never blocks.
    func offer(_ frame: Sample) {
        let target: AppSource? = lock.withLock {
            guard let input else { return nil }
            let now = DispatchTime.now().uptimeNanoseconds
            // A frame that never came out (lost inside the scanner) holds it for a few intervals at most.
            guard now >= nextDue, !busy || now >= nextDue + 8 * interval else { return nil }
            nextDue = now + interval
            busy = true
            scanned += 1
            return input
        }
        guard let target else { return }
        // Never blocks (block=false); a frame the scanner cannot take is dropped.
        if !target.push(frame) { lock.withLock { busy = false } }
    }

    /// Builds the scanner and starts taking frames. Idempotent.
    public func start() throws {
        MainLoop.preconditionOnLoop()
        guard pipeline == nil else { return }
        let pipeline = try Pipeline.parse("""
            appsrc name=qr_in format=time is-live=false block=false max-buffers=1 leaky-type=upstream \
            ! videoconvert ! zbar name=qr_reader cache=false qos=false \
            ! fakesink name=qr_out sync=false async=false
            """)
        guard let source = pipeline.element(named: "qr_in").flatMap(AppSource.init),
              let done = pipeline.element(named: "qr_out")?.staticPad("sink") else {
            throw GStreamerError("the QR scanner pipeline has no appsrc/fakesink")
        }
        // The frame left the reader (its code, if any, is already on the bus): the next one may come.
        done.onEveryBuffer { [weak self] _ in self?.lock.withLock { self?.busy = false } }
        busWatch = pipeline.watchBus { [weak self] message in self?.handle(message) }
        guard pipeline.setState(.playing) else {
            let reason = pipeline.takeError() ?? "no reason given"
            busWatch?.remove()
            busWatch = nil
            pipeline.setState(.null)
            throw GStreamerError("the QR scanner does not start: \(reason)")
        }
        self.pipeline = pipeline
        lock.withLock {
            input = source
            busy = false
            nextDue = 0
            scanned = 0
        }
        logger.info("pairing: looking for a QR code in the picture (a frame every \(Double(interval) / 1e9) s, before the privacy stage, never recorded)")
    }

    /// Tears the scanner down; offers return at once from now on. Idempotent.
    public func stop() {
        MainLoop.preconditionOnLoop()
        lock.withLock { input = nil }
        guard let pipeline else { return }
        busWatch?.remove()
        busWatch = nil
        pipeline.setState(.null)
        self.pipeline = nil
        logger.info("pairing: stopped looking for QR codes (\(framesScanned) frames scanned)")
    }

    private func handle(_ message: BusMessage) {
        switch message.kind {
        case .element(name: "barcode"):
            // zbar reads other symbologies too; only a QR code pairs.
            guard message.strings["type"] == "QR-Code", let symbol = message.strings["symbol"] else { return }
            codesRead += 1
            onCode?(symbol)
        case .error(let text, let debug, _):
            // A broken scanner must not touch recording: stop scanning and say why.
            logger.error("pairing: the QR scanner failed (\(message.sourceName): \(text)\(BusMessage.detail(debug))); no longer scanning")
            stop()
        default:
            break
        }
    }
}
