import Recorder

// What the recorder's health report reads from the privacy stage (`PrivacyStageReporting`).
extension FaceBlurStage: PrivacyStageReporting {
    public var privacyCounts: PrivacyStageCounts {
        let c = counters, h = held
        return PrivacyStageCounts(frames: c.frames, late: c.late, dropped: c.dropped, blackedOut: c.blackedOut,
                                  unconfirmedArea: c.unconfirmedArea, heldFrames: h.frames,
                                  oldestHeldSeconds: Double(h.oldestWaitNs) / 1e9)
    }
}
