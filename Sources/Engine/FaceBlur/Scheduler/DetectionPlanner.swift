import Foundation

/// Decides which detection to run next, on which frame and where, and
/// when a frame in the delay line has been searched enough to leave.
///
/// Three kinds of search (all CenterFace, at three fixed network sizes):
/// - **whole**: the whole frame at `wholeWidth` (640: faces from ~45 px at
///   720p, up to frame-filling), with a margin mirrored past each edge
///   (`wholeFramePad`: faces cut by the edge);
/// - **tile**: one tile of a grid at full resolution (faces from ~22 px;
///   tiles overlap by ≥ 64 px so a face too small for the whole-frame pass
///   is whole in one of them);
/// - **follow**: the surroundings of a face already found (a square of
///   `followScale` × its size around where it is expected, scaled to
///   96×96 px: small faces are enlarged, big ones shrunk), which keeps a
///   track's position exact from frame to frame at a few % of the cost of
///   a whole-frame pass; near an edge the square reaches past it, mirrored.
///
/// Live, a finer grid of **spare-time tiles** (`spareTileScale`) vouches
/// for no frame: `nextSparePass` hands them to a thread that runs only on
/// idle CPU.
///
/// Change gating: each frame's luma is reduced to 8×8-pixel block means.
/// The whole frame and each tile (an "area") remember the block means of
/// the frame they were last searched on; an area is *dirty* from the first
/// later frame on which some block differs by `changeThreshold` or more.
/// A picture that did not change cannot hold a face that was not there
/// when it was searched, so an area is searched again only once it is
/// dirty (after at least `wholeEvery`/`tileEvery` frames), or after
/// `recheckEvery` frames anyway (detector misses, slow drift). A moving
/// camera makes everything dirty: then this is a plain fixed schedule.
///
/// A frame is *settled* (may leave) when
/// - every area was searched on it or a later frame, or has not changed
///   since it was searched;
/// - every face being followed was searched for on it or a later frame;
/// - no face found later is still being traced back towards it: a face
///   found for the first time at frame j is followed backwards (j-1, j-2, …)
///   while it is still found and the frames are still held, so the frames
///   before its discovery get its real position, not a guess.
///
/// Order: passes that hold frames back first, the one on the oldest frame
/// first (it unblocks the delay line); then best-effort ones (searches of
/// unchanged areas).
///
/// Live, a frame may have to leave before it is settled (the machine could
/// not keep up): `unconfirmedCells` says which parts of it no search vouches
/// for, so that the stage hides those and nothing more.
///
/// Forward follows may be answered by the face's template instead of the
/// network (`Pass.mayUseTemplate`, at most `templateFollows` in a row; the
/// stage decides whether the template matched). `strict` (live
/// `when_behind = lower_fps`) settles a frame only on searches of that very
/// frame, with no follows: every frame recorded was searched completely.
///
/// Pure logic over frame indices, block means and the tracker; the stage
/// runs it under its lock and does the detections.
struct DetectionPlanner {
    enum Kind: Equatable, CustomStringConvertible {
        case whole
        case tile(Int)
        case follow(track: Int, backwards: Bool)
        var description: String {
            switch self {
            case .whole: return "whole frame"
            case .tile(let i): return "tile \(i)"
            case .follow(let id, let back): return "\(back ? "trace back" : "follow") face \(id)"
            }
        }
    }

    struct Pass: Equatable {
        var kind: Kind
        var frame: Int
        var time: UInt64
        var region: FaceRect
        var input: (width: Int, height: Int)
        var keepAspect: Bool
        /// Whole frame and tiles: the area's block means on this frame (its new reference).
        var reference: [UInt8] = []
        /// The camera's travel at this frame (frame pixels → scene), and the
        /// scene it is in (`rebaseScene` starts a new one).
        var travel = Travel()
        var sceneEpoch = 0
        /// Forward follows: where the face is expected on this frame (frame
        /// pixels), and whether its template may answer instead of the network.
        var expected: FaceRect?
        var mayUseTemplate = false
        static func == (a: Pass, b: Pass) -> Bool {
            a.kind == b.kind && a.frame == b.frame && a.region == b.region && a.input == b.input && a.keepAspect == b.keepAspect
        }
    }

    struct Frame {
        var index: Int
        var time: UInt64
        var blocks: [UInt8]
        var travel = Travel()
        /// How far the picture moved since the previous frame, in scene pixels (`cameraSpeed`); the
        /// trace log names it, since the rules for a face gone differ under a still and a moving camera.
        var cameraSpeed = 0.0
        /// Strict mode: the areas vouching for this frame (searched on it, or
        /// unchanged since they were searched on an earlier frame).
        var covered: Set<Int> = []
    }

    typealias Travel = SceneMotion.Travel

    /// The whole frame or one tile, and what it looked like when last searched.
    struct Area {
        var rect: FaceRect
        /// Block columns/rows it spans.
        var bx0: Int, by0: Int, bx1: Int, by1: Int
        var lastSearch: Int?
        var reference: [UInt8] = []
        var dirtySince: Int?
        /// The camera's travel at the last search: what part of the area's
        /// picture the search saw (`unseenShare`).
        var searchedTravel: Travel?
    }

    /// A search of area `area` on frame `frame`, and the camera's travel there.
    struct Search {
        var area: Int
        var frame: Int
        var travel: Travel
    }

    static let block = 8

    /// The schedule (`PrivacyTuning.Searches.effective`) and the hiding rules' values.
    let searches: PrivacyTuning.Searches
    let hiding: PrivacyTuning.Hiding
    /// Every frame searched completely itself (`when_behind = lower_fps`): an area covers a frame
    /// only when searched on that very frame, or unchanged since it was searched; no follows or
    /// traces back (the whole frame and the tiles find every face on every frame).
    let strict: Bool
    let width: Int, height: Int
    let blocksPerRow: Int
    var areas: [Area] = []
    /// The areas a frame waits for (the whole frame and the regular tiles);
    /// the rest are spare-time tiles.
    var vouchingAreas = 0..<1
    var frames: [Frame] = []
    /// The followed tracks by id (the tracker keeps them): a view for logs and tests.
    var follows: [Int: Follow] { Dictionary(uniqueKeysWithValues: tracker.follows.map { ($0.id, $0.follow) }) }
    /// The whole-frame and tile searches (regular and spare-time) on frames still held, or
    /// recently left: what part of the scene each looked at (`unvouchedBlocks`).
    var recentSearches: [Search] = []
    /// Area searches recorded so far (`unvouchedBlocks`' cache knows what it has seen).
    var searchesRecorded = 0
    /// `unvouchedBlocks`' answers. Searches only add to what was seen, so an empty answer stays
    /// empty until the area's covering search moves on; a planner mutated while a copy shares the
    /// cache takes a cache of its own first (`ownCache`).
    var unvouchedCache = UnvouchedCache()
    final class UnvouchedCache {
        struct Key: Hashable { var area: Int, frame: Int }
        var answers: [Key: (coveringSearch: Int, searches: Int, blocks: [(column: Int, row: Int)])] = [:]
    }
    mutating func ownCache() {
        if !isKnownUniquelyReferenced(&unvouchedCache) { unvouchedCache = UnvouchedCache() }
    }
    var tracker: FaceTracker
    var draining = false
    /// Passes being run (several detection threads): not offered again until recorded.
    var inFlight: [Kind] = []
    /// The camera's travel through the scene, and the scene's rebases.
    var scene = SceneMotion()
    var sceneEpoch: Int { scene.epoch }

    /// A planner for frames of `width`×`height`, its tracker following `tuning.tracking`.
    init(tuning: PrivacyTuning, strict: Bool = false, width: Int, height: Int) {
        searches = tuning.searches
        hiding = tuning.hiding
        self.strict = strict
        tracker = FaceTracker(settings: tuning.tracking)
        self.width = width
        self.height = height
        blocksPerRow = (width + Self.block - 1) / Self.block
        areas.append(Self.area(FaceRect(x: 0, y: 0, width: Double(width), height: Double(height)), width: width, height: height))
        if searches.tileEvery > 0 {
            let (tileWidth, tileHeight) = (Int(Double(searches.tileWidth) / searches.tileScale), Int(Double(searches.tileHeight) / searches.tileScale))
            for rect in Self.tiles(width: width, height: height, tileWidth: tileWidth, tileHeight: tileHeight) {
                areas.append(Self.area(rect, width: width, height: height))
            }
        }
        vouchingAreas = 0..<areas.count
        if searches.tileEvery > 0, searches.spareTileScale > searches.tileScale {
            let scale = searches.spareTileScale
            let (tileWidth, tileHeight) = (Int(Double(searches.tileWidth) / scale), Int(Double(searches.tileHeight) / scale))
            for rect in Self.tiles(width: width, height: height, tileWidth: tileWidth, tileHeight: tileHeight) {
                areas.append(Self.area(rect, width: width, height: height))
            }
        }
    }

    static func area(_ rect: FaceRect, width: Int, height: Int) -> Area {
        let bw = (width + block - 1) / block, bh = (height + block - 1) / block
        return Area(rect: rect, bx0: Int(rect.x) / block, by0: Int(rect.y) / block,
                    bx1: min(bw, (Int(rect.maxX) + block - 1) / block), by1: min(bh, (Int(rect.maxY) + block - 1) / block))
    }

    /// A grid of tiles of at most `tileWidth`×`tileHeight` covering the
    /// frame, evenly spaced, neighbours overlapping by at least 64 px.
    static func tiles(width: Int, height: Int, tileWidth: Int, tileHeight: Int) -> [FaceRect] {
        func spans(_ length: Int, _ tile: Int) -> [(Double, Double)] {
            guard length > tile else { return [(0, Double(length))] }
            let overlap = 64
            let n = Int((Double(length - overlap) / Double(tile - overlap)).rounded(.up))
            return (0..<n).map { k in (Double(((length - tile) * k + (n - 1) / 2) / (n - 1)), Double(tile)) }
        }
        return spans(height, tileHeight).flatMap { y in
            spans(width, tileWidth).map { x in FaceRect(x: x.0, y: y.0, width: x.1, height: y.1) }
        }
    }




    /// The share of `box` (frame pixels) that lies in the picture.
    static func shareInPicture(_ box: FaceRect, width: Int, height: Int) -> Double {
        let picture = FaceRect(x: 0, y: 0, width: Double(width), height: Double(height))
        return box.area > 0 ? (box.intersection(picture)?.area ?? 0) / box.area : 0
    }

    /// Whether `box` (found in `region`) touches an edge of the region that
    /// is not an edge of the frame (within `slack` pixels): it may be a face cut in two.
    static func touchesInnerEdge(_ box: FaceRect, of region: FaceRect, width: Int, height: Int, slack: Double = 2) -> Bool {
        return (region.x > 0 && box.x <= region.x + slack)
            || (region.maxX < Double(width) && box.maxX >= region.maxX - slack)
            || (region.y > 0 && box.y <= region.y + slack)
            || (region.maxY < Double(height) && box.maxY >= region.maxY - slack)
    }

    /// How close to an inner edge of the searched region a box found by `kind`
    /// counts as touching it. A tile cuts faces larger than the tiles'
    /// overlap, and the box the network draws around what is left may stop
    /// a few pixels short of the cut, more the larger the face: such a box
    /// feeds a second track beside a face another track holds whole, whose
    /// region between its sightings hides the picture around the face.
    /// A face dropped this way is whole in the neighbouring tile (tiles
    /// overlap by more than a small face) or in the whole-frame search (faces
    /// from ~45 px); the slack stays 2 px for faces under 40 px. A follow's
    /// square is centred on the face: 2 px there.
    static func innerEdgeSlack(for box: FaceRect, foundBy kind: Kind) -> Double {
        guard case .tile = kind else { return 2 }
        return max(2, 0.05 * max(box.width, box.height))
    }

    var oldest: Frame? { frames.first }
    var newest: Frame? { frames.last }

    func frame(_ index: Int) -> Frame? {
        guard let first = frames.first, index >= first.index, index - first.index < frames.count else { return nil }
        return frames[index - first.index]
    }

    // MARK: Frames in and out

    /// A new frame entered the delay line; `cameraMotion` takes a point of
    /// the previous frame to where it is in this one (`CameraTracker`,
    /// estimated by the stage).
    mutating func add(index: Int, time: UInt64, blocks: [UInt8], cameraMotion: Similarity = .identity) {
        if let sceneToNew = scene.advance(by: cameraMotion, width: width, height: height) { carry(into: sceneToNew) }
        let (travel, cameraSpeed) = (scene.travel, scene.cameraSpeed)
        tracker.noteCamera(moving: cameraSpeed > tracker.settings.stillCameraSpeed, at: time)
        if let previous = frames.last?.time, time > previous {
            let (width, height, outOfSight) = (width, height, tracker.settings.outOfSightShare)
            tracker.holdWhileOutOfSight(at: time, for: time - previous) {
                Self.shareInPicture(travel.toFrame($0), width: width, height: height) < outOfSight
            }
        }
        var frame = Frame(index: index, time: time, blocks: blocks, travel: travel, cameraSpeed: cameraSpeed)
        for i in areas.indices where areas[i].dirtySince == nil && changed(i, frame) {
            areas[i].dirtySince = index
        }
        for i in vouchingAreas where areas[i].lastSearch != nil && areas[i].dirtySince == nil { frame.covered.insert(i) }
        frames.append(frame)
    }

    /// The scene was rebased (`SceneMotion`): every sighting, held frame and search is carried
    /// into the new one.
    mutating func carry(into sceneToNew: Similarity) {
        tracker.transform(by: sceneToNew)
        for k in frames.indices { frames[k].travel = frames[k].travel.rebased(by: sceneToNew) }
        for k in areas.indices { areas[k].searchedTravel = areas[k].searchedTravel?.rebased(by: sceneToNew) }
        for k in recentSearches.indices { recentSearches[k].travel = recentSearches[k].travel.rebased(by: sceneToNew) }
    }

    /// The oldest frame left the delay line.
    mutating func removeOldest() {
        guard !frames.isEmpty else { return }
        frames.removeFirst()
        guard let oldest = frames.first else { return }
        let memory = searchMemory
        recentSearches.removeAll { $0.frame + memory < oldest.index }
        ownCache()
        unvouchedCache.answers = unvouchedCache.answers.filter { $0.key.frame >= oldest.index }
        // Tracks no queued frame can need any more.
        tracker.prune(now: oldest.time)
        // A trace cannot go below the oldest frame still held.
        tracker.framesLeft(through: oldest.index)
    }

    /// End of stream: passes due after the last frame run on it instead.
    mutating func drain() { draining = true }

    func changed(_ area: Int, _ frame: Frame) -> Bool {
        let a = areas[area]
        guard a.lastSearch != nil else { return true }
        let threshold = searches.changeThreshold
        var k = 0
        for by in a.by0..<a.by1 {
            let row = by * blocksPerRow
            for bx in a.bx0..<a.bx1 {
                if abs(Int(frame.blocks[row + bx]) - Int(a.reference[k])) >= threshold { return true }
                k += 1
            }
        }
        return false
    }

    func cells(of area: Area, in frame: Frame) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((area.bx1 - area.bx0) * (area.by1 - area.by0))
        for by in area.by0..<area.by1 {
            let row = by * blocksPerRow
            out.append(contentsOf: frame.blocks[(row + area.bx0)..<(row + area.bx1)])
        }
        return out
    }
}
