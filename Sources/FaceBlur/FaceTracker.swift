import Foundation

/// Remembers where faces were seen and answers "which regions must be
/// hidden in the frame captured at time t".
///
/// Detection runs on some frames only (and on parts of the frame, in
/// tiles), so a frame is usually between two detections. A track's region
/// covers a frame when the frame lies within `hold` after the track was
/// last seen or within `lookAhead` before it was first seen. The region
/// is the union of the nearest observations before and after the frame,
/// grown by `margin` (the whole head, not the tight box) and by `motion`
/// box-sizes per second of distance to the nearest observation, so a face
/// that moved between detections stays covered.
///
/// Pure value logic; the stage guards it with its lock.
public struct FaceTracker {
    public struct Settings: Equatable, Sendable {
        /// Fraction of the box added on each side.
        public var margin: Double = 0.3
        /// Growth per second of distance to the nearest observation, in box sizes.
        public var motion: Double = 1.5
        /// The most motion growth adds (a face lost for the whole hold is
        /// not chased across the picture).
        public var maxMotionGrowth: Double = 0.5
        /// How long a face stays covered after it was last seen.
        public var holdNs: UInt64 = 1_000_000_000
        /// How long before it was first seen a face is covered (the delay line's length is enough).
        public var lookAheadNs: UInt64 = 500_000_000
        public init() {}
    }

    struct Observation { var time: UInt64; var rect: FaceRect }
    struct Track { var observations: [Observation] }

    public var settings: Settings
    private var tracks: [Track] = []

    public init(settings: Settings = Settings()) { self.settings = settings }

    public var trackCount: Int { tracks.count }

    /// Records a detection pass over `region` of the frame captured at `time`.
    public mutating func update(detections: [FaceRect], time: UInt64) {
        for rect in detections {
            if let index = bestMatch(for: rect) {
                tracks[index].observations.append(Observation(time: time, rect: rect))
                tracks[index].observations.sort { $0.time < $1.time }
                // Keep what can still matter: the first and the recent ones.
                if tracks[index].observations.count > 64 {
                    tracks[index].observations.removeSubrange(1..<(tracks[index].observations.count - 32))
                }
            } else {
                tracks.append(Track(observations: [Observation(time: time, rect: rect)]))
            }
        }
    }

    /// The track this detection continues: of similar size (within 2×) and
    /// the nearest by centre distance, relative to the face size, below one
    /// face size. Overlap alone would hand a fast-moving face to a small
    /// neighbouring box and leave its own track behind.
    private func bestMatch(for rect: FaceRect) -> Int? {
        var best: (index: Int, distance: Double)?
        for (i, track) in tracks.enumerated() {
            guard let last = track.observations.last?.rect else { continue }
            let size = max(last.width, last.height, rect.width, rect.height)
            let ratio = max(last.height, rect.height) / max(1, min(last.height, rect.height))
            guard ratio <= 2 else { continue }
            let dx = last.center.x - rect.center.x, dy = last.center.y - rect.center.y
            let distance = (dx * dx + dy * dy).squareRoot() / size
            if distance < 1, distance < (best?.distance ?? .infinity) { best = (i, distance) }
        }
        return best?.index
    }

    /// Forgets tracks last seen before `time - hold`.
    public mutating func prune(now time: UInt64) {
        tracks.removeAll { ($0.observations.last?.time ?? 0) + settings.holdNs < time }
    }

    /// Regions to hide in the frame captured at `time`.
    public func regions(at time: UInt64) -> [FaceRect] {
        tracks.compactMap { track -> FaceRect? in
            guard let first = track.observations.first, let last = track.observations.last else { return nil }
            if time + settings.lookAheadNs < first.time || time > last.time + settings.holdNs { return nil }
            let nearest = [track.observations.last { $0.time <= time }, track.observations.first { $0.time >= time }]
                .compactMap { $0 }
            guard var base = nearest.first?.rect else { return nil }
            for observation in nearest.dropFirst() { base = base.union(observation.rect) }
            let distance = nearest.map { $0.time > time ? $0.time - time : time - $0.time }.min() ?? 0
            let grow = settings.margin + min(settings.maxMotionGrowth, settings.motion * Double(distance) / 1e9)
            return base.expanded(by: grow)
        }
    }
}
