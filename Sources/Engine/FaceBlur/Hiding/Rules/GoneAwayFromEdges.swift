extension HidingPolicy {
    /// A face gone that is not (or no longer, once carried out) near an edge in the picture: the
    /// searches would have found it there, so nothing is hidden for it.
    func goneAwayFromEdges(_ placement: Placement, of face: Face) -> Verdict {
        guard face.gone != nil, let sighting = face.sighting else { return .next }
        return isNearEdge(placement.face, faceSize: Self.size(sighting)) ? .next : .notHidden
    }
}
