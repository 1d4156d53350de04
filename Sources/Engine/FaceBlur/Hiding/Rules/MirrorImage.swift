extension HidingPolicy {
    /// Seen once, partly in the mirrored margin beyond the frame's edge, and missed by every search
    /// around it since, forwards and back (each reaching beyond the edge the same way, at a finer
    /// scale): a mirror image, the picture at the edge and its reflection taken for a face. A face
    /// cut by the edge is found again; this one is not held at the edge for the rest of its hold.
    func mirrorImage(_ face: Face) -> Verdict {
        face.gone?.seenOnceReachingBeyondEdge == true ? .notHidden : .next
    }
}
