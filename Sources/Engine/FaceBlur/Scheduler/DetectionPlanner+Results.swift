import Foundation

/// What a search found: matched to tracks, merged, followed and traced back.
extension DetectionPlanner {
    /// A face the network found on a frame, and the track it went to (frame pixels).
    struct Sighting: Equatable { var track: Int; var rect: FaceRect }

    /// Records what `pass` found (face boxes in frame pixels); `byTemplate`:
    /// a follow answered by the face's template, not the network. Returns the
    /// network's sightings (templates are cut from them).
    @discardableResult
    mutating func record(_ pass: Pass, found: [FaceRect], byTemplate: Bool = false) -> [Sighting] {
        var found = found
        var sightings: [Sighting] = []
        if let i = inFlight.firstIndex(of: pass.kind) { inFlight.remove(at: i) }
        let frame = (index: pass.frame, time: pass.time)
        var pass = pass
        if pass.sceneEpoch != sceneEpoch {
            // The scene was rebased while the pass ran: its frame's transform into the new one.
            if let held = self.frame(pass.frame) {
                pass.travel = held.travel
            } else if let now = scene.current(pass.travel, readIn: pass.sceneEpoch) {
                pass.travel = now
            } else {
                found = []
            }
            pass.sceneEpoch = sceneEpoch
        }
        let faces = found
            .filter { !Self.touchesInnerEdge($0, of: pass.region, width: width, height: height, slack: Self.innerEdgeSlack(for: $0, foundBy: pass.kind)) }
            .filter { Self.shareInPicture($0, width: width, height: height) >= searches.minimumShareInside }
            .map(pass.travel.toScene)
        switch pass.kind {
        case .whole, .tile:
            let i: Int
            if case .tile(let t) = pass.kind { i = t } else { i = 0 }
            let vouches = vouchingAreas.contains(i)   // spare-time tiles vouch for no frame
            recentSearches.append(Search(area: i, frame: pass.frame, travel: pass.travel))
            searchesRecorded += 1
            ownCache()
            if pass.frame >= (areas[i].lastSearch ?? pass.frame) {
                areas[i].lastSearch = pass.frame
                areas[i].reference = pass.reference
                areas[i].searchedTravel = pass.travel
                areas[i].dirtySince = frames.first { $0.index > pass.frame && changed(i, $0) }?.index
                // The frames held after it that did not change since are vouched for too.
                for k in frames.indices where vouches && frames[k].index > pass.frame && frames[k].index < (areas[i].dirtySince ?? .max) {
                    frames[k].covered.insert(i)
                }
            }
            if vouches, let first = frames.first, pass.frame >= first.index, pass.frame - first.index < frames.count {
                frames[pass.frame - first.index].covered.insert(i)
            }
            let assigned = tracker.update(detections: faces, time: frame.time)
            sightings = zip(assigned, faces).map { Sighting(track: $0.0.id, rect: pass.travel.toFrame($0.1)) }
            note(assigned, frame: pass.frame, boxes: sightings.map(\.rect))
        case .follow(let id, let backwards):
            guard var follow = tracker.follow(of: id) else { return [] }
            let expected = tracker.predicted(id, at: frame.time)
            var rest = faces
            let match = expected.flatMap { e in
                rest.indices.filter { FaceTracker.distance(e, rest[$0]) < 1 }
                    .min { FaceTracker.distance(e, rest[$0]) < FaceTracker.distance(e, rest[$1]) }
            }
            // The face found may be another track's (faces crossing, or this one found twice): seen
            // there by it, or expected nearer by it. A face lost behind someone, searched for in an
            // ever wider square, would otherwise take a passer-by's face for its own, and the region
            // between the two faces' boxes hide the picture between them.
            var owner: Int?, expectedElsewhere = false
            if let match, let e = expected {
                owner = tracker.owner(of: rest[match], at: frame.time, excluding: id, within: frameSpan * UInt64(searches.followEvery))
                if owner == nil {
                    owner = tracker.expectsNearer(rest[match], at: frame.time, than: FaceTracker.distance(e, rest[match]), excluding: id)
                    expectedElsewhere = owner != nil
                }
            }
            var merged = false
            if let o = owner, tracker.follow(of: o) != nil {
                if tracker.agree(id, o) && tracker.agree(o, id) {
                    merged = true
                    follow = merge(o, into: id, follow, at: frame.time)
                }
            }
            if let match, owner == nil || merged {
                let rect = rest.remove(at: match)
                tracker.add(rect, to: id, time: frame.time)
                if byTemplate {
                    follow.templateStreak += 1
                } else {
                    follow.templateStreak = 0
                    sightings.append(Sighting(track: id, rect: pass.travel.toFrame(rect)))
                }
                if backwards {
                    follow.found(behindOn: pass.frame, merged: merged)
                } else {
                    follow.found(aheadOn: pass.frame)
                }
            } else {
                // Not found (or someone else's face there, in front of it: faces crossing). One seen
                // there by another track is that track's sighting already; one another track expects
                // goes to the tracks with the rest.
                if let match, owner != nil, !expectedElsewhere { rest.remove(at: match) }
                if backwards {
                    if follow.missed(behindOn: pass.frame, giveUpAfter: searches.backtraceMisses) {
                        tracker.markGone(id, at: frame.time, afterLastSighting: false)
                    }
                } else if follow.missed(aheadOn: pass.frame, giveUpAfter: searches.followMisses) {
                    tracker.markGone(id, at: frame.time, afterLastSighting: true)
                }
            }
            follow.framesLeft(through: oldest?.index ?? 0)
            tracker.setFollow(follow, of: id)
            // Other faces in the square: other tracks, or new ones.
            let assigned = tracker.update(detections: rest, time: frame.time)
            let others = zip(assigned, rest).map { Sighting(track: $0.0.id, rect: pass.travel.toFrame($0.1)) }
            note(assigned, frame: pass.frame, boxes: others.map(\.rect))
            sightings += others
        }
        return sightings
    }

    /// Frame duration estimate (for "within a few frames").
    var frameSpan: UInt64 {
        guard frames.count >= 2, let a = frames.first, let b = frames.last, b.time > a.time else { return 33_333_333 }
        return (b.time - a.time) / UInt64(frames.count - 1)
    }

    /// Folds track `other` (the same face) into `id`; returns `id`'s follow after it.
    mutating func merge(_ other: Int, into id: Int, _ mine: Follow, at time: UInt64) -> Follow {
        tracker.merge(other, into: id, at: time, followMisses: searches.followMisses)
        return tracker.follow(of: id) ?? mine
    }

    /// Starts or refreshes the follows of the tracks `assignments` gave the faces found on frame
    /// `index` (`boxes`, in its pixels, in the same order).
    mutating func note(_ assignments: [FaceTracker.Assignment], frame index: Int, boxes: [FaceRect]) {
        for (a, box) in zip(assignments, boxes) {
            if a.isNew || tracker.follow(of: a.id) == nil {
                // Follow it from here on, and trace it back through the held frames.
                var follow = Follow(foundOn: index, traceBack: index > (oldest?.index ?? index))
                follow.foundReachingBeyondEdge = Self.shareInPicture(box, width: width, height: height) < 1
                tracker.setFollow(follow, of: a.id)
            } else if var follow = tracker.follow(of: a.id) {
                // A sighting on a frame before the follow's latest search says nothing of where the
                // face is now: the misses after it stand. (A search of an older frame that finishes
                // late, such as the search of picture no search saw, would otherwise restart the count
                // of a face that left through an edge, while its region went on growing beside it.)
                follow.found(aheadOn: index)
                follow.templateStreak = 0   // the network found it: its template is fresh
                tracker.setFollow(follow, of: a.id)
            }
        }
    }
}
