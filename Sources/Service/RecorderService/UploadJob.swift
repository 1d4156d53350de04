import Foundation
import AllSparkProtocol
import GLibSupport
import GStreamerSupport
import Logging
import Recorder
import RecorderCore
import ServerLink

/// A one-off upload of a time range from the storage folder (the `upload`
/// command), beside a service that may be recording into the same folder.
///
/// Threading: `run` runs the GLib main loop on the calling thread until
/// every chunk is settled, the timeout passes or SIGINT arrives.
public struct UploadJob {
    public struct Outcome {
        public var total: Int
        public var received: Int
        public var failed: Int
        /// False when the timeout or an interrupt ended the job before every chunk was settled.
        public var finished: Bool
        public var server: ServerAddress
    }

    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    public let config: RecorderConfig
    public let start: Double
    public let end: Double
    public let timeout: Double

    public init(config: RecorderConfig, from start: Double, to end: Double, timeout: Double) {
        self.config = config
        self.start = start
        self.end = end
        self.timeout = timeout
    }

    public func run(logger: Logger) throws -> Outcome {
        guard !config.server.host.isEmpty else {
            throw Refusal(description: "\(config.sourceFile): server.host is empty; set it (or --set server.host=HOST:PORT) to upload")
        }
        let address = try ServerAddress(parsing: config.server.host)
        let catalog = try ChunkCatalog(directory: URL(fileURLWithPath: config.recording.storageDirectory))
        // A missing or damaged index: the chunk files themselves say what there is.
        catalog.indexFilesIfIndexWasUnreadable { MediaProbe.duration(of: $0) }
        let chunks = catalog.chunks(from: start, to: end)
        guard !chunks.isEmpty else {
            throw Refusal(description: "no chunk in \(config.recording.storageDirectory) overlaps the range")
        }
        let archive = StoredChunks(catalog: catalog, tuning: config.tuning, logger: logger)
        let link = ServerLinks.make(config, address: address, control: archive, announceChunks: false, settings: nil, logger: logger)
        var outcome = Outcome(total: chunks.count, received: 0, failed: 0, finished: false, server: address)
        let loop = MainLoop()
        link.onUploadFinished = { _, ok in
            if ok { outcome.received += 1 } else { outcome.failed += 1 }
            if outcome.received + outcome.failed == chunks.count { loop.quit() }
        }
        var requested = false
        link.onStateChange { state in
            guard case .connected = state, !requested else { return }
            requested = true
            link.upload(from: start, to: end, reason: "upload command")
        }
        link.start()
        let interrupt = MainLoop.onSignal(SIGINT) { loop.quit() }
        loop.run(forAtMost: timeout)
        interrupt.cancel()
        link.stop()
        outcome.finished = outcome.received + outcome.failed == chunks.count
        return outcome
    }
}
