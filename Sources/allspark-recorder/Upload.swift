import AllSparkProtocol
import ArgumentParser
import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import Recorder
import RecorderCore
import ServerLink

struct Upload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send the recorded chunks of a time range to the AllSpark server now (a local user's request).",
        discussion: """
            Uses the config's [server] and storage folder; the recorder may keep running meanwhile.
              allspark-recorder upload --config /etc/allspark-recorder/recorder.toml --from -300
            sends the last five minutes. Exits 0 when every chunk arrived, 1 otherwise.
            """)

    @Option(help: "The config file (its [server] and recording.storage_dir are used).")
    var config: String

    @Option(help: "Start of the range: epoch seconds, -300 for five minutes ago, or ISO 8601.")
    var from: String

    @Option(help: "End of the range (same forms); default now.")
    var to: String?

    @Option(help: "Give up after this many seconds.")
    var timeout: Double = 600

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.upload")
        let start = try parseTime(from, option: "--from")
        let end = try to.map { try parseTime($0, option: "--to") } ?? Date().timeIntervalSince1970
        guard start < end else { throw ValidationError("--from must be before --to") }
        let configuration: RecorderConfig
        let catalog: ChunkCatalog
        do {
            configuration = try ConfigLoader.load(file: config, overrides: common.overrides)
            catalog = try ChunkCatalog(directory: URL(fileURLWithPath: configuration.recording.storageDirectory))
        } catch {
            fail("\(error)")
        }
        guard !configuration.server.host.isEmpty else {
            fail("\(config): server.host is empty; set it (or --set server.host=HOST:PORT) to upload")
        }
        let address: ServerAddress
        do { address = try ServerAddress(parsing: configuration.server.host) } catch { fail("\(error)") }

        // A missing or damaged index: the chunk files themselves say what there is.
        catalog.indexFilesIfIndexWasUnreadable { MediaProbe.duration(of: $0) }
        let chunks = catalog.chunks(from: start, to: end)
        guard !chunks.isEmpty else {
            fail("no chunk in \(configuration.recording.storageDirectory) overlaps the range")
        }
        let archive = StoredChunks(catalog: catalog, tuning: configuration.tuning, logger: logger)
        let link = ServerLink(address: address, deviceName: configuration.device.name,
                              verifyTLS: configuration.server.verifyTLS,
                              reconnectDelay: configuration.server.reconnectDelaySeconds, recorder: archive,
                              announceChunks: false,
                              uploadOptions: .init(maxBytes: configuration.server.maxUploadBytes,
                                                   attempts: configuration.server.uploadAttempts),
                              bounds: configuration.server.bounds)
        var received = 0, failed = 0
        let loop = MainLoop()
        link.onUploadFinished = { _, ok in
            if ok { received += 1 } else { failed += 1 }
            if received + failed == chunks.count { loop.quit() }
        }
        var requested = false
        link.onStateChange { state in
            guard case .connected = state, !requested else { return }
            requested = true
            link.upload(from: start, to: end, reason: "upload command")
        }
        link.start()
        let interrupt = MainLoop.onSignal(SIGINT) { loop.quit() }
        let finishedInTime = loop.run(forAtMost: timeout)
        interrupt.cancel()
        link.stop()
        logger.notice("\(received) of \(chunks.count) chunk(s) received by \(address)\(failed > 0 ? ", \(failed) failed" : "")")
        if !finishedInTime, received + failed < chunks.count { fail("stopped before every chunk was sent") }
        if received < chunks.count { throw ExitCode(1) }
    }
}

/// The storage folder seen as a recorder that is not recording: uploads read
/// and pin its chunks; server settings are not applied here (only `run` does).
final class StoredChunks: RecorderControl {
    let catalog: ChunkCatalog
    let currentTuning: RecordingTuning
    private let logger: Logger

    init(catalog: ChunkCatalog, tuning: RecordingTuning, logger: Logger) {
        self.catalog = catalog
        currentTuning = tuning
        self.logger = logger
    }

    var isCapturing: Bool { false }
    func resumeIfWaiting() -> Bool { false }
    func retune(_ tuning: RecordingTuning) -> [String] {
        logger.info("the server's clientConfig applies to the running recorder, not to the upload command")
        return []
    }
}
