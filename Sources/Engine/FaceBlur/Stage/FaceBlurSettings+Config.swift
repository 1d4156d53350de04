import RecorderCore

extension FaceBlurSettings {
    /// The stage settings a config's `[privacy]` table asks for, live
    /// (`offline: false`, the recorder) or for the `blur` command.
    public init(_ privacy: RecorderConfig.Privacy, offline: Bool = false) {
        self.init(modelPath: privacy.model, offline: offline)
        mode = Mode(rawValue: privacy.mode) ?? .pixelate
        tuning.searches.threshold = Float(privacy.threshold)
        tuning.tracking.margin = privacy.margin
        tuning.tracking.holdNs = UInt64(privacy.holdMs) * 1_000_000
        if let n = privacy.detectWidth { tuning.searches.wholeWidth = n }
        if let n = privacy.wholeEvery { tuning.searches.wholeEvery = n }
        if let n = privacy.tileEvery { tuning.searches.tileEvery = n }
        if let n = privacy.tileScale {
            if offline { tuning.searches.useOfflineTiles(scale: n) } else { tuning.searches.tileScale = n }
        }
        tuning.searches.followEvery = privacy.followEvery
        maxLatencyNs = UInt64(privacy.maxLatencyMs) * 1_000_000
        whenBehind = WhenBehind(rawValue: privacy.whenBehind) ?? .pixelate
        followNetwork = FaceNetwork(rawValue: privacy.followNetwork) ?? .centerFace
        tuning.searches.yuNetThreshold = Float(privacy.yuNetThreshold)
        runtime = InferenceRuntime(rawValue: privacy.runtime) ?? .auto
        precision = SearchPrecision(rawValue: privacy.precision) ?? .auto
        if !offline { tuning.searches.spareTileScale = privacy.spareTileScale }
        tuning.searches.maxQueuedFrames = max(tuning.searches.wholeEvery, tuning.searches.tileEvery) + 16
    }
}
