extension HidingPolicy {
    /// On or between its sightings a face is where the tracker places it: the edges change
    /// nothing (a search saw it there, or on both sides of this frame).
    func sighted(_ face: Face) -> Verdict {
        face.sighting == nil ? .hide : .next
    }
}
