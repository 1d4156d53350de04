import Foundation

/// When a held frame may leave: what vouches for it, what holds it back, and what a frame
/// that must leave unsettled hides besides its faces.
extension DetectionPlanner {
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
    func sightWindow(_ i: Int) -> Int { 2 * (i == 0 ? searches.wholeEvery : max(searches.wholeEvery, searches.tileEvery)) }

    /// How long a search is remembered after the oldest frame held passed it.
    var searchMemory: Int { 2 * max(searches.wholeEvery, searches.tileEvery) }

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

    func computeUnvouchedBlocks(_ i: Int, frame: Frame, coveringTravel then: Travel) -> [(column: Int, row: Int)] {
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

    /// What holds frame `index` back, for a log line: the areas not
    /// covering it and the follows still pending on it, with the state that
    /// decides when their next search is due.
    func holdUp(_ index: Int) -> String {
        var parts = ["frames \(oldest?.index ?? -1)…\(newest?.index ?? -1)", "in flight \(inFlight)"]
        for i in vouchingAreas where !areaCovers(i, index) {
            parts.append("area \(i): last search \(areas[i].lastSearch.map(String.init) ?? "none"), dirty since \(areas[i].dirtySince.map(String.init) ?? "none"), \(unvouchedBlocks(i, index).count) blocks out of its sight")
        }
        for (id, f) in tracker.follows where f.isPending(on: index) {
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
        return !tracker.anyFollow { $0.isPending(on: index) }
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
        let pending = Set(tracker.follows.compactMap { id, follow in follow.isPending(on: index) ? id : nil })
        guard !pending.isEmpty else { return [] }
        let reach = hiding.pendingReach
        return tracker.reaches(of: pending, at: frame.time) { sightings in
            let pace = sightings >= 2 ? reach.knownMotion : reach.unknownMotion
            return (pace.speed, pace.growth)
        }.map(frame.travel.toFrame)
    }
}
