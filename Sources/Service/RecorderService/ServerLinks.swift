import Foundation
import GLibSupport
import AllSparkProtocol
import Logging
import Recorder
import RecorderCore
import ServerLink

/// Server links built from the config, for the service and for the one-off `upload`.
enum ServerLinks {
    /// The link of a running recorder: to the configured host, or (host
    /// empty, discovery on) idle until discovery names a server. Nil when
    /// there is no server to talk to. Finished chunks are announced and offered for upload.
    /// The server's clientConfig goes to `settings`, the service's one settings path.
    static func forRecording(_ config: RecorderConfig, recorder: Recorder, settings: SettingsKeeper, clock: LoopClock,
                             logger: Logger) -> ServerLink? {
        var address: ServerAddress?
        if config.server.host.isEmpty {
            guard config.server.discovery else {
                logger.notice("no server.host and server.discovery = false: recording without a server")
                return nil
            }
        } else {
            do {
                address = try ServerAddress(parsing: config.server.host)
            } catch {
                logger.error("\(config.sourceFile): \(error); running without a server")
                return nil
            }
        }
        // The camera is the device: chunkSaved names it as clientInfo does (the name the server files uploads by).
        let camera = DeviceName.resolve(config.device, storageDirectory: config.recording.storageDirectory, logger: logger)
        let link = make(config, address: address, control: recorder, announceChunks: config.server.announceChunks,
                        settings: settings,
                        deviceName: camera, clock: clock, logger: logger)
        // The policy is always logged; with server.enforce_communications_policy radios it forbids are blocked.
        let policy = CommunicationsPolicyEnforcer(enforce: config.server.enforceCommunicationsPolicy, logger: logger) { [weak link] in
            link?.localAddress.flatMap(NetworkMedium.interface(holding:)).flatMap { NetworkMedium.of(interface: $0) }
        }
        link.onCommunicationsPolicy = { policy.apply($0) }
        recorder.onChunkFinished = { [weak link] chunk in
            link?.chunkFinished(chunk.record, fps: chunk.framesPerSecond, width: chunk.width, height: chunk.height, camera: camera)
        }
        return link
    }

    static func make(_ config: RecorderConfig, address: ServerAddress?, control: RecorderControl,
                     announceChunks: Bool, settings: SettingsKeeper?, deviceName: String? = nil,
                     clock: LoopClock = MainLoopClock.shared, logger: Logger) -> ServerLink {
        ServerLink(
            address: address,
            deviceName: deviceName
                ?? DeviceName.resolve(config.device, storageDirectory: config.recording.storageDirectory, logger: logger),
            verifyTLS: config.server.verifyTLS,
            reconnectDelay: config.server.reconnectDelaySeconds, recorder: control,
            announceChunks: announceChunks,
            uploadOptions: .init(maxBytes: config.server.maxUploadBytes, attempts: config.server.uploadAttempts,
                                 maxBytesPerSecond: ServerLink.UploadOptions.bytesPerSecond(kbps: config.server.maxUploadKbps),
                                 acceptAutomaticRequests: config.server.acceptAutoUploads,
                                 fileNames: config.server.fileNames),
            bounds: config.server.bounds,
            settings: settings, clock: clock)
    }
}

/// The storage folder seen as a recorder that is not recording: uploads read
/// and pin its chunks; server settings are not applied here (only `run` does: the link gets no settings path).
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
}
