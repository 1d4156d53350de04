/// What a frame hides for its tracked faces: a pure function from where the tracker places each
/// face on the frame to the regions to hide, decided by an ordered list of named rules (`Rule`),
/// each in a file of its own under `Hiding/Rules` with its table test (`HidingPolicyTests`).
///
/// The tracker (`FaceTracker.hidden`) says where a face is: on or between its sightings, beyond
/// them (before the first or after the last) where its motion leads, or, when searches looked for
/// it there and did not find it, where it was when they gave up (`gone`). This policy says what
/// of that is hidden: beyond the sightings, the picture's edges change the answer (a face half
/// out of the picture is too little to find, and one that was leaving goes on leaving).
///
/// Late frames (live, left before the searches settled them) also hide what no search vouches
/// for; that is the scheduler's knowledge (`DetectionPlanner.unconfirmedCells`), not this policy's.
///
/// Pure value logic; the planner calls it under the stage's lock.
struct HidingPolicy {
    /// One tracked face on one frame, in the frame's pixels: what the rules decide from.
    struct Face: Equatable {
        var track: Int
        /// The tracker's region: the face, its margin and the slack for its motion.
        var region: FaceRect
        /// Where the face itself is.
        var face: FaceRect
        /// Beyond its sightings: the nearest one. Nil on or between sightings.
        var sighting: FaceRect?
        /// Searched for where expected and not found, from here on (or back).
        var gone: Gone?

        struct Gone: Equatable {
            /// The sighting at the other end of the track's sightings (where it came from).
            var otherEnd: FaceRect?
            /// The camera stood still from the sighting to this frame.
            var cameraStill: Bool
            /// Seconds from the nearest sighting to this frame.
            var secondsBeyond: Double
            /// Where the face was when the searches gave it up.
            var whenSearchesGaveUp: FaceRect?
            /// Found once, partly in the mirrored margin beyond an edge, and missed by every
            /// search around it since.
            var seenOnceReachingBeyondEdge: Bool
        }
    }

    /// A face's region as the rules shape it.
    struct Placement: Equatable {
        var face: FaceRect
        var region: FaceRect
        var reachesEdge = false
    }

    /// What a rule says of a face's placement.
    enum Verdict: Equatable {
        /// The next rule decides (the placement may have changed).
        case next
        /// Hide the placement as it is; no later rule applies.
        case hide
        /// Hide nothing for this face on this frame.
        case notHidden
    }

    /// The rules, in the order they apply; each names the one question it answers.
    enum Rule: String, CaseIterable {
        /// On or between its sightings, a face is hidden where the tracker places it.
        case sighted
        /// A box seen once in the mirrored margin and never again is a mirror image.
        case mirrorImage
        /// A face gone in mid-picture went behind someone or was never there.
        case goneInMidPicture
        /// A walker lost at the edge it was walking to leaves through it.
        case leavesThroughEdge
        /// A face gone and carried away from every edge is not in the picture.
        case goneAwayFromEdges
        /// A face gone at an edge was never further in than where it was seen.
        case keptOnTheEdgeSide
        /// Beyond its sightings, a face near an edge may be crossing it.
        case reachesNearEdges
    }

    static let rules = Rule.allCases

    let hiding: PrivacyTuning.Hiding
    /// The tracker's margin (share of the face box per side).
    let margin: Double
    let width: Int, height: Int

    /// The regions to hide for `faces` on one frame, with the track and the rule behind each.
    func regions(_ faces: [Face]) -> [HiddenRegion] {
        faces.compactMap { face in
            var placement = Placement(face: face.face, region: face.region)
            for rule in Self.rules {
                switch apply(rule, to: &placement, of: face) {
                case .next: continue
                case .notHidden: return nil
                case .hide: return HiddenRegion(placement, of: face)
                }
            }
            return HiddenRegion(placement, of: face)
        }
    }

    func apply(_ rule: Rule, to placement: inout Placement, of face: Face) -> Verdict {
        switch rule {
        case .sighted: return sighted(face)
        case .mirrorImage: return mirrorImage(face)
        case .goneInMidPicture: return goneInMidPicture(face)
        case .leavesThroughEdge: return leavesThroughEdge(&placement, of: face)
        case .goneAwayFromEdges: return goneAwayFromEdges(placement, of: face)
        case .keptOnTheEdgeSide: return keptOnTheEdgeSide(&placement, of: face)
        case .reachesNearEdges: return reachesNearEdges(&placement, of: face)
        }
    }

    /// The larger side of a face's nearest sighting: the unit the edge rules measure in.
    static func size(_ sighting: FaceRect) -> Double { max(sighting.width, sighting.height) }

    /// Whether `face` is in the picture and comes within `edgeReach` face sizes of an edge.
    func isNearEdge(_ face: FaceRect, faceSize: Double) -> Bool {
        let zone = hiding.edgeReach * faceSize
        guard face.maxX > 0, face.maxY > 0, face.x < Double(width), face.y < Double(height) else { return false }
        return face.x <= zone || face.y <= zone || face.maxX >= Double(width) - zone || face.maxY >= Double(height) - zone
    }
}

/// A region to hide, with the track it is for and the rule that placed it: the trace log names
/// them (`--log-level trace`), so that a face left unhidden can be traced to its rule.
struct HiddenRegion: Equatable, CustomStringConvertible {
    enum Kind: String {
        /// On or between the face's sightings.
        case sighted
        /// Before its first sighting or after its last, where its motion leads.
        case beyond
        /// Searched for there and gone, kept near an edge (and carried out through it).
        case gone
    }
    var rect: FaceRect
    var track: Int
    var rule: Kind
    /// Stretched to an edge the face is near (`HidingPolicy.Rule.reachesNearEdges`).
    var reachesEdge = false
    var description: String { "track \(track) \(rule.rawValue)\(reachesEdge ? " to the edge" : "") \(rect)" }

    init(rect: FaceRect, track: Int, rule: Kind, reachesEdge: Bool = false) {
        (self.rect, self.track, self.rule, self.reachesEdge) = (rect, track, rule, reachesEdge)
    }

    init(_ placement: HidingPolicy.Placement, of face: HidingPolicy.Face) {
        self.init(rect: placement.region, track: face.track,
                  rule: face.sighting == nil ? .sighted : face.gone == nil ? .beyond : .gone, reachesEdge: placement.reachesEdge)
    }
}
