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
    private let blocksPerRow: Int
    private(set) var areas: [Area] = []
    /// The areas a frame waits for (the whole frame and the regular tiles);
    /// the rest are spare-time tiles.
    private(set) var vouchingAreas = 0..<1
    private(set) var frames: [Frame] = []
    private(set) var follows: [Int: Follow] = [:]
    /// The whole-frame and tile searches (regular and spare-time) on frames still held, or
    /// recently left: what part of the scene each looked at (`unvouchedBlocks`).
    private(set) var recentSearches: [Search] = []
    /// Area searches recorded so far (`unvouchedBlocks`' cache knows what it has seen).
    private var searchesRecorded = 0
    /// `unvouchedBlocks`' answers. Searches only add to what was seen, so an empty answer stays
    /// empty until the area's covering search moves on; a planner mutated while a copy shares the
    /// cache takes a cache of its own first (`ownCache`).
    private var unvouchedCache = UnvouchedCache()
    final class UnvouchedCache {
        struct Key: Hashable { var area: Int, frame: Int }
        var answers: [Key: (coveringSearch: Int, searches: Int, blocks: [(column: Int, row: Int)])] = [:]
    }
    private mutating func ownCache() {
        if !isKnownUniquelyReferenced(&unvouchedCache) { unvouchedCache = UnvouchedCache() }
    }
    var tracker: FaceTracker
    private(set) var draining = false
    /// Passes being run (several detection threads): not offered again until recorded.
    private(set) var inFlight: [Kind] = []
    /// The camera's travel through the scene, and the scene's rebases.
    private(set) var scene = SceneMotion()
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

    private static func area(_ rect: FaceRect, width: Int, height: Int) -> Area {
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
    private mutating func carry(into sceneToNew: Similarity) {
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
        for id in tracker.prune(now: oldest.time) { follows[id] = nil }
        // A trace cannot go below the oldest frame still held.
        for id in follows.keys { follows[id]?.framesLeft(through: oldest.index) }
    }

    /// End of stream: passes due after the last frame run on it instead.
    mutating func drain() { draining = true }

    private func changed(_ area: Int, _ frame: Frame) -> Bool {
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

    private func cells(of area: Area, in frame: Frame) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((area.bx1 - area.bx0) * (area.by1 - area.by0))
        for by in area.by0..<area.by1 {
            let row = by * blocksPerRow
            out.append(contentsOf: frame.blocks[(row + area.bx0)..<(row + area.bx1)])
        }
        return out
    }

    // MARK: Settling

    /// Area `i` needs no (more) search for frame `index`.
    func areaCovers(_ i: Int, _ index: Int) -> Bool {
        let a = areas[i]
        guard let last = a.lastSearch else { return false }
        if strict { return frame(index)?.covered.contains(i) ?? false }
        if last >= index { return unvouchedBlocks(i, index).isEmpty }
        return (a.dirtySince ?? Int.max) > index
    }

    /// How far (frame pixels) a block's centre must lie outside a frame's picture to count as out
    /// of the sight of a search on that frame: a block, so that a camera shaking by a few pixels
    /// takes nothing out of sight.
    static let sightMargin = Double(block)

    /// How many frames before or after a held frame a search may have seen its content
    /// (`unvouchedBlocks`): two search cycles of the area's kind (a stage behind stretches them).
    private func sightWindow(_ i: Int) -> Int { 2 * (i == 0 ? searches.wholeEvery : max(searches.wholeEvery, searches.tileEvery)) }

    /// How long a search is remembered after the oldest frame held passed it.
    private var searchMemory: Int { 2 * max(searches.wholeEvery, searches.tileEvery) }

    /// The blocks (column, row) of area `i` on held frame `index` that no search of the area's kind
    /// looked at: the area's covering search ran on a later frame, by which the camera had taken
    /// them out of the picture, and no search on a frame near `index` had them in its area either
    /// (picture leaving through the edge opposite the one it came in at was in an earlier search's
    /// area, further in).
    /// That is picture which came in at an edge after one search and left through an edge before
    /// the next: a later search cannot vouch for what it did not see (a small face brought in at
    /// an edge by the end of a whip-pan and taken out again between two searches of its tile).
    /// Empty when the area was searched on the frame itself, or its covering search
    /// had all of the frame's area in sight. The whole frame's searches are held to this only
    /// when there are no tiles: the tiles look at everything it does, at a finer scale, and held to
    /// it as well the whole frame would be searched several times as often under a moving camera.
    func unvouchedBlocks(_ i: Int, _ index: Int) -> [(column: Int, row: Int)] {
        let a = areas[i]
        guard !strict, i != 0 || vouchingAreas.count == 1, let frame = frame(index), !frame.covered.contains(i),
              let last = a.lastSearch, last > index, let then = a.searchedTravel else { return [] }
        let key = UnvouchedCache.Key(area: i, frame: index)
        if let known = unvouchedCache.answers[key], known.coveringSearch == last,
           known.blocks.isEmpty || known.searches == searchesRecorded { return known.blocks }
        let blocks = computeUnvouchedBlocks(i, frame: frame, coveringTravel: then)
        unvouchedCache.answers[key] = (last, searchesRecorded, blocks)
        return blocks
    }

    private func computeUnvouchedBlocks(_ i: Int, frame: Frame, coveringTravel then: Travel) -> [(column: Int, row: Int)] {
        let (a, index) = (areas[i], frame.index)
        let toLater = then.frameToScene.inverse.after(frame.travel.frameToScene)
        let margin = Self.sightMargin
        func inPicture(_ p: (x: Double, y: Double)) -> Bool {
            p.x >= -margin && p.y >= -margin && p.x <= Double(width) + margin && p.y <= Double(height) + margin
        }
        let corners = [(a.rect.x, a.rect.y), (a.rect.maxX, a.rect.y), (a.rect.x, a.rect.maxY), (a.rect.maxX, a.rect.maxY)]
        if corners.allSatisfy({ inPicture(toLater.apply($0.0, $0.1)) }) { return [] }
        // Searches of the same kind (the whole frame's finds big faces only) near the frame.
        let window = sightWindow(i)
        let near = recentSearches.filter { ($0.area == 0) == (i == 0) && abs($0.frame - index) <= window }
            .map { (rect: areas[$0.area].rect, toThere: $0.travel.frameToScene.inverse.after(frame.travel.frameToScene)) }
        let (columns, rows) = (a.bx1 - a.bx0, a.by1 - a.by0)
        var unseen = [Bool](repeating: false, count: columns * rows)
        for by in a.by0..<a.by1 {
            for bx in a.bx0..<a.bx1 {
                let centre = (Double(bx * Self.block + Self.block / 2), Double(by * Self.block + Self.block / 2))
                guard !inPicture(toLater.apply(centre.0, centre.1)) else { continue }
                unseen[(by - a.by0) * columns + bx - a.bx0] = !near.contains { search in
                    let p = search.toThere.apply(centre.0, centre.1)
                    return p.x >= search.rect.x && p.y >= search.rect.y && p.x <= search.rect.maxX && p.y <= search.rect.maxY
                }
            }
        }
        // Only what could hold a face: the unseen blocks with a 3 × 3 square of them around them,
        // and the blocks of those squares (an opening). A roll turns the picture's corners out of
        // every other frame's: each frame shows a sliver at its corners no other frame does, too
        // thin for a face, and searched for, they held most frames of a roll back.
        let square = (-1...1).flatMap { dr in (-1...1).map { dc in (dc, dr) } }
        func set(_ grid: [Bool], _ c: Int, _ r: Int) -> Bool { c >= 0 && r >= 0 && c < columns && r < rows && grid[r * columns + c] }
        var core = [Bool](repeating: false, count: columns * rows)
        for r in 0..<rows {
            for c in 0..<columns where unseen[r * columns + c] { core[r * columns + c] = square.allSatisfy { set(unseen, c + $0.0, r + $0.1) } }
        }
        var out: [(column: Int, row: Int)] = []
        for r in 0..<rows {
            for c in 0..<columns where unseen[r * columns + c] && square.contains(where: { set(core, c + $0.0, r + $0.1) }) {
                out.append((a.bx0 + c, a.by0 + r))
            }
        }
        return out
    }

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
                    seenOnceReachingBeyondEdge: follows[hidden.track].map { $0.isLost && $0.foundReachingBeyondEdge } == true
                        && hidden.sightings == 1) : nil)
        }
        return hidingPolicy.regions(faces)
    }

    /// What holds frame `index` back, for a log line: the areas not
    /// covering it and the follows still pending on it, with the state that
    /// decides when their next search is due.
    func holdUp(_ index: Int) -> String {
        var parts = ["frames \(oldest?.index ?? -1)…\(newest?.index ?? -1)", "in flight \(inFlight)"]
        for i in vouchingAreas where !areaCovers(i, index) {
            parts.append("area \(i): last search \(areas[i].lastSearch.map(String.init) ?? "none"), dirty since \(areas[i].dirtySince.map(String.init) ?? "none"), \(unvouchedBlocks(i, index).count) blocks out of its sight")
        }
        for (id, f) in follows.sorted(by: { $0.key < $1.key }) where f.isPending(on: index) {
            parts.append("follow \(id): born \(f.born), checked through \(f.checkedThrough), ahead \(f.ahead), behind \(f.behind), interval \(followInterval(id))")
        }
        return parts.joined(separator: "; ")
    }

    /// Whether frame `index` has been searched enough to leave the delay line.
    func isSettled(_ index: Int) -> Bool {
        for i in vouchingAreas {
            if !areaCovers(i, index) { return false }
        }
        if strict { return true }
        return !follows.values.contains { $0.isPending(on: index) }
    }

    /// The parts of frame `index` that no search vouches for, as cells of
    /// `cell` pixels (a multiple of the block size) on a fixed grid: the
    /// blocks of every area not covering the frame that differ from what the
    /// area looked like when it was last searched (all of it before its first
    /// search), grown by one block (a face straddles blocks). Faces being
    /// followed are hidden by the tracker's regions; those whose follow or
    /// trace back has not reached this frame yet are also here, as far as
    /// they may have moved since a search last saw them (`pendingFaceReach`).
    func unconfirmedCells(_ index: Int, cell: Int) -> [FaceRect] {
        let all = [FaceRect(x: 0, y: 0, width: Double(width), height: Double(height))]
        guard let frame = frame(index), cell % Self.block == 0, cell > 0 else { return all }
        let bw = blocksPerRow, bh = (height + Self.block - 1) / Self.block
        let per = cell / Self.block
        let cw = (bw + per - 1) / per, ch = (bh + per - 1) / per
        var hit = [Bool](repeating: false, count: cw * ch)
        func mark(_ bx: Int, _ by: Int, grownBy grow: Int) {
            for y in max(0, by - grow)...min(bh - 1, by + grow) {
                for x in max(0, bx - grow)...min(bw - 1, bx + grow) { hit[(y / per) * cw + x / per] = true }
            }
        }
        for area in vouchingAreas where !areaCovers(area, index) {
            let a = areas[area]
            if let last = a.lastSearch, last > index {
                // Searched later, but some of this frame's picture had left by then: that part only,
                // grown by a small face (the rest of a face cut by the edge was searched).
                for block in unvouchedBlocks(area, index) { mark(block.column, block.row, grownBy: hiding.unvouchedGrowth) }
                continue
            }
            var k = 0
            for by in a.by0..<a.by1 {
                for bx in a.bx0..<a.bx1 {
                    defer { k += 1 }
                    guard a.lastSearch == nil || abs(Int(frame.blocks[by * bw + bx]) - Int(a.reference[k])) >= searches.changeThreshold
                    else { continue }
                    mark(bx, by, grownBy: 1)
                }
            }
        }
        for reach in pendingFaceReach(index) {
            let x0 = max(0, Int(reach.x) / cell), x1 = min(cw - 1, Int(reach.maxX) / cell)
            let y0 = max(0, Int(reach.y) / cell), y1 = min(ch - 1, Int(reach.maxY) / cell)
            guard x0 <= x1, y0 <= y1 else { continue }
            for y in y0...y1 { for x in x0...x1 { hit[y * cw + x] = true } }
        }
        // Runs of cells along each row: one rectangle each (the grid stays aligned).
        var cells: [FaceRect] = []
        for cy in 0..<ch {
            var cx = 0
            while cx < cw {
                guard hit[cy * cw + cx] else { cx += 1; continue }
                let start = cx
                while cx < cw, hit[cy * cw + cx] { cx += 1 }
                let x0 = start * cell, y0 = cy * cell
                cells.append(FaceRect(x: Double(x0), y: Double(y0),
                                      width: Double(min(width, cx * cell) - x0), height: Double(min(height, y0 + cell) - y0)))
            }
        }
        return cells
    }



    /// Faces a search has not looked for on frame `index` yet (their forward
    /// follow is behind it, or their trace back is still heading for it):
    /// where each may be on it, in its pixels.
    func pendingFaceReach(_ index: Int) -> [FaceRect] {
        guard let frame = frame(index), !strict else { return [] }
        let pending = Set(follows.compactMap { id, follow in follow.isPending(on: index) ? id : nil })
        guard !pending.isEmpty else { return [] }
        let reach = hiding.pendingReach
        return tracker.reaches(of: pending, at: frame.time) { sightings in
            let pace = sightings >= 2 ? reach.knownMotion : reach.unknownMotion
            return (pace.speed, pace.growth)
        }.map(frame.travel.toFrame)
    }

    // MARK: Choosing the next pass

    /// The pass to run next, or nil when nothing is due on a held frame.
    func nextPass() -> Pass? {
        guard let oldest, let newest else { return nil }
        // Passes that hold frames back first (oldest frame first), then best-effort ones.
        var best: (late: Int, frame: Int, rank: Int, pass: Pass)?
        func offer(_ frame: Int, _ rank: Int, bestEffort: Bool = false, _ make: () -> Pass?) {
            let late = bestEffort ? 1 : 0
            if let b = best, (b.late, b.frame, b.rank) <= (late, frame, rank) { return }
            if let pass = make() { best = (late, frame, rank, pass) }
        }
        /// Where a pass due at frame `due` runs: not before the oldest held
        /// frame, and not on a frame that has not arrived (unless draining).
        func target(_ due: Int) -> Int? {
            if due > newest.index { return draining ? newest.index : nil }
            return max(due, oldest.index)
        }
        for (id, follow) in follows.sorted(by: { $0.key < $1.key }) where !strict {
            if case .tracing(let f, let misses) = follow.behind, f > oldest.index, !inFlight.contains(.follow(track: id, backwards: true)) {
                // Backwards in the same steps as forwards (frames between are interpolated), one by one after a miss.
                let t = max(oldest.index, f - (misses > 0 ? 1 : followInterval(id)))
                offer(t, 0) { followPass(id, frame: t, backwards: true, misses: misses) }
            }
            if case .following(let misses) = follow.ahead, !inFlight.contains(.follow(track: id, backwards: false)) {
                let due = follow.checkedThrough + (misses > 0 ? 1 : followInterval(id))
                if follow.checkedThrough < newest.index, let t = target(due) {
                    offer(t, 1) { followPass(id, frame: t, backwards: false, misses: misses) }
                }
            }
        }
        for i in vouchingAreas where !inFlight.contains(i == 0 ? .whole : .tile(i)) {
            let area = areas[i]
            let every = i == 0 ? searches.wholeEvery : searches.tileEvery
            let due: Int
            // Searches of unchanged areas hold no frame back.
            var bestEffort = false
            if let last = area.lastSearch {
                if let dirty = area.dirtySince {
                    due = max(dirty, last + every)
                } else {
                    due = last + searches.recheckEvery
                    if due > newest.index { continue }   // unchanged: no search owed yet
                    bestEffort = true
                }
                if last >= newest.index { continue }
            } else {
                due = oldest.index
            }
            guard let t = target(due) else { continue }
            offer(t, i == 0 ? 2 : 3, bestEffort: bestEffort) { areaPass(i, on: t) }
        }
        // Picture that came in after an area's search and left before its next: searched on the
        // frame that shows most of it, as urgently as the oldest frame showing any of it. (Where
        // the camera turned back, each frame before the turn shows a little more of the strip:
        // searched oldest first, the frames would be searched one by one.)
        for i in vouchingAreas where !strict && !inFlight.contains(i == 0 ? .whole : .tile(i)) {
            var oldestShowing: Int?, most: (frame: Int, blocks: Int)?
            for frame in frames {
                let blocks = unvouchedBlocks(i, frame.index).count
                guard blocks > 0 else { continue }
                if oldestShowing == nil { oldestShowing = frame.index }
                if blocks > most?.blocks ?? 0 { most = (frame.index, blocks) }
            }
            guard let urgency = oldestShowing, let t = most?.frame else { continue }
            offer(urgency, i == 0 ? 2 : 3) { areaPass(i, on: t) }
        }
        return best?.pass
    }

    /// A search of area `i` (0: the whole frame) on held frame `t`.
    private func areaPass(_ i: Int, on t: Int) -> Pass? {
        guard let frame = frame(t) else { return nil }
        let area = areas[i]
        let reference = cells(of: area, in: frame)
        guard i != 0 else {
            // The frame and its mirrored margin, at the scale the frame alone would have.
            let pad = Double(searches.wholeFramePad)
            let padded = FaceRect(x: -pad, y: -pad, width: Double(width) + 2 * pad, height: Double(height) + 2 * pad)
            let inputWidth = min(searches.wholeWidth, ((width + 31) / 32) * 32) * Int(padded.width) / width
            return Pass(kind: .whole, frame: t, time: frame.time, region: padded,
                        input: FaceDetector.inputSize(forRegionWidth: Int(padded.width), height: Int(padded.height),
                                                      inputWidth: inputWidth),
                        keepAspect: false, reference: reference, travel: frame.travel, sceneEpoch: sceneEpoch)
        }
        return Pass(kind: .tile(i), frame: t, time: frame.time, region: area.rect,
                    input: (searches.tileWidth, searches.tileHeight), keepAspect: true, reference: reference,
                    travel: frame.travel, sceneEpoch: sceneEpoch)
    }

    /// A spare-time tile to search, on the newest frame, or nil when none
    /// is due (or each due one is being searched). First the tiles whose
    /// picture is most new (`unseenShare`: a pan or a pull-out brought it
    /// in since their last search, and with it faces no search has seen,
    /// which are in view for only a moment), then the one searched longest
    /// ago, so spare time sweeps the grid. A tile is due when a quarter of
    /// its picture is new, when it changed and was last searched
    /// `tileEvery` frames ago, or `recheckEvery` frames ago anyway. Its
    /// faces are traced back through the held frames by the regular
    /// passes, so searching the newest frame protects the older ones too.
    func nextSparePass() -> Pass? {
        guard let newest else { return nil }
        let spare = vouchingAreas.upperBound..<areas.count
        let due = spare.compactMap { i -> (unseen: Double, last: Int, area: Int)? in
            guard !inFlight.contains(.tile(i)) else { return nil }
            let unseen = unseenShare(i, on: newest)
            guard let last = areas[i].lastSearch else { return (unseen, Int.min, i) }
            guard unseen >= 0.25 || newest.index >= last + (areas[i].dirtySince != nil ? searches.tileEvery : searches.recheckEvery)
            else { return nil }
            return (unseen, last, i)
        }
        guard let i = due.min(by: { (-$0.unseen, $0.last, $0.area) < (-$1.unseen, $1.last, $1.area) })?.area
        else { return nil }
        return Pass(kind: .tile(i), frame: newest.index, time: newest.time, region: areas[i].rect,
                    input: (searches.tileWidth, searches.tileHeight), keepAspect: true, reference: cells(of: areas[i], in: newest),
                    travel: newest.travel, sceneEpoch: sceneEpoch)
    }

    /// The share of area `i`'s picture on `frame` that was outside the
    /// frame searched last time (the camera's travel between the two), in
    /// quarters: 1 when never searched.
    func unseenShare(_ i: Int, on frame: Frame) -> Double {
        guard areas[i].lastSearch != nil, let then = areas[i].searchedTravel else { return 1 }
        let seen = then.toFrame(frame.travel.toScene(areas[i].rect))
        let inside = seen.intersection(FaceRect(x: 0, y: 0, width: Double(width), height: Double(height)))?.area ?? 0
        return ((1 - inside / max(1, seen.area)) * 4).rounded(.down) / 4
    }

    /// Whether `kind` searches a spare-time tile.
    func isSpareTime(_ kind: Kind) -> Bool {
        if case .tile(let i) = kind { return !vouchingAreas.contains(i) }
        return false
    }

    /// Frames between two searches for track `id`: between them the tracker
    /// unites the two boxes, which covers any straight motion; the interval
    /// is short enough that the face moves at most half its size (should
    /// the next search miss it, the grown box of the last sighting still
    /// covers it), between 2 and `followEvery` frames.
    func followInterval(_ id: Int) -> Int {
        let list = tracker.observations(of: id)
        guard searches.followEvery > 2, list.count >= 2 else { return min(2, searches.followEvery) }
        let (a, b) = (list[list.count - 2], list[list.count - 1])
        let frames = max(1, Double(b.time - a.time) / Double(frameSpan))
        let dx = b.rect.center.x - a.rect.center.x, dy = b.rect.center.y - a.rect.center.y
        // The face's own motion in the scene, and a quarter of the camera's (its estimate may be off).
        let perFrame = (dx * dx + dy * dy).squareRoot() / frames + 0.25 * scene.cameraSpeed
        let size = min(b.rect.width, b.rect.height)
        guard perFrame > 0 else { return searches.followEvery }
        return max(2, min(searches.followEvery, Int(0.5 * size / perFrame)))
    }

    /// The square a follow searches around `box` (a face expected there):
    /// centred on it, reaching beyond an edge by up to `followReachBeyondEdge`
    /// (the picture is mirrored there), so a face leaving or entering is still
    /// found while half out of the picture; cut there, the square is a
    /// rectangle searched at the square's scale (the detector letterboxes
    /// it). Never larger than the frame and that margin. A face expected out
    /// of the picture (too little of the square would be picture) gets the
    /// square of the frame nearest to it instead, so that the follow still
    /// runs (and misses, if the face left).
    /// Whole pixels, each side rounded outwards: rounding the origin and the
    /// size apart can make a square 0 px inside the picture, which no
    /// search can run on: it would stay due and hold every other search back.
    static func followSquare(around box: FaceRect, side: Double, reachBeyondEdge: Double, width: Int, height: Int) -> FaceRect {
        let reach = min(side / 2, reachBeyondEdge * max(box.width, box.height))
        let (reachX, reachY) = (min(reach, Double(width) / 2), min(reach, Double(height) / 2))
        let x0 = max(-reachX, box.center.x - side / 2).rounded(.down), y0 = max(-reachY, box.center.y - side / 2).rounded(.down)
        let x1 = min(Double(width) + reachX, box.center.x + side / 2).rounded(.up)
        let y1 = min(Double(height) + reachY, box.center.y + side / 2).rounded(.up)
        let inside = (min(x1, Double(width)) - max(x0, 0), min(y1, Double(height)) - max(y0, 0))
        if x1 - x0 >= side / 2, y1 - y0 >= side / 2, inside.0 >= side / 4, inside.1 >= side / 4 {
            return FaceRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        }
        let w = min(side, Double(width)), h = min(side, Double(height))
        let x = max(0, min(box.center.x - w / 2, Double(width) - w)), y = max(0, min(box.center.y - h / 2, Double(height) - h))
        return FaceRect(x: x.rounded(.down), y: y.rounded(.down), width: w.rounded(.up), height: h.rounded(.up))
    }

    /// A search around track `id`'s expected place on frame `index`.
    private func followPass(_ id: Int, frame index: Int, backwards: Bool, misses: Int) -> Pass? {
        guard let frame = frame(index), let scene = tracker.predicted(id, at: frame.time) else { return nil }
        let box = frame.travel.toFrame(scene)
        let side = max(48, searches.followScale * max(box.width, box.height) * (1 + 0.5 * Double(misses)))
        let region = Self.followSquare(around: box, side: side, reachBeyondEdge: searches.followReachBeyondEdge, width: width, height: height)
        let templateAllowed = !backwards && misses == 0 && (follows[id]?.templateStreak ?? .max) < searches.templateFollows
        return Pass(kind: .follow(track: id, backwards: backwards), frame: index, time: frame.time, region: region,
                    input: (searches.followInput, searches.followInput), keepAspect: true, travel: frame.travel, sceneEpoch: sceneEpoch,
                    expected: box, mayUseTemplate: templateAllowed)
    }

    /// A detection thread took `pass`.
    mutating func begin(_ pass: Pass) { inFlight.append(pass.kind) }


    // MARK: Results

    /// A face the network found on a frame, and the track it went to (frame pixels).
    struct Sighting: Equatable { var track: Int; var rect: FaceRect }

    /// Records what `pass` found (face boxes in frame pixels); `byTemplate`:
    /// a follow answered by the face's template, not the network. Returns the
    /// network's sightings (templates are cut from them).
    @discardableResult
    mutating func record(_ pass: Pass, found: [FaceRect], byTemplate: Bool = false) -> [Sighting] {
        var found = found
        var sightings: [Sighting] = []
        if let i = inFlight.firstIndex(of: pass.kind) { inFlight.remove(at: i) }
        let frame = (index: pass.frame, time: pass.time)
        var pass = pass
        if pass.sceneEpoch != sceneEpoch {
            // The scene was rebased while the pass ran: its frame's transform into the new one.
            if let held = self.frame(pass.frame) {
                pass.travel = held.travel
            } else if let now = scene.current(pass.travel, readIn: pass.sceneEpoch) {
                pass.travel = now
            } else {
                found = []
            }
            pass.sceneEpoch = sceneEpoch
        }
        let faces = found
            .filter { !Self.touchesInnerEdge($0, of: pass.region, width: width, height: height, slack: Self.innerEdgeSlack(for: $0, foundBy: pass.kind)) }
            .filter { Self.shareInPicture($0, width: width, height: height) >= searches.minimumShareInside }
            .map(pass.travel.toScene)
        switch pass.kind {
        case .whole, .tile:
            let i: Int
            if case .tile(let t) = pass.kind { i = t } else { i = 0 }
            let vouches = vouchingAreas.contains(i)   // spare-time tiles vouch for no frame
            recentSearches.append(Search(area: i, frame: pass.frame, travel: pass.travel))
            searchesRecorded += 1
            ownCache()
            if pass.frame >= (areas[i].lastSearch ?? pass.frame) {
                areas[i].lastSearch = pass.frame
                areas[i].reference = pass.reference
                areas[i].searchedTravel = pass.travel
                areas[i].dirtySince = frames.first { $0.index > pass.frame && changed(i, $0) }?.index
                // The frames held after it that did not change since are vouched for too.
                for k in frames.indices where vouches && frames[k].index > pass.frame && frames[k].index < (areas[i].dirtySince ?? .max) {
                    frames[k].covered.insert(i)
                }
            }
            if vouches, let first = frames.first, pass.frame >= first.index, pass.frame - first.index < frames.count {
                frames[pass.frame - first.index].covered.insert(i)
            }
            let assigned = tracker.update(detections: faces, time: frame.time)
            sightings = zip(assigned, faces).map { Sighting(track: $0.0.id, rect: pass.travel.toFrame($0.1)) }
            note(assigned, frame: pass.frame, boxes: sightings.map(\.rect))
        case .follow(let id, let backwards):
            guard var follow = follows[id] else { return [] }
            let expected = tracker.predicted(id, at: frame.time)
            var rest = faces
            let match = expected.flatMap { e in
                rest.indices.filter { FaceTracker.distance(e, rest[$0]) < 1 }
                    .min { FaceTracker.distance(e, rest[$0]) < FaceTracker.distance(e, rest[$1]) }
            }
            // The face found may be another track's (faces crossing, or this one found twice): seen
            // there by it, or expected nearer by it. A face lost behind someone, searched for in an
            // ever wider square, would otherwise take a passer-by's face for its own, and the region
            // between the two faces' boxes hide the picture between them.
            var owner: Int?, expectedElsewhere = false
            if let match, let e = expected {
                owner = tracker.owner(of: rest[match], at: frame.time, excluding: id, within: frameSpan * UInt64(searches.followEvery))
                if owner == nil {
                    owner = tracker.expectsNearer(rest[match], at: frame.time, than: FaceTracker.distance(e, rest[match]), excluding: id)
                    expectedElsewhere = owner != nil
                }
            }
            var merged = false
            if let o = owner, follows[o] != nil {
                if tracker.agree(id, o) && tracker.agree(o, id) {
                    merged = true
                    follow = merge(o, into: id, follow, at: frame.time)
                }
            }
            if let match, owner == nil || merged {
                let rect = rest.remove(at: match)
                tracker.add(rect, to: id, time: frame.time)
                if byTemplate {
                    follow.templateStreak += 1
                } else {
                    follow.templateStreak = 0
                    sightings.append(Sighting(track: id, rect: pass.travel.toFrame(rect)))
                }
                if backwards {
                    follow.found(behindOn: pass.frame, merged: merged)
                } else {
                    follow.found(aheadOn: pass.frame)
                }
            } else {
                // Not found (or someone else's face there, in front of it: faces crossing). One seen
                // there by another track is that track's sighting already; one another track expects
                // goes to the tracks with the rest.
                if let match, owner != nil, !expectedElsewhere { rest.remove(at: match) }
                if backwards {
                    if follow.missed(behindOn: pass.frame, giveUpAfter: searches.backtraceMisses) {
                        tracker.markGone(id, at: frame.time, afterLastSighting: false)
                    }
                } else if follow.missed(aheadOn: pass.frame, giveUpAfter: searches.followMisses) {
                    tracker.markGone(id, at: frame.time, afterLastSighting: true)
                }
            }
            follow.framesLeft(through: oldest?.index ?? 0)
            follows[id] = follow
            // Other faces in the square: other tracks, or new ones.
            let assigned = tracker.update(detections: rest, time: frame.time)
            let others = zip(assigned, rest).map { Sighting(track: $0.0.id, rect: pass.travel.toFrame($0.1)) }
            note(assigned, frame: pass.frame, boxes: others.map(\.rect))
            sightings += others
        }
        return sightings
    }

    /// Frame duration estimate (for "within a few frames").
    private var frameSpan: UInt64 {
        guard frames.count >= 2, let a = frames.first, let b = frames.last, b.time > a.time else { return 33_333_333 }
        return (b.time - a.time) / UInt64(frames.count - 1)
    }

    /// Folds track `other` (the same face) into `id`; returns `id`'s follow state.
    private mutating func merge(_ other: Int, into id: Int, _ mine: Follow, at time: UInt64) -> Follow {
        let earlier = (tracker.observations(of: other).first?.time ?? .max) < time
        tracker.merge(other, into: id)
        var f = mine
        if let o = follows.removeValue(forKey: other) {
            f.absorb(o, otherIsEarlier: earlier, giveUpAfter: searches.followMisses)
        }
        return f
    }

    /// Starts or refreshes the follows of the tracks `assignments` gave the faces found on frame
    /// `index` (`boxes`, in its pixels, in the same order).
    private mutating func note(_ assignments: [FaceTracker.Assignment], frame index: Int, boxes: [FaceRect]) {
        for (a, box) in zip(assignments, boxes) {
            if a.isNew || follows[a.id] == nil {
                // Follow it from here on, and trace it back through the held frames.
                follows[a.id] = Follow(foundOn: index, traceBack: index > (oldest?.index ?? index))
                follows[a.id]!.foundReachingBeyondEdge = Self.shareInPicture(box, width: width, height: height) < 1
            } else {
                // A sighting on a frame before the follow's latest search says nothing of where the
                // face is now: the misses after it stand. (A search of an older frame that finishes
                // late, such as the search of picture no search saw, would otherwise restart the count
                // of a face that left through an edge, while its region went on growing beside it.)
                follows[a.id]!.found(aheadOn: index)
                follows[a.id]!.templateStreak = 0   // the network found it: its template is fresh
            }
        }
    }

}
