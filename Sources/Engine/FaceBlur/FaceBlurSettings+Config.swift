import RecorderCore

extension FaceBlurSettings {
    /// The stage settings a config's `[privacy]` table asks for, live
    /// (`offline: false`, the recorder) or for the `blur` command.
    public init(_ privacy: RecorderConfig.Privacy, offline: Bool = false) {
        self.init(modelPath: privacy.model, offline: offline)
        mode = Mode(rawValue: privacy.mode) ?? .pixelate
        threshold = Float(privacy.threshold)
        tracker.margin = privacy.margin
        tracker.holdNs = UInt64(privacy.holdMs) * 1_000_000
        if let n = privacy.detectWidth { detectWidth = n }
        if let n = privacy.wholeEvery { wholeEvery = n }
        if let n = privacy.tileEvery { tileEvery = n }
        if let n = privacy.tileScale {
            if offline { useOfflineTiles(scale: n) } else { tileScale = n }
        }
        followEvery = privacy.followEvery
        maxLatencyNs = UInt64(privacy.maxLatencyMs) * 1_000_000
        whenBehind = WhenBehind(rawValue: privacy.whenBehind) ?? .pixelate
        followNetwork = FaceNetwork(rawValue: privacy.followNetwork) ?? .centerFace
        yuNetThreshold = Float(privacy.yuNetThreshold)
        runtime = InferenceRuntime(rawValue: privacy.runtime) ?? .auto
        precision = SearchPrecision(rawValue: privacy.precision) ?? .auto
        if !offline { spareTileScale = privacy.spareTileScale }
        maxQueuedFrames = max(wholeEvery, tileEvery) + 16
    }
}
