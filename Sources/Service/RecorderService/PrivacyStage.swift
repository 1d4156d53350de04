import CoreMetrics
import FaceBlur
import Recorder
import RecorderCore

/// Builds the privacy stage the config asks for, refusing (fail closed)
/// when face blurring is on and no detector can run.
public enum PrivacyStage {
    public static func make(for config: RecorderConfig, realTime: Bool = true,
                            metrics: MetricsFactory = NOOPMetricsHandler.instance) throws -> FrameProcessor {
        guard config.privacy.faceBlur else { return PassThroughProcessor() }
        do {
            return try FaceBlurStage(settings: FaceBlurSettings(config.privacy, offline: !realTime), realTime: realTime,
                                     metrics: metrics)
        } catch {
            throw RecorderStartError("""
                privacy.face_blur = true, but faces cannot be detected: \(error) \
                (the model's path is from \(config.origin(of: "privacy.model"))). \
                Refusing to record rather than store faces. Fix that (scripts/setup installs the model), \
                or set privacy.face_blur = false in \(config.sourceFile) (--set privacy.face_blur=false) to record without blurring.
                """)
        }
    }
}
