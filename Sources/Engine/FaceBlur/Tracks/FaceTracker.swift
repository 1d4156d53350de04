import Foundation

/// Remembers where faces were seen and answers "which regions must be
/// hidden in the frame captured at time t".
///
/// Detection runs on some frames only (and on parts of the frame: tiles,
/// or the surroundings of a face already followed), so a frame is usually
/// between two detections. A track's region covers a frame when the frame
/// lies within `hold` after the track was last seen or within `lookAhead`
/// before it was first seen (and searches have not given up on the face
/// there: `markGone`). The region is where the line between the
/// nearest observations before and after the frame puts the face (their union
/// when their sizes differ, one may be a partial box, or when the camera moved
/// between them), grown by `margin` (the whole
/// head, not the tight box) and by `motion` box sizes per second of
/// distance to the nearest observation, so a face that moved between
/// detections stays covered. Before the first and after the last sighting
/// the region also takes in where the face's motion leads (straight-line,
/// at most half a second), so a face entering the picture fast is covered
/// on the frames before it was first found. The growth is measured in the
/// face's own size rather than the united box's: two sightings far apart
/// would otherwise grow the region by a share of the whole stretch between them.
///
/// Observations may arrive out of time order (the offline stage searches
/// backwards from where a face was first found); each is kept in order.
///
/// Pure value logic; the stage guards it with its lock.
public struct FaceTracker {
    public struct Observation: Equatable { public var time: UInt64; public var rect: FaceRect }
    struct Track {
        var id: Int
        var observations: [Observation]
        /// Searches that looked for the face where it was expected and did
        /// not find it, time after time: after its last sighting (a follow
        /// gave up at `goneAfter`) or before its first (a trace back gave up
        /// at `goneBefore`). The face is not there from then on (back): it
        /// was hidden behind something, or it left.
        var goneAfter: UInt64?
        var goneBefore: UInt64?
        /// How long after its last sighting the camera kept the face out of the picture: time its
        /// hold does not count (`holdWhileOutOfSight`).
        var heldOutOfSightNs: UInt64 = 0
        /// The searches for the face ahead and behind its sightings (nil until the planner follows it).
        var follow: Follow?

        /// When the searches gave up on the face, if they had by `time` (going forward from its
        /// sightings) or not yet (going back): nil while the face may be there. The marks lie
        /// beyond the sightings (`markGone`, `insert`), so `time` then lies beyond them too.
        func goneMark(at time: UInt64) -> UInt64? {
            if let after = goneAfter, time >= after { return after }
            if let before = goneBefore, time <= before { return before }
            return nil
        }
    }

    public var settings: PrivacyTuning.Tracking
    private var tracks: [Track] = []
    private var nextID = 1
    /// Capture times of the recent frames on which the camera moved (`noteCamera`): a face's motion
    /// through the scene is its own only while the camera stands still. Kept for `cameraMemoryNs`.
    private var cameraMovedAt: [UInt64] = []
    private var latestCameraNote: UInt64 = 0
    /// Longer than the widest stretch `steadyMotion` reads plus the longest hold (with the time
    /// out of sight) and the look-ahead.
    static let cameraMemoryNs: UInt64 = 6_000_000_000

    public init(settings: PrivacyTuning.Tracking = PrivacyTuning.Tracking()) { self.settings = settings }

    public var trackCount: Int { tracks.count }
    public var trackIDs: [Int] { tracks.map(\.id) }

    /// A detection and the track it went to.
    public struct Assignment: Equatable { public var id: Int; public var isNew: Bool }

    /// Records a detection pass over (part of) the frame captured at `time`:
    /// each detection continues the track it matches or starts one. A track
    /// matches a detection of similar size (within 2×) whose centre is less
    /// than one face size from where the track is expected at that time
    /// (overlap alone would hand a fast-moving face to a small neighbouring
    /// box and leave its own track behind). One pass sees a face once, so a
    /// track takes at most one of its detections, the nearest first; and a
    /// track already seen on this frame by another pass takes only a
    /// detection that overlaps that sighting. (Two boxes given to one track
    /// are united: a walker passing just below a standing face, found beside
    /// it and taken for it, would steer the united box and hide a growing
    /// stretch of the picture.)
    @discardableResult
    public mutating func update(detections: [FaceRect], time: UInt64) -> [Assignment] {
        // Each track's expected face, and its sighting on this frame by another pass (if any). A
        // track held past `holdNs` only because the camera kept it out of sight takes no detection:
        // it hides where the face may be, no more. (Expected where its last sightings' motion led,
        // it could take a face coming in at the edge long after its own had left through it, and
        // the region between the two sightings would hide a strip of the picture.)
        let expected = tracks.map { track in
            let pastHold = plainHoldEnd(track) < time
            return (near: pastHold ? nil : predicted(track.observations, at: time), seen: track.observations.first { $0.time == time }?.rect)
        }
        var candidates: [(detection: Int, track: Int, distance: Double)] = []
        for (d, rect) in detections.enumerated() {
            for (t, track) in expected.enumerated() {
                guard let near = track.near else { continue }
                let distance = Self.distance(near, rect)
                guard distance < 1, track.seen.map({ $0.intersection(rect) != nil }) ?? true else { continue }
                candidates.append((d, t, distance))
            }
        }
        var trackOf = [Int?](repeating: nil, count: detections.count)
        var taken = Set<Int>()
        for candidate in candidates.sorted(by: { $0.distance < $1.distance })
        where trackOf[candidate.detection] == nil && !taken.contains(candidate.track) {
            trackOf[candidate.detection] = candidate.track
            taken.insert(candidate.track)
        }
        // New tracks are appended: the matched tracks' indices hold.
        return zip(detections, trackOf).map { rect, index in
            if let index {
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
        // A new last sighting: the hold starts again from it.
        if list.last?.time != tracks[index].observations.last?.time { tracks[index].heldOutOfSightNs = 0 }
        tracks[index].observations = list
        // Seen again: it was not gone after all.
        if let gone = tracks[index].goneAfter, observation.time >= gone { tracks[index].goneAfter = nil }
        if let gone = tracks[index].goneBefore, observation.time <= gone { tracks[index].goneBefore = nil }
    }

    /// Searches gave up looking for track `id`'s face at `time`, after its
    /// last sighting (`afterLastSighting`) or before its first (a trace back).
    mutating func markGone(_ id: Int, at time: UInt64, afterLastSighting: Bool) {
        guard let index = tracks.firstIndex(where: { $0.id == id }),
              let first = tracks[index].observations.first, let last = tracks[index].observations.last else { return }
        if afterLastSighting, time > last.time {
            tracks[index].goneAfter = min(tracks[index].goneAfter ?? .max, time)
        } else if !afterLastSighting, time < first.time {
            tracks[index].goneBefore = max(tracks[index].goneBefore ?? 0, time)
        }
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
            // Before the first sighting or after the last: the motion from a sighting far enough from
            // that one. The two nearest may be a frame apart, where a few pixels of the detector's
            // jitter, carried half a second on, moved the expected face far enough for a passer-by to
            // be taken for it.
            (a, b) = (motionPartner(list, fromFirst: true) ?? list[1], list[0])
        } else {
            (a, b) = (motionPartner(list, fromFirst: false) ?? list[list.count - 2], list[list.count - 1])
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

    /// A track other than `id`, not searched for and gone by `time`, whose face is expected at `time`
    /// nearer `rect` (`distance`) than `limit`: the face found is more likely that one.
    public func expectsNearer(_ rect: FaceRect, at time: UInt64, than limit: Double, excluding id: Int) -> Int? {
        var best: (id: Int, distance: Double)?
        for track in tracks where track.id != id && track.goneMark(at: time) == nil {
            guard let expected = predicted(track.observations, at: time) else { continue }
            let d = Self.distance(expected, rect)
            if d < limit, d < best?.distance ?? .infinity { best = (track.id, d) }
        }
        return best?.id
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

    /// Folds track `other` into track `id` (the same face, found twice), on a search of the frame
    /// captured at `time`: its sightings, what searches learnt beyond them, and its follow (a face
    /// lost by one track and followed by the other is followed, `followMisses` misses in).
    mutating func merge(_ other: Int, into id: Int, at time: UInt64, followMisses: Int) {
        guard other != id, let from = tracks.firstIndex(where: { $0.id == other }),
              tracks.contains(where: { $0.id == id }) else { return }
        let folded = tracks.remove(at: from)
        let into = tracks.firstIndex { $0.id == id }!
        let mine = tracks[into]
        for observation in folded.observations { insert(observation, into: into) }
        // What the searches learnt beyond the face's sightings holds for the merged track only at
        // the end the mark's own track is at: a trace back that gave up before the earliest
        // sighting, a follow that gave up after the latest. A mark from the other end lay between
        // sightings of the face: hide the whole again. (Both cleared, a face rising through the
        // bottom edge, found twice, would be hidden to the edge with a growing region on the
        // frames before the trace back had given up on it.)
        func earlier(_ a: Track, _ b: Track) -> Bool { (a.observations.first?.time ?? .max) < (b.observations.first?.time ?? .max) }
        func later(_ a: Track, _ b: Track) -> Bool { (a.observations.last?.time ?? 0) > (b.observations.last?.time ?? 0) }
        tracks[into].goneBefore = earlier(folded, mine) ? folded.goneBefore : earlier(mine, folded) ? mine.goneBefore : nil
        tracks[into].goneAfter = later(folded, mine) ? folded.goneAfter : later(mine, folded) ? mine.goneAfter : nil
        tracks[into].heldOutOfSightNs = later(folded, mine) ? folded.heldOutOfSightNs : mine.heldOutOfSightNs
        if let theirs = folded.follow, tracks[into].follow != nil {
            let otherIsEarlier = (folded.observations.first?.time ?? .max) < time
            tracks[into].follow!.absorb(theirs, otherIsEarlier: otherIsEarlier, giveUpAfter: followMisses)
        }
    }

    // MARK: Follows

    /// Track `id`'s follow, if it has one.
    func follow(of id: Int) -> Follow? { tracks.first { $0.id == id }?.follow }

    /// Starts or replaces track `id`'s follow.
    mutating func setFollow(_ follow: Follow, of id: Int) {
        guard let t = tracks.firstIndex(where: { $0.id == id }) else { return }
        tracks[t].follow = follow
    }

    /// The followed tracks, in the order of their ids.
    var follows: [(id: Int, follow: Follow)] {
        tracks.compactMap { t in t.follow.map { (t.id, $0) } }.sorted { $0.id < $1.id }
    }

    /// Whether any followed face satisfies `predicate` (no list made).
    func anyFollow(_ predicate: (Follow) -> Bool) -> Bool { tracks.contains { $0.follow.map(predicate) ?? false } }

    /// Frames through `oldest` left the delay line: no trace goes below the oldest frame held.
    mutating func framesLeft(through oldest: Int) {
        for t in tracks.indices { tracks[t].follow?.framesLeft(through: oldest) }
    }

    /// Carries every sighting through `transform` (the scene's coordinates changed).
    mutating func transform(by transform: Similarity) {
        for t in tracks.indices {
            for o in tracks[t].observations.indices { tracks[t].observations[o].rect = transform.apply(tracks[t].observations[o].rect) }
        }
    }

    /// Records whether the camera moved on the frame captured at `time` (frames in time order).
    mutating func noteCamera(moving: Bool, at time: UInt64) {
        latestCameraNote = max(latestCameraNote, time)
        if moving { cameraMovedAt.append(time) }
        if let first = cameraMovedAt.first, first + Self.cameraMemoryNs < latestCameraNote {
            cameraMovedAt.removeAll { $0 + Self.cameraMemoryNs < latestCameraNote }
        }
    }

    /// Whether the camera stood still on every frame captured from `start` through `end`, as far as
    /// `noteCamera` was told (never told: a still camera).
    func cameraStill(from start: UInt64, through end: UInt64) -> Bool {
        !cameraMovedAt.contains { $0 >= start && $0 <= end }
    }

    /// When the hold of `track`'s face ends: `holdNs` after its last sighting, and the time the
    /// camera kept it out of the picture since.
    private func holdEnd(_ track: Track) -> UInt64 { plainHoldEnd(track) + track.heldOutOfSightNs }

    /// `holdNs` after the last sighting, wherever the face was since.
    private func plainHoldEnd(_ track: Track) -> UInt64 { (track.observations.last?.time ?? 0) + settings.holdNs }

    /// The `ns` before the frame captured at `time` passed. A face held then (after its last
    /// sighting) that the camera, having moved since, keeps out of sight (`isOutOfSight` of its
    /// sighting carried by the camera: too little of it in the picture for a search to find) was
    /// where no search could look for it: that time does not count against its hold, up to
    /// `maxHeldOutOfSightNs`. So a face the camera turns away from and back to is hidden again
    /// where the camera brings it back. (Under a still camera a face out of sight walked out: it
    /// comes back, if at all, by walking in, and is found coming in like any other.)
    mutating func holdWhileOutOfSight(at time: UInt64, for ns: UInt64, isOutOfSight: (FaceRect) -> Bool) {
        for t in tracks.indices {
            guard let last = tracks[t].observations.last, last.time < time, time <= holdEnd(tracks[t]),
                  !cameraStill(from: last.time, through: time), isOutOfSight(last.rect) else { continue }
            tracks[t].heldOutOfSightNs = min(settings.maxHeldOutOfSightNs, tracks[t].heldOutOfSightNs + ns)
        }
    }

    /// Forgets tracks whose hold ended before `time`; returns their ids.
    @discardableResult
    public mutating func prune(now time: UInt64) -> [Int] {
        let gone = tracks.filter { holdEnd($0) < time }.map(\.id)
        tracks.removeAll { gone.contains($0.id) }
        return gone
    }

    /// Regions to hide in the frame captured at `time`.
    public func regions(at time: UInt64) -> [FaceRect] { hidden(at: time).map(\.region) }

    /// A region to hide, and, when the frame lies before the face's first
    /// sighting or after its last, that sighting: the face may have been
    /// entering or leaving the picture there (the caller knows its edges).
    /// `searchedAndGone`: on that side of the sightings, searches for the
    /// face gave up at or before this frame (see `markGone`); `face`: where
    /// the face itself may be (the sighting, and where its motion leads),
    /// without the region's margin and growth; for a face searched for and
    /// gone, where it was when the searches gave up, or where its own steady
    /// motion carried it. `secondsBeyond`: how far the frame lies from the
    /// sighting in `beyond`. For a face searched for and gone, `otherEnd`: the
    /// sighting at the other end of its sightings (its first, for a frame after
    /// its last), and `cameraStill`: the camera stood still from the sighting
    /// in `beyond` to this frame.
    public struct Hidden: Equatable {
        /// The track the region is for (named in the trace log).
        public var track: Int
        public var region: FaceRect
        public var beyond: FaceRect?
        /// How many sightings the track has.
        public var sightings = 0
        /// The searches for the face, if it is followed.
        var follow: Follow?
        public var searchedAndGone = false
        public var face: FaceRect
        public var secondsBeyond = 0.0
        public var otherEnd: FaceRect?
        public var cameraStill = false
        /// For a face searched for and gone: where it was (by the same reckoning as `face`) on the
        /// frame the searches gave up on it.
        public var whenSearchesGaveUp: FaceRect?
    }

    /// Regions to hide in the frame captured at `time`, with the sighting
    /// they reach beyond (if any).
    public func hidden(at time: UInt64) -> [Hidden] {
        tracks.compactMap { track -> Hidden? in
            guard let first = track.observations.first, let last = track.observations.last else { return nil }
            if time + settings.lookAheadNs < first.time || time > holdEnd(track) { return nil }
            guard let (face, region) = hiddenRegion(track, at: time, speed: settings.motion, maxGrowth: settings.maxMotionGrowth,
                                                    knownMotionSpeed: settings.knownMotionGrowth) else { return nil }
            let beyond = time < first.time ? first.rect : time > last.time ? last.rect : nil
            let secondsBeyond = Double(time < first.time ? first.time - time : time > last.time ? time - last.time : 0) / 1e9
            guard let goneAt = track.goneMark(at: time) else {
                return Hidden(track: track.id, region: region, beyond: beyond, sightings: track.observations.count,
                              follow: track.follow, face: face, secondsBeyond: secondsBeyond)
            }
            // Gone: what is left of the face in the picture was too little for a search to find. It is
            // where its own steady motion carries it (a walker leaving goes on leaving, one sliding
            // along an edge goes on sliding), grown as a face between sightings is; not the stretch
            // that motion sweeps over the whole hold, which hid the picture along the edges.
            let sighting = beyond ?? face
            let (end, otherEnd) = time < first.time ? (first, last) : (last, first)
            let whenGone: FaceRect
            var whenGaveUp: FaceRect?
            if let velocity = steadyMotion(track.observations, fromFirst: time < first.time) {
                func carried(to t: UInt64) -> FaceRect {
                    let seconds = Double(Int64(bitPattern: t &- end.time)) / 1e9
                    return FaceRect(x: end.rect.x + velocity.x * seconds, y: end.rect.y + velocity.y * seconds,
                                    width: end.rect.width, height: end.rect.height)
                }
                whenGone = carried(to: time)
                whenGaveUp = carried(to: goneAt)
            } else if !cameraStill(from: min(goneAt, end.time), through: max(goneAt, end.time)) {
                // Under a moving camera, what its sightings say of its motion is mostly the camera
                // model's error (a whip-pan): where it was last (first) seen. A face leaving through
                // an edge is covered on its way out by the stretch to that edge.
                whenGone = end.rect
            } else {
                // No steady motion to go by: where it was when the searches gave up (a walker who
                // stopped behind someone in mid-picture would otherwise "reach" an edge later).
                whenGone = hiddenRegion(track, at: goneAt, speed: settings.motion, maxGrowth: settings.maxMotionGrowth)?.face ?? face
            }
            let since = Double(time > goneAt ? time - goneAt : goneAt - time) / 1e9
            let grow = settings.margin + min(settings.maxGoneGrowth, settings.motion * since)
            let (dx, dy) = (sighting.width * grow, sighting.height * grow)
            let near = FaceRect(x: whenGone.x - dx, y: whenGone.y - dy, width: whenGone.width + 2 * dx, height: whenGone.height + 2 * dy)
            return Hidden(track: track.id, region: near, beyond: beyond, sightings: track.observations.count,
                          follow: track.follow, searchedAndGone: true,
                          face: whenGone, secondsBeyond: secondsBeyond,
                          otherEnd: otherEnd.rect, cameraStill: cameraStill(from: min(time, end.time), through: max(time, end.time)),
                          whenSearchesGaveUp: whenGaveUp ?? whenGone)
        }
    }

    /// Where each track in `ids` may be in the frame captured at `time` when that frame must leave
    /// before a search looked for the face on it (a late frame whose follow or trace back had not
    /// reached it): the region `hidden(at:)` gives between and beyond sightings, at any distance
    /// from them, grown by `speed` face sizes per second of distance up to `maxGrowth`, at the pace
    /// that `pace` gives for the track's number of sightings. One pass over the tracks.
    func reaches(of ids: Set<Int>, at time: UInt64, pace: (_ sightings: Int) -> (speed: Double, maxGrowth: Double)) -> [FaceRect] {
        tracks.compactMap { track in
            guard ids.contains(track.id) else { return nil }
            let (speed, maxGrowth) = pace(track.observations.count)
            return hiddenRegion(track, at: time, speed: speed, maxGrowth: maxGrowth)?.region
        }
    }

    /// Whether two sightings of a track are further apart (centres, in face
    /// sizes) than a face moves in the time between them, and by more than
    /// the detector's jitter (half a face size).
    func isImplausibleLeap(_ a: Observation, _ b: Observation) -> Bool {
        let size = max(a.rect.width, a.rect.height, b.rect.width, b.rect.height)
        let seconds = Double(b.time > a.time ? b.time - a.time : a.time - b.time) / 1e9
        let (dx, dy) = (b.rect.center.x - a.rect.center.x, b.rect.center.y - a.rect.center.y)
        let apart = (dx * dx + dy * dy).squareRoot() / max(1, size)
        return apart > 0.5 && apart > settings.fastestFace * seconds
    }

    /// The face's own motion at one end of its sightings (the last, or with `fromFirst` the first),
    /// in pixels per second: between that sighting and the nearest one at least
    /// `steadyMotionSpan.lowerBound` before (after) it, within its upper bound. Nil when the
    /// sightings do not span that long, when the camera moved between them (a face's motion through
    /// the scene then mixes its own with the camera model's error: carried on, that error takes the
    /// region off faces that stand still), or when the motion is faster than a
    /// face moves (two faces taken for one).
    func steadyMotion(_ list: [Observation], fromFirst: Bool) -> (x: Double, y: Double)? {
        guard let end = fromFirst ? list.first : list.last, let other = motionPartner(list, fromFirst: fromFirst),
              cameraStill(from: min(other.time, end.time), through: max(other.time, end.time)),
              !isImplausibleLeap(other, end) else { return nil }
        let seconds = Double(Int64(bitPattern: end.time &- other.time)) / 1e9
        return ((end.rect.center.x - other.rect.center.x) / seconds, (end.rect.center.y - other.rect.center.y) / seconds)
    }

    /// The sighting a face's motion at one end of its sightings is read against: the nearest one at
    /// least `steadyMotionSpan.lowerBound` after the first (or before the last), within its upper bound.
    private func motionPartner(_ list: [Observation], fromFirst: Bool) -> Observation? {
        guard let end = fromFirst ? list.first : list.last else { return nil }
        let span = settings.steadyMotionSpan
        let apart = { (o: Observation) in o.time > end.time ? o.time - end.time : end.time - o.time }
        guard let other = fromFirst ? list.first(where: { $0.time >= end.time + span.lowerBound })
            : list.last(where: { $0.time + span.lowerBound <= end.time }) else { return nil }
        return apart(other) <= span.upperBound ? other : nil
    }

    /// Where the face is between the nearest sightings before and after `time`
    /// (or, on one side only, the sighting united with where its motion leads),
    /// grown by the margin and by `speed` over the distance to the nearest sighting.
    /// With `knownMotionSpeed`, the growth is at that pace where the face's motion is known.
    private func hiddenRegion(_ track: Track, at time: UInt64, speed: Double, maxGrowth: Double,
                              knownMotionSpeed: Double? = nil) -> (face: FaceRect, region: FaceRect)? {
        let nearest = [track.observations.last { $0.time <= time }, track.observations.first { $0.time >= time }]
            .compactMap { $0 }
        guard var base = nearest.first?.rect else { return nil }
        let list = track.observations
        // The two sightings the face's motion is read from: those around `time`, or (before the first
        // or after the last sighting) the first or last two. Faster through the scene than anyone
        // moves is a camera motion the estimate missed, or two faces taken for one: no motion to go
        // by, and the face is near the line between them, not anywhere along the whole stretch
        // (which spanned the picture between two people).
        let pair = nearest.count == 2 ? (nearest[0], nearest[1])
            : list.count >= 2 ? (time < list[0].time ? (list[0], list[1]) : (list[list.count - 2], list[list.count - 1])) : nil
        let leaps = (pair.map { isImplausibleLeap($0.0, $0.1) } ?? false)
        var motionKnown = false
        if nearest.count == 2 {
            // Between two sightings of the same size, under a still camera, the face is where the
            // line between them puts it (the growth below is the slack for a face that does not
            // keep its pace); their union hid the street a walker crossed between two sightings a
            // second apart. Under a moving camera, the sightings' places carry the camera model's
            // error, which does not move along a line, and of two sightings of clearly different
            // sizes one is likely a partial box somewhere inside the face: the region spans both.
            let (a, b) = (nearest[0], nearest[1])
            let alike = { (u: Double, v: Double) in max(u, v) <= settings.sameSizeRatio * min(u, v) }
            let sameSize = alike(a.rect.height, b.rect.height) && alike(a.rect.width, b.rect.width)
            let still = cameraStill(from: a.time, through: b.time)
            if leaps || (still && sameSize), let line = predicted(list, at: time) {
                base = line
            } else {
                base = base.union(b.rect)
            }
        } else if list.count >= 2, !leaps, let ahead = predicted(list, at: time) {
            // Before the first or after the last sighting: also where its motion leads.
            base = base.union(ahead)
            motionKnown = steadyMotion(list, fromFirst: time < list[0].time) != nil
        }
        let leap = leaps ? settings.leapAllowance : 0
        let distance = nearest.map { $0.time > time ? $0.time - time : time - $0.time }.min() ?? 0
        let pace = motionKnown ? min(speed, knownMotionSpeed ?? speed) : speed
        let grow = settings.margin + min(maxGrowth, pace * Double(distance) / 1e9) + leap
        // Grown by the face's own size, not the united box's: two sightings far apart (a fast face)
        // or a long extrapolation would otherwise grow the region by a share of the whole stretch.
        let face = (width: nearest.map(\.rect.width).reduce(0, +) / Double(nearest.count),
                    height: nearest.map(\.rect.height).reduce(0, +) / Double(nearest.count))
        let (dx, dy) = (face.width * grow, face.height * grow)
        return (base, FaceRect(x: base.x - dx, y: base.y - dy, width: base.width + 2 * dx, height: base.height + 2 * dy))
    }
}
