import Foundation

/// A held frame's faces, as the tracker places them, judged by the hiding policy.
extension DetectionPlanner {
    /// The face regions to hide in held frame `index`, in its pixels (`HidingPolicy`).
    func regions(forFrame index: Int) -> [FaceRect] { hiddenRegions(forFrame: index).map(\.rect) }

    /// Where the hiding policy reads its rules' values and the frame's size from.
    var hidingPolicy: HidingPolicy {
        HidingPolicy(hiding: hiding, margin: tracker.settings.margin, width: width, height: height)
    }

    /// `regions(forFrame:)`, with the track and rule of each: the tracker's placement of each face
    /// on the frame, in its pixels, judged by the hiding policy.
    func hiddenRegions(forFrame index: Int) -> [HiddenRegion] {
        guard let frame = frame(index) else { return [] }
        let toFrame = frame.travel.toFrame
        let faces = tracker.hidden(at: frame.time).map { hidden in
            HidingPolicy.Face(
                track: hidden.track, region: toFrame(hidden.region), face: toFrame(hidden.face), sighting: hidden.beyond.map(toFrame),
                gone: hidden.searchedAndGone ? HidingPolicy.Face.Gone(
                    otherEnd: hidden.otherEnd.map(toFrame), cameraStill: hidden.cameraStill, secondsBeyond: hidden.secondsBeyond,
                    whenSearchesGaveUp: hidden.whenSearchesGaveUp.map(toFrame),
                    seenOnceReachingBeyondEdge: hidden.follow.map { $0.isLost && $0.foundReachingBeyondEdge } == true
                        && hidden.sightings == 1) : nil)
        }
        return hidingPolicy.regions(faces)
    }
}
