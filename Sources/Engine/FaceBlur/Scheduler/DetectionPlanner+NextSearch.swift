import Foundation

/// Which search runs next, on which frame and where.
extension DetectionPlanner {
    /// The pass to run next, or nil when nothing is due on a held frame.
    func nextPass() -> Pass? {
        guard let oldest, let newest else { return nil }
        // Passes that hold frames back first (oldest frame first), then best-effort ones.
        var best: (late: Int, frame: Int, rank: Int, pass: Pass)?
        func offer(_ frame: Int, _ rank: Int, bestEffort: Bool = false, _ make: () -> Pass?) {
            let late = bestEffort ? 1 : 0
            if let b = best, (b.late, b.frame, b.rank) <= (late, frame, rank) { return }
            if let pass = make() { best = (late, frame, rank, pass) }
        }
        /// Where a pass due at frame `due` runs: not before the oldest held
        /// frame, and not on a frame that has not arrived (unless draining).
        func target(_ due: Int) -> Int? {
            if due > newest.index { return draining ? newest.index : nil }
            return max(due, oldest.index)
        }
        for (id, follow) in tracker.follows where !strict {
            if case .tracing(let f, let misses) = follow.behind, f > oldest.index, !inFlight.contains(.follow(track: id, backwards: true)) {
                // Backwards in the same steps as forwards (frames between are interpolated), one by one after a miss.
                let t = max(oldest.index, f - (misses > 0 ? 1 : followInterval(id)))
                offer(t, 0) { followPass(id, frame: t, backwards: true, misses: misses) }
            }
            if case .following(let misses) = follow.ahead, !inFlight.contains(.follow(track: id, backwards: false)) {
                let due = follow.checkedThrough + (misses > 0 ? 1 : followInterval(id))
                if follow.checkedThrough < newest.index, let t = target(due) {
                    offer(t, 1) { followPass(id, frame: t, backwards: false, misses: misses) }
                }
            }
        }
        for i in vouchingAreas where !inFlight.contains(i == 0 ? .whole : .tile(i)) {
            let area = areas[i]
            let every = i == 0 ? searches.wholeEvery : searches.tileEvery
            let due: Int
            // Searches of unchanged areas hold no frame back.
            var bestEffort = false
            if let last = area.lastSearch {
                if let dirty = area.dirtySince {
                    due = max(dirty, last + every)
                } else {
                    due = last + searches.recheckEvery
                    if due > newest.index { continue }   // unchanged: no search owed yet
                    bestEffort = true
                }
                if last >= newest.index { continue }
            } else {
                due = oldest.index
            }
            guard let t = target(due) else { continue }
            offer(t, i == 0 ? 2 : 3, bestEffort: bestEffort) { areaPass(i, on: t) }
        }
        // Picture that came in after an area's search and left before its next: searched on the
        // frame that shows most of it, as urgently as the oldest frame showing any of it. (Where
        // the camera turned back, each frame before the turn shows a little more of the strip:
        // searched oldest first, the frames would be searched one by one.)
        for i in vouchingAreas where !strict && !inFlight.contains(i == 0 ? .whole : .tile(i)) {
            var oldestShowing: Int?, most: (frame: Int, blocks: Int)?
            for frame in frames {
                let blocks = unvouchedBlocks(i, frame.index).count
                guard blocks > 0 else { continue }
                if oldestShowing == nil { oldestShowing = frame.index }
                if blocks > most?.blocks ?? 0 { most = (frame.index, blocks) }
            }
            guard let urgency = oldestShowing, let t = most?.frame else { continue }
            offer(urgency, i == 0 ? 2 : 3) { areaPass(i, on: t) }
        }
        return best?.pass
    }

    /// A search of area `i` (0: the whole frame) on held frame `t`.
    func areaPass(_ i: Int, on t: Int) -> Pass? {
        guard let frame = frame(t) else { return nil }
        let area = areas[i]
        let reference = cells(of: area, in: frame)
        guard i != 0 else {
            // The frame and its mirrored margin, at the scale the frame alone would have.
            let pad = Double(searches.wholeFramePad)
            let padded = FaceRect(x: -pad, y: -pad, width: Double(width) + 2 * pad, height: Double(height) + 2 * pad)
            let inputWidth = min(searches.wholeWidth, ((width + 31) / 32) * 32) * Int(padded.width) / width
            return Pass(kind: .whole, frame: t, time: frame.time, region: padded,
                        input: FaceDetector.inputSize(forRegionWidth: Int(padded.width), height: Int(padded.height),
                                                      inputWidth: inputWidth),
                        keepAspect: false, reference: reference, travel: frame.travel, sceneEpoch: sceneEpoch)
        }
        return Pass(kind: .tile(i), frame: t, time: frame.time, region: area.rect,
                    input: (searches.tileWidth, searches.tileHeight), keepAspect: true, reference: reference,
                    travel: frame.travel, sceneEpoch: sceneEpoch)
    }

    /// A spare-time tile to search, on the newest frame, or nil when none
    /// is due (or each due one is being searched). First the tiles whose
    /// picture is most new (`unseenShare`: a pan or a pull-out brought it
    /// in since their last search, and with it faces no search has seen,
    /// which are in view for only a moment), then the one searched longest
    /// ago, so spare time sweeps the grid. A tile is due when a quarter of
    /// its picture is new, when it changed and was last searched
    /// `tileEvery` frames ago, or `recheckEvery` frames ago anyway. Its
    /// faces are traced back through the held frames by the regular
    /// passes, so searching the newest frame protects the older ones too.
    func nextSparePass() -> Pass? {
        guard let newest else { return nil }
        let spare = vouchingAreas.upperBound..<areas.count
        let due = spare.compactMap { i -> (unseen: Double, last: Int, area: Int)? in
            guard !inFlight.contains(.tile(i)) else { return nil }
            let unseen = unseenShare(i, on: newest)
            guard let last = areas[i].lastSearch else { return (unseen, Int.min, i) }
            guard unseen >= 0.25 || newest.index >= last + (areas[i].dirtySince != nil ? searches.tileEvery : searches.recheckEvery)
            else { return nil }
            return (unseen, last, i)
        }
        guard let i = due.min(by: { (-$0.unseen, $0.last, $0.area) < (-$1.unseen, $1.last, $1.area) })?.area
        else { return nil }
        return Pass(kind: .tile(i), frame: newest.index, time: newest.time, region: areas[i].rect,
                    input: (searches.tileWidth, searches.tileHeight), keepAspect: true, reference: cells(of: areas[i], in: newest),
                    travel: newest.travel, sceneEpoch: sceneEpoch)
    }

    /// The share of area `i`'s picture on `frame` that was outside the
    /// frame searched last time (the camera's travel between the two), in
    /// quarters: 1 when never searched.
    func unseenShare(_ i: Int, on frame: Frame) -> Double {
        guard areas[i].lastSearch != nil, let then = areas[i].searchedTravel else { return 1 }
        let seen = then.toFrame(frame.travel.toScene(areas[i].rect))
        let inside = seen.intersection(FaceRect(x: 0, y: 0, width: Double(width), height: Double(height)))?.area ?? 0
        return ((1 - inside / max(1, seen.area)) * 4).rounded(.down) / 4
    }

    /// Whether `kind` searches a spare-time tile.
    func isSpareTime(_ kind: Kind) -> Bool {
        if case .tile(let i) = kind { return !vouchingAreas.contains(i) }
        return false
    }

    /// Frames between two searches for track `id`: between them the tracker
    /// unites the two boxes, which covers any straight motion; the interval
    /// is short enough that the face moves at most half its size (should
    /// the next search miss it, the grown box of the last sighting still
    /// covers it), between 2 and `followEvery` frames.
    func followInterval(_ id: Int) -> Int {
        let list = tracker.observations(of: id)
        guard searches.followEvery > 2, list.count >= 2 else { return min(2, searches.followEvery) }
        let (a, b) = (list[list.count - 2], list[list.count - 1])
        let frames = max(1, Double(b.time - a.time) / Double(frameSpan))
        let dx = b.rect.center.x - a.rect.center.x, dy = b.rect.center.y - a.rect.center.y
        // The face's own motion in the scene, and a quarter of the camera's (its estimate may be off).
        let perFrame = (dx * dx + dy * dy).squareRoot() / frames + 0.25 * scene.cameraSpeed
        let size = min(b.rect.width, b.rect.height)
        guard perFrame > 0 else { return searches.followEvery }
        return max(2, min(searches.followEvery, Int(0.5 * size / perFrame)))
    }

    /// The square a follow searches around `box` (a face expected there):
    /// centred on it, reaching beyond an edge by up to `followReachBeyondEdge`
    /// (the picture is mirrored there), so a face leaving or entering is still
    /// found while half out of the picture; cut there, the square is a
    /// rectangle searched at the square's scale (the detector letterboxes
    /// it). Never larger than the frame and that margin. A face expected out
    /// of the picture (too little of the square would be picture) gets the
    /// square of the frame nearest to it instead, so that the follow still
    /// runs (and misses, if the face left).
    /// Whole pixels, each side rounded outwards: rounding the origin and the
    /// size apart can make a square 0 px inside the picture, which no
    /// search can run on: it would stay due and hold every other search back.
    static func followSquare(around box: FaceRect, side: Double, reachBeyondEdge: Double, width: Int, height: Int) -> FaceRect {
        let reach = min(side / 2, reachBeyondEdge * max(box.width, box.height))
        let (reachX, reachY) = (min(reach, Double(width) / 2), min(reach, Double(height) / 2))
        let x0 = max(-reachX, box.center.x - side / 2).rounded(.down), y0 = max(-reachY, box.center.y - side / 2).rounded(.down)
        let x1 = min(Double(width) + reachX, box.center.x + side / 2).rounded(.up)
        let y1 = min(Double(height) + reachY, box.center.y + side / 2).rounded(.up)
        let inside = (min(x1, Double(width)) - max(x0, 0), min(y1, Double(height)) - max(y0, 0))
        if x1 - x0 >= side / 2, y1 - y0 >= side / 2, inside.0 >= side / 4, inside.1 >= side / 4 {
            return FaceRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        }
        let w = min(side, Double(width)), h = min(side, Double(height))
        let x = max(0, min(box.center.x - w / 2, Double(width) - w)), y = max(0, min(box.center.y - h / 2, Double(height) - h))
        return FaceRect(x: x.rounded(.down), y: y.rounded(.down), width: w.rounded(.up), height: h.rounded(.up))
    }

    /// A search around track `id`'s expected place on frame `index`.
    func followPass(_ id: Int, frame index: Int, backwards: Bool, misses: Int) -> Pass? {
        guard let frame = frame(index), let scene = tracker.predicted(id, at: frame.time) else { return nil }
        let box = frame.travel.toFrame(scene)
        let side = max(48, searches.followScale * max(box.width, box.height) * (1 + 0.5 * Double(misses)))
        let region = Self.followSquare(around: box, side: side, reachBeyondEdge: searches.followReachBeyondEdge, width: width, height: height)
        let templateAllowed = !backwards && misses == 0 && (tracker.follow(of: id)?.templateStreak ?? .max) < searches.templateFollows
        return Pass(kind: .follow(track: id, backwards: backwards), frame: index, time: frame.time, region: region,
                    input: (searches.followInput, searches.followInput), keepAspect: true, travel: frame.travel, sceneEpoch: sceneEpoch,
                    expected: box, mayUseTemplate: templateAllowed)
    }

    /// A detection thread took `pass`.
    mutating func begin(_ pass: Pass) { inFlight.append(pass.kind) }
}
