extension HidingPolicy {
    /// Searched for in mid-picture, where its motion put it, and not found: it was not there
    /// (behind someone, or never a face). Its motion carried on would bring the region to an edge
    /// later, over nothing. A face seen near an edge, or given up near one, goes on to the rules
    /// for edges: what is left of a face half out of the picture is too little to find.
    func goneInMidPicture(_ face: Face) -> Verdict {
        guard let gone = face.gone, let sighting = face.sighting, let gaveUp = gone.whenSearchesGaveUp else { return .next }
        let size = Self.size(sighting)
        return !isNearEdge(sighting, faceSize: size) && !isNearEdge(gaveUp, faceSize: size) ? .notHidden : .next
    }
}
