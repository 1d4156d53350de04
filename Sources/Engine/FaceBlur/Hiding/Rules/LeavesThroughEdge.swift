extension HidingPolicy {
    /// A face gone near an edge of a still camera's picture, whose sightings came at least
    /// `leavingApproach` face sizes towards that edge, leaves through it at least at `leavingPace`
    /// since the sighting; going back in time, a face first seen at an edge walked in from it.
    /// Held where it was lost, a walker leaving would stay at the edge for the whole hold, while
    /// its own motion, read from boxes the edge cut, said it stood still. A face that appeared at
    /// the edge and was lost there may be coming in slower: it stays, as does any face under a
    /// moving camera, whose picture brings faces in at its edges.
    func leavesThroughEdge(_ placement: inout Placement, of face: Face) -> Verdict {
        guard let gone = face.gone, let sighting = face.sighting, gone.cameraStill, let cameFrom = gone.otherEnd else { return .next }
        let (dx, dy) = leavingShift(placement.face, lostAt: sighting, cameFrom: cameFrom, seconds: gone.secondsBeyond)
        placement.face = placement.face.offsetBy(dx: dx, dy: dy)
        placement.region = placement.region.offsetBy(dx: dx, dy: dy)
        return .next
    }

    /// The shift that takes `face` out through the edge its sightings approached, at least at
    /// `leavingPace` face sizes a second over `seconds`.
    func leavingShift(_ face: FaceRect, lostAt sighting: FaceRect, cameFrom: FaceRect, seconds: Double) -> (dx: Double, dy: Double) {
        let faceSize = Self.size(sighting)
        let zone = hiding.edgeReach * faceSize, least = hiding.leavingPace * faceSize * seconds
        // Along one axis: `moved`, the face's displacement since the sighting; `approached`, the
        // sightings' towards the sighting; `near…`, which of the axis' edges the sighting is near.
        func shift(_ moved: Double, approached: Double, nearLow: Bool, nearHigh: Bool) -> Double {
            guard nearLow != nearHigh else { return 0 }
            let outward: Double = nearLow ? -1 : 1
            guard approached * outward >= hiding.leavingApproach * faceSize else { return 0 }
            return outward * max(0, least - moved * outward)
        }
        return (shift(face.center.x - sighting.center.x, approached: sighting.center.x - cameFrom.center.x,
                      nearLow: sighting.x <= zone, nearHigh: sighting.maxX >= Double(width) - zone),
                shift(face.center.y - sighting.center.y, approached: sighting.center.y - cameFrom.center.y,
                      nearLow: sighting.y <= zone, nearHigh: sighting.maxY >= Double(height) - zone))
    }
}
