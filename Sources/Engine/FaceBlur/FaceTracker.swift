import Foundation

/// Remembers where faces were seen and answers "which regions must be
/// hidden in the frame captured at time t".
///
/// Detection runs on some frames only (and on parts of the frame: tiles,
/// or the surroundings of a face already followed), so a frame is usually
/// between two detections. A track's region covers a frame when the frame
/// lies within `hold` after the track was last seen or within `lookAhead`
/// before it was first seen. Between two sightings close in time the region
/// is both sightings united, with `margin` (the whole head, not the tight
/// box); before the first
/// and after the last sighting, the sighting and where the face's motion
/// leads, grown by `motion` face sizes per second since (see `region`).
/// Growth is always in face sizes: growing a united or extrapolated box by
/// its own size (the earlier rule) hid whole crowds around a few faces.
///
/// Observations may arrive out of time order (the offline stage searches
/// backwards from where a face was first found); each is kept in order.
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
        /// Sightings further apart than this are not interpolated: the region
        /// unites them and grows with the time to the nearer one.
        public var longGapNs: UInt64 = 500_000_000
        /// A face's velocity is measured over at least this long (sightings a
        /// frame apart differ by the detector's jitter as much as by motion).
        public var velocitySpanNs: UInt64 = 100_000_000
        /// How far beyond its first or last sighting a face's motion is followed.
        public var maxExtrapolationNs: UInt64 = 250_000_000
        /// Regions grown in face sizes only (`region(of:at:)`). Off: the
        /// earlier rule (`generousRegion`), which grows a box already united
        /// and extrapolated by its own size; on the crowd benchmark it hid
        /// about 12× the faces' area, and with it faces the detector never
        /// found beside those it did. Until detection finds those itself,
        /// the earlier rule stays the default.
        public var faceSizedRegions = false
        public init() {}
    }

    public struct Observation: Equatable { public var time: UInt64; public var rect: FaceRect }
    struct Track { var id: Int; var observations: [Observation] }

    public var settings: Settings
    private var tracks: [Track] = []
    private var nextID = 1

    public init(settings: Settings = Settings()) { self.settings = settings }

    public var trackCount: Int { tracks.count }
    public var trackIDs: [Int] { tracks.map(\.id) }

    /// A detection and the track it went to.
    public struct Assignment: Equatable { public var id: Int; public var isNew: Bool }

    /// Records a detection pass over (part of) the frame captured at `time`:
    /// each detection continues the track it matches or starts one.
    @discardableResult
    public mutating func update(detections: [FaceRect], time: UInt64) -> [Assignment] {
        detections.map { rect in
            if let index = bestMatch(for: rect, at: time) {
                insert(Observation(time: time, rect: rect), into: index)
                return Assignment(id: tracks[index].id, isNew: false)
            }
            tracks.append(Track(id: nextID, observations: [Observation(time: time, rect: rect)]))
            nextID += 1
            return Assignment(id: tracks[tracks.count - 1].id, isNew: true)
        }
    }

    /// Records that track `id` was seen at `rect` at `time` (a search around it found it).
    public mutating func add(_ rect: FaceRect, to id: Int, time: UInt64) {
        guard let index = tracks.firstIndex(where: { $0.id == id }) else { return }
        insert(Observation(time: time, rect: rect), into: index)
    }

    private mutating func insert(_ observation: Observation, into index: Int) {
        var list = tracks[index].observations
        let at = list.firstIndex { $0.time > observation.time } ?? list.count
        if at > 0, list[at - 1].time == observation.time {
            list[at - 1].rect = list[at - 1].rect.union(observation.rect)   // two passes saw it in one frame
        } else {
            list.insert(observation, at: at)
        }
        // Keep what can still matter: the first and the recent ones.
        if list.count > 96 { list.removeSubrange(1..<(list.count - 64)) }
        tracks[index].observations = list
    }

    /// The track this detection continues: of similar size (within 2×) and
    /// the nearest by centre distance to where the track is expected at that
    /// time, relative to the face size, below one face size. Overlap alone
    /// would hand a fast-moving face to a small neighbouring box and leave
    /// its own track behind.
    private func bestMatch(for rect: FaceRect, at time: UInt64) -> Int? {
        var best: (index: Int, distance: Double)?
        for (i, track) in tracks.enumerated() {
            guard let near = predicted(track.observations, at: time) else { continue }
            let distance = Self.distance(near, rect)
            if distance < 1, distance < (best?.distance ?? .infinity) { best = (i, distance) }
        }
        return best?.index
    }

    /// Centre distance relative to the larger box, or infinity when the sizes differ by more than 2×.
    static func distance(_ a: FaceRect, _ b: FaceRect) -> Double {
        let size = max(a.width, a.height, b.width, b.height)
        let ratio = max(a.height, b.height) / max(1, min(a.height, b.height))
        guard ratio <= 2 else { return .infinity }
        let dx = a.center.x - b.center.x, dy = a.center.y - b.center.y
        return (dx * dx + dy * dy).squareRoot() / max(1, size)
    }

    public func observations(of id: Int) -> [Observation] {
        tracks.first { $0.id == id }?.observations ?? []
    }

    /// Where track `id`'s face is expected at `time`: interpolated between
    /// the observations around it, or extrapolated from the two nearest ones
    /// (at most half a second's motion, size change within 0.7…1.4×).
    public func predicted(_ id: Int, at time: UInt64) -> FaceRect? {
        predicted(observations(of: id), at: time)
    }

    private func predicted(_ list: [Observation], at time: UInt64) -> FaceRect? {
        guard let first = list.first else { return nil }
        if list.count == 1 { return first.rect }
        let after = list.firstIndex { $0.time >= time }
        let (a, b): (Observation, Observation)
        if let after, after > 0 {
            (a, b) = (list[after - 1], list[after])
        } else if after == 0 {
            (a, b) = (list[1], list[0])
        } else {
            (a, b) = (list[list.count - 2], list[list.count - 1])
        }
        let span = Double(Int64(bitPattern: b.time &- a.time))
        guard span != 0 else { return b.rect }
        var f = Double(Int64(bitPattern: time &- a.time)) / span
        // Extrapolation: no further than half a second beyond b.
        let limit = 1 + 0.5e9 / abs(span)
        f = min(f, limit)
        let lerp = { (x: Double, y: Double) in x + (y - x) * f }
        let scale = min(1.4, max(0.7, lerp(a.rect.height, b.rect.height) / b.rect.height))
        let cx = lerp(a.rect.center.x, b.rect.center.x), cy = lerp(a.rect.center.y, b.rect.center.y)
        let w = f >= 0 && f <= 1 ? lerp(a.rect.width, b.rect.width) : b.rect.width * scale
        let h = f >= 0 && f <= 1 ? lerp(a.rect.height, b.rect.height) : b.rect.height * scale
        return FaceRect(x: cx - w / 2, y: cy - h / 2, width: w, height: h)
    }

    /// A track other than `id` observed within `within` of `time` at
    /// (IoU > 0.5) `rect`: that face is already someone's.
    public func owner(of rect: FaceRect, at time: UInt64, excluding id: Int, within: UInt64) -> Int? {
        tracks.first { track in
            track.id != id && track.observations.contains {
                (max($0.time, time) - min($0.time, time)) <= within && $0.rect.intersectionOverUnion(rect) > 0.5
            }
        }?.id
    }

    /// Whether tracks `a` and `b` agree wherever both were observed (each
    /// observation of one overlaps the other's interpolated box by IoU > 0.3):
    /// the same face, found twice. Tracks observed at different times only are not compared.
    public func agree(_ a: Int, _ b: Int) -> Bool {
        let (la, lb) = (observations(of: a), observations(of: b))
        guard let fb = lb.first?.time, let lastB = lb.last?.time else { return false }
        for o in la where o.time >= fb && o.time <= lastB {
            guard let e = predicted(lb, at: o.time), e.intersectionOverUnion(o.rect) > 0.3 else { return false }
        }
        return true
    }

    /// Folds track `other` into track `id` (the same face, found twice).
    public mutating func merge(_ other: Int, into id: Int) {
        guard other != id, let from = tracks.firstIndex(where: { $0.id == other }),
              tracks.contains(where: { $0.id == id }) else { return }
        let moved = tracks.remove(at: from).observations
        let into = tracks.firstIndex { $0.id == id }!
        for observation in moved { insert(observation, into: into) }
    }

    /// Forgets tracks last seen before `time - hold`; returns their ids.
    @discardableResult
    public mutating func prune(now time: UInt64) -> [Int] {
        let gone = tracks.filter { ($0.observations.last?.time ?? 0) + settings.holdNs < time }.map(\.id)
        tracks.removeAll { gone.contains($0.id) }
        return gone
    }

    /// Regions to hide in the frame captured at `time`.
    public func regions(at time: UInt64) -> [FaceRect] {
        regionsAndFaces(at: time).map(\.region)
    }

    /// The same, each with the face it stands for (the nearest sighting), for logs.
    public func regionsAndFaces(at time: UInt64) -> [(face: FaceRect, region: FaceRect)] {
        tracks.compactMap { settings.faceSizedRegions ? region(of: $0.observations, at: time) : generousRegion(of: $0.observations, at: time) }
    }

    /// The earlier rule: the nearest sightings before and after the frame
    /// united, before the first and after the last sighting also where the
    /// motion leads (at most half a second, from the last two sightings),
    /// the whole grown by `margin` plus `motion` of its own size per second
    /// to the nearest sighting.
    func generousRegion(of list: [Observation], at time: UInt64) -> (face: FaceRect, region: FaceRect)? {
        guard let first = list.first, let last = list.last else { return nil }
        if time + settings.lookAheadNs < first.time || time > last.time + settings.holdNs { return nil }
        let nearest = [list.last { $0.time <= time }, list.first { $0.time >= time }].compactMap { $0 }
        guard var base = nearest.first?.rect else { return nil }
        let face = nearest.min { a, b in
            (a.time > time ? a.time - time : time - a.time) < (b.time > time ? b.time - time : time - b.time)
        }!.rect
        for observation in nearest.dropFirst() { base = base.union(observation.rect) }
        if nearest.count == 1, list.count >= 2, let ahead = predicted(list, at: time) { base = base.union(ahead) }
        let distance = nearest.map { $0.time > time ? $0.time - time : time - $0.time }.min() ?? 0
        let grow = settings.margin + min(settings.maxMotionGrowth, settings.motion * Double(distance) / 1e9)
        return (face, base.expanded(by: grow))
    }

    /// A track's region at `time`: the face where its sightings put it, with
    /// `margin` (the whole head) around it, plus only what the sightings
    /// leave open:
    /// - between two sightings close in time, both of them united (the face
    ///   went from one to the other) with the margin; sightings further
    ///   apart than `longGap` say less: the united box also grows by the
    ///   face's motion over the gap;
    /// - before the first or after the last sighting, the sighting and where
    ///   the face's own motion leads (at most `maxExtrapolationNs`), grown
    ///   by `motion` face sizes per second since, at most `maxMotionGrowth`.
    /// All growth is measured in face sizes, never in the size of a united
    /// box (a box grown by its own size grows without end).
    func region(of list: [Observation], at time: UInt64) -> (face: FaceRect, region: FaceRect)? {
        guard let first = list.first, let last = list.last else { return nil }
        if time + settings.lookAheadNs < first.time || time > last.time + settings.holdNs { return nil }
        let after = list.firstIndex { $0.time >= time }
        if let after, list[after].time == time { return (list[after].rect, grown(list[after].rect, around: list[after].rect, by: settings.margin)) }
        if let after, after > 0 {
            let (a, b) = (list[after - 1], list[after])
            let gap = b.time - a.time
            let face = FaceRect(x: 0, y: 0, width: max(a.rect.width, b.rect.width), height: max(a.rect.height, b.rect.height))
            if gap > settings.longGapNs {
                let distance = min(time - a.time, b.time - time)
                let growth = settings.margin + min(settings.maxMotionGrowth, settings.motion * Double(distance) / 1e9)
                return (time - a.time < b.time - time ? a.rect : b.rect, grown(a.rect.union(b.rect), around: face, by: growth))
            }
            // Both sightings, united: the face went from one to the other (the follow searches come
            // often enough that it moves at most about half its size between them). An interpolated
            // box alone was tighter, but let faces through on the crowd benchmark where the camera's
            // estimated motion was off between sightings.
            let near = time - a.time < b.time - time ? a.rect : b.rect
            return (near, grown(a.rect.union(b.rect), around: face, by: settings.margin))
        }
        // Outside the sightings: the nearest one, and where the face's own motion leads.
        let near = after == 0 ? first : last
        let distance = near.time > time ? near.time - time : time - near.time
        var box = near.rect
        if let ahead = extrapolated(list, at: time) { box = box.union(ahead) }
        let growth = settings.margin + min(settings.maxMotionGrowth, settings.motion * Double(distance) / 1e9)
        return (near.rect, grown(box, around: near.rect, by: growth))
    }

    /// `box` grown on each side by `fraction` of `face`'s width and height.
    private func grown(_ box: FaceRect, around face: FaceRect, by fraction: Double) -> FaceRect {
        let gx = face.width * fraction, gy = face.height * fraction
        return FaceRect(x: box.x - gx, y: box.y - gy, width: box.width + 2 * gx, height: box.height + 2 * gy)
    }

    /// Where the face is expected at `time` before its first or after its
    /// last sighting: its velocity between the outermost sighting and the
    /// first one at least `velocitySpanNs` from it (sightings a frame apart
    /// differ by the detector's jitter more than by motion), carried at
    /// most `maxExtrapolationNs`; the size stays. Nil with one sighting.
    private func extrapolated(_ list: [Observation], at time: UInt64) -> FaceRect? {
        guard list.count >= 2, let first = list.first, let last = list.last else { return nil }
        let forward = time > last.time
        let end = forward ? last : first
        let other = forward ? (list.last { end.time - $0.time >= settings.velocitySpanNs } ?? list[list.count - 2])
                            : (list.first { $0.time - end.time >= settings.velocitySpanNs } ?? list[1])
        let span = Double(Int64(bitPattern: end.time &- other.time))
        guard span != 0 else { return nil }
        let ahead = Double(min(forward ? time - end.time : end.time - time, settings.maxExtrapolationNs)) * (forward ? 1 : -1)
        let k = ahead / span
        let dx = (end.rect.center.x - other.rect.center.x) * k, dy = (end.rect.center.y - other.rect.center.y) * k
        return FaceRect(x: end.rect.x + dx, y: end.rect.y + dy, width: end.rect.width, height: end.rect.height)
    }
}
