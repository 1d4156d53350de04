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

    func run() throws {
        common.bootstrapLogging()
        let logger = Logger(label: "allspark.run")
        let configuration: RecorderConfig
        do {
            configuration = try ConfigLoader.load(file: config, overrides: common.overrides)
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
        do {
            try recorder.start()
        } catch {
            fail("\(error)")
        }
        FileHandle.standardError.write(Data("Recording to \(configuration.recording.storageDirectory) — press Ctrl-C to stop.\n".utf8))
        let link = makeServerLink(configuration, recorder: recorder, logger: logger)
        link?.start()

        let shutdown = { (reason: String) in
            logger.notice("\(reason): finishing the current chunk")
            link?.stop()
            recorder.stop { loop.quit() }
        }
        // Keep the signal sources alive for the life of the loop.
        let sources = [
            MainLoop.onSignal(SIGINT) { shutdown("interrupted") },
            MainLoop.onSignal(SIGTERM) { shutdown("terminated") },
            MainLoop.onSignal(SIGHUP) {
                logger.notice("SIGHUP: re-reading \(config)")
                do {
                    recorder.reload(try ConfigLoader.load(file: config, overrides: common.overrides))
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
        if exitCode != 0 { throw ExitCode(exitCode) }
    }
}

/// The AllSpark server connection, when a host is configured.
func makeServerLink(_ config: RecorderConfig, recorder: Recorder, logger: Logger) -> ServerLink? {
    guard !config.server.host.isEmpty else {
        if config.server.discovery {
            logger.notice("no server.host set; server discovery (Avahi) is not in this build yet, so the recorder runs without a server")
        }
        return nil
    }
    do {
        let address = try ServerAddress(parsing: config.server.host)
        return ServerLink(address: address, deviceName: config.device.name, verifyTLS: config.server.verifyTLS,
                          reconnectDelay: config.server.reconnectDelaySeconds, recorder: recorder)
    } catch {
        logger.error("\(config.sourceFile): \(error); running without a server")
        return nil
    }
}

extension Recorder: RecorderControl {}

/// Builds the privacy stage the config asks for, refusing (fail closed)
/// when face blurring is on and no detector can run.
enum PrivacyStage {
    static func make(for config: RecorderConfig, realTime: Bool = true) throws -> FrameProcessor {
        guard config.privacy.faceBlur else { return PassThroughProcessor() }
        do {
            return try FaceBlurStage(settings: FaceBlurSettings(config.privacy), realTime: realTime)
        } catch {
            throw RecorderStartError("""
                privacy.face_blur = true, but faces cannot be detected: \(error). \
                Refusing to record rather than store faces. Fix that (scripts/setup installs the model), \
                or set privacy.face_blur = false in \(config.sourceFile) (--set privacy.face_blur=false) to record without blurring.
                """)
        }
    }
}
