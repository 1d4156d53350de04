extension HidingPolicy {
    /// Beyond its sightings, a face in the picture within `edgeReach` face sizes of an edge may be
    /// crossing it: the detector finds faces nearly whole, so one entering is found only once
    /// mostly inside, and one leaving is lost while some of it is still in the picture. Its region
    /// is stretched to each such edge.
    func reachesNearEdges(_ placement: inout Placement, of face: Face) -> Verdict {
        guard let sighting = face.sighting else { return .next }
        let size = Self.size(sighting)
        let (region, seen) = (placement.region, placement.face)
        guard isNearEdge(seen, faceSize: size) else { return .hide }
        let zone = hiding.edgeReach * size
        var (x0, y0, x1, y1) = (region.x, region.y, region.maxX, region.maxY)
        if seen.x <= zone { x0 = min(x0, 0) }
        if seen.y <= zone { y0 = min(y0, 0) }
        if seen.maxX >= Double(width) - zone { x1 = max(x1, Double(width)) }
        if seen.maxY >= Double(height) - zone { y1 = max(y1, Double(height)) }
        placement.region = FaceRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        placement.reachesEdge = placement.region != region
        return .hide
    }
}
