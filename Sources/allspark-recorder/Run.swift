import AllSparkProtocol
import ArgumentParser
import FaceBlur
import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import Recorder
import RecorderCore
import ServerLink

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record continuously until Ctrl-C / SIGTERM (the current chunk is finished first).",
        discussion: """
            SIGHUP re-reads the config file: chunk length, container and buffer size change at the
            next chunk without stopping capture; a changed pipeline restarts it after the current chunk.
            """)

    @Option(help: "The config file (TOML), e.g. config/demo.toml.")
    var config: String

    @Option(help: "Stop after this many seconds instead of running until a signal.")
    var duration: Double?

    @OptionGroup var common: CommonOptions

    /// The config file, with the values the server last set laid over it
    /// (kept in the storage folder; the file itself is never rewritten).
    private func loadWithServerSettings(logger: Logger) throws -> RecorderConfig {
        let fromFile = try ConfigLoader.load(file: config, overrides: common.overrides)
        let store = ServerSettingsStore(storageDirectory: fromFile.recording.storageDirectory)
        guard let saved = store.load() else { return fromFile }
        let merged = store.applied(to: fromFile)
        if merged.tuning != fromFile.tuning {
            logger.notice("using the settings server \(saved.server) sent (\(merged.tuning.videoFormat.rawValue), \(merged.tuning.chunkDurationMs) ms chunks, \(merged.tuning.bufferMaxMB) MB buffer) over \(config); delete \(store.url.path) to go back to the file's")
        }
        return merged
    }

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.run")
        let configuration: RecorderConfig
        do {
            configuration = try loadWithServerSettings(logger: logger)
        } catch {
            fail("\(error)")
        }
        if !configuration.privacy.faceBlur {
            logger.warning("privacy.face_blur = false: faces are recorded unblurred")
        }
        let recorder: Recorder
        do {
            recorder = try Recorder(config: configuration, makeProcessor: { try PrivacyStage.make(for: $0) })
        } catch {
            fail("\(error)")
        }
        let loop = MainLoop()
        var exitCode: Int32 = 0
        // Only frames reaching the chunks count as recording: until then the
        // user is told that the recorder waits for the source.
        var said = ""
        let say = { (text: String) in
            guard text != said else { return }
            said = text
            FileHandle.standardError.write(Data("\(text)\n".utf8))
        }
        recorder.onStateChange = { state in
            switch state {
            case .recording:
                say("Recording to \(configuration.recording.storageDirectory) — press Ctrl-C to stop.")
            case .waitingForSource, .waitingToRetry:
                if said.isEmpty { say("Waiting for the source (\(configuration.recording.pipeline)) — press Ctrl-C to stop.") }
            case .stopped, .stopping:
                break
            }
        }
        do {
            try recorder.start()
        } catch {
            fail("\(error)")
        }
        let link = makeServerLink(configuration, recorder: recorder, logger: logger)
        link?.start()
        let discovery = startDiscovery(configuration, link: link)

        let shutdown = { (reason: String) in
            logger.notice("\(reason): finishing the current chunk")
            discovery?.stop()
            // The link stays up until the last chunk is finished, so that it is announced too.
            recorder.stop {
                link?.recordingEnded()
                link?.stop()
                loop.quit()
            }
        }
        // Keep the signal sources alive for the life of the loop.
        let sources = [
            MainLoop.onSignal(SIGINT) { shutdown("interrupted") },
            MainLoop.onSignal(SIGTERM) { shutdown("terminated") },
            MainLoop.onSignal(SIGHUP) {
                logger.notice("SIGHUP: re-reading \(config)")
                do {
                    let reloaded = try loadWithServerSettings(logger: logger)
                    if reloaded.server != configuration.server || reloaded.device != configuration.device {
                        logger.warning("SIGHUP: [server] and [device] changes take effect at the next start, not now")
                    }
                    recorder.reload(reloaded)
                } catch {
                    logger.error("reload refused, keeping the running settings: \(error)")
                }
            },
        ]
        if let duration {
            MainLoop.after(duration) { shutdown("--duration \(duration) s reached") }
        }
        loop.run()
        _ = sources
        let stats = recorder.frameStatistics
        logger.notice("stopped: \(stats.captured) frames captured, \(stats.recorded) recorded; \(recorder.catalog.all.count) chunks in \(configuration.recording.storageDirectory)")
        if recorder.state != .stopped { exitCode = 1 }
        // A timed run is a check that recording works: nothing recorded is a failure, with the reason.
        if let duration, recorder.chunksRecorded == 0 {
            let reason = recorder.lastProblem ?? "no frame reached the chunks (waiting for the source)"
            logger.error("recorded nothing in \(String(format: "%g", duration)) s: \(reason)")
            exitCode = 1
        }
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}

/// The AllSpark server connection: to the configured host, or (host empty,
/// discovery on) idle until discovery names a server. Nil when there is no
/// server to talk to. Finished chunks are announced and offered for upload.
func makeServerLink(_ config: RecorderConfig, recorder: Recorder, logger: Logger) -> ServerLink? {
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
    let link = ServerLink(
        address: address, deviceName: config.device.name, verifyTLS: config.server.verifyTLS,
        reconnectDelay: config.server.reconnectDelaySeconds, recorder: recorder,
        announceChunks: config.server.announceChunks,
        uploadOptions: .init(maxBytes: config.server.maxUploadBytes, attempts: config.server.uploadAttempts),
        bounds: config.server.bounds,
        settingsStore: ServerSettingsStore(storageDirectory: config.recording.storageDirectory))
    // The camera is named after its pipeline description (e.g. "v4l2" for pipelines/v4l2.pipeline).
    let camera = ((config.recording.pipeline as NSString).lastPathComponent as NSString).deletingPathExtension
    recorder.onChunkFinished = { [weak link] chunk in
        link?.chunkFinished(chunk.record, fps: chunk.framesPerSecond, width: chunk.width, height: chunk.height, camera: camera)
    }
    return link
}

extension Recorder: RecorderControl {}

/// Builds the privacy stage the config asks for, refusing (fail closed)
/// when face blurring is on and no detector can run.
enum PrivacyStage {
    static func make(for config: RecorderConfig, realTime: Bool = true) throws -> FrameProcessor {
        guard config.privacy.faceBlur else { return PassThroughProcessor() }
        do {
            return try FaceBlurStage(settings: FaceBlurSettings(config.privacy, offline: !realTime), realTime: realTime)
        } catch {
            throw RecorderStartError("""
                privacy.face_blur = true, but faces cannot be detected: \(error). \
                Refusing to record rather than store faces. Fix that (scripts/setup installs the model), \
                or set privacy.face_blur = false in \(config.sourceFile) (--set privacy.face_blur=false) to record without blurring.
                """)
        }
    }
}
