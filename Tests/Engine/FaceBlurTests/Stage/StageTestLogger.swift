import Foundation
import Logging

/// Whether the face-blur tests trace the stage (`ALLSPARK_DEBUG_CLIPS=1`, docs/tests.md).
let tracingClips = ProcessInfo.processInfo.environment["ALLSPARK_DEBUG_CLIPS"] != nil

/// The stage's logger in tests: with `ALLSPARK_DEBUG_CLIPS` set, at trace level (every searched
/// region with what it found, every frame's hidden regions with the rule behind each), so that a
/// face a test finds can be traced to its rule.
func stageTestLogger() -> Logger {
    var logger = Logger(label: "test.faceblur")
    if tracingClips { logger.logLevel = .trace }
    return logger
}
