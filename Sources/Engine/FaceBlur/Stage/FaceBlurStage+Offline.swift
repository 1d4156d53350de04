import CoreMetrics
import FaceDetectorSupport
import Foundation
import GStreamerSupport
import Logging
import Recorder

/// Offline: the streaming thread plans every search and applies every outcome, in an order
/// fixed by the file, so that a file is blurred the same way every time.
extension FaceBlurStage {
    /// Offline: passes planned ahead per detection thread, so that a thread
    /// done with a short follow finds the next passes waiting while another
    /// runs a tile: as fast as recording passes in the order they finished.
    static let planAheadPerWorker = 8
    /// Offline: frames taken in after a pass was planned by which its
    /// outcome is applied. Applied only when the oldest frame waited, a
    /// face's follows (each planned from the last one's outcome) fell
    /// behind while the decoder filled the delay line, and a big face leaving
    /// was next searched for many frames after its last sighting; with a lag
    /// of one frame the decoder waits on every pass. Two frames is the
    /// shortest lag at which neither happens.
    static let applyLag = 2

    /// Streaming thread, under the lock, offline: plans the passes due, up
    /// to `planAheadPerWorker` per detection thread outstanding.
    ///
    /// Offline, the result must not depend on which thread finishes first
    /// (a thread recording what it found as it finished, and planning from
    /// whatever had been recorded and decoded by then, would place different
    /// regions on two runs). So the streaming thread plans every pass and
    /// applies every outcome, in the
    /// order planned (`applyNextOutcome`), and only at points fixed by the
    /// file: on taking in a frame, the passes planned `applyLag` frames
    /// before or earlier; and while the oldest frame waits.
    /// The detection threads only run the networks. The same file is
    /// blurred the same way every time.
    func planAhead() {
        let most = max(1, settings.workers) * Self.planAheadPerWorker
        while order.unapplied.count < most, failure == nil, let pass = planner?.nextPass() {
            switch copyRegion(for: pass) {
            case .job(let job):
                planner?.begin(pass)
                order.plan(job, frame: nextIndex - 1)
                condition.broadcast()
            case .outsidePicture:
                // No picture to search: nothing is there (see `detectionLoop`).
                planner?.record(pass, found: [])
            case .failed:
                return   // `fail` ended detection
            }
        }
    }

    /// Streaming thread, under the lock, offline: waits for the outcome of
    /// the oldest pass not yet applied, and applies it; false when there is
    /// none, or detection failed or stopped first.
    @discardableResult
    func applyNextOutcome() -> Bool {
        guard order.isNextDelivered != nil else { return false }
        while order.isNextDelivered == false, failure == nil, !stopping { condition.wait() }
        guard failure == nil, let outcome = order.takeNext() else { return false }
        apply(outcome)
        return true
    }
}
