import RecorderCore

extension FaceBlurSettings {
    /// The stage settings a config's `[privacy]` table asks for.
    public init(_ privacy: RecorderConfig.Privacy) {
        self.init(modelPath: privacy.model)
        mode = Mode(rawValue: privacy.mode) ?? .pixelate
        threshold = Float(privacy.threshold)
        tracker.margin = privacy.margin
        tracker.holdNs = UInt64(privacy.holdMs) * 1_000_000
        detectWidth = privacy.detectWidth
        tileEvery = privacy.tileEvery
        maxLatencyNs = UInt64(privacy.maxLatencyMs) * 1_000_000
        maxDetectionAgeNs = max(maxDetectionAgeNs, maxLatencyNs + 300_000_000)
    }
}
