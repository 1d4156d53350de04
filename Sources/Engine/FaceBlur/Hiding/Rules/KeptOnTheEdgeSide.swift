extension HidingPolicy {
    /// A face gone beyond a sighting near an edge came in (before its first sighting) or went out
    /// (after its last) through that edge, so it was never further in than where it was seen
    /// there: a search would have found more of it. Its region is cut back on the side away from
    /// that edge to the sighting (or the face, if further in) and the margin. Near both edges of
    /// an axis (a face as large as the picture) there is no side to keep.
    func keptOnTheEdgeSide(_ placement: inout Placement, of face: Face) -> Verdict {
        guard face.gone != nil, let sighting = face.sighting else { return .next }
        let (region, seen) = (placement.region, placement.face)
        let zone = hiding.edgeReach * Self.size(sighting)
        let (mx, my) = (margin * sighting.width, margin * sighting.height)
        var (x0, y0, x1, y1) = (region.x, region.y, region.maxX, region.maxY)
        let (nearLeft, nearRight) = (sighting.x <= zone, sighting.maxX >= Double(width) - zone)
        let (nearTop, nearBottom) = (sighting.y <= zone, sighting.maxY >= Double(height) - zone)
        if nearLeft, !nearRight { x1 = min(x1, max(sighting.maxX, seen.maxX) + mx) }
        if nearRight, !nearLeft { x0 = max(x0, min(sighting.x, seen.x) - mx) }
        if nearTop, !nearBottom { y1 = min(y1, max(sighting.maxY, seen.maxY) + my) }
        if nearBottom, !nearTop { y0 = max(y0, min(sighting.y, seen.y) - my) }
        placement.region = FaceRect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
        return .next
    }
}
