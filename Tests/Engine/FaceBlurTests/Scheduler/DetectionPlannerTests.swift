import XCTest
@testable import FaceBlur

/// The pass schedule without a detector: change gating, the settle rule,
/// following and tracing faces back.
final class DetectionPlannerTests: XCTestCase {
    static let (width, height) = (320, 184)
    static let frameNs: UInt64 = 33_333_333
    static let blocksPerRow = (width + 7) / 8, blockRows = (height + 7) / 8

    func planner() -> DetectionPlanner {
        var s = PrivacyTuning.plannerTests
        s.searches.wholeEvery = 4
        s.searches.tileEvery = 8
        s.searches.recheckEvery = 30
        s.searches.followEvery = 4
        s.searches.tileWidth = 192
        s.searches.tileHeight = 128
        return DetectionPlanner(tuning: s, width: Self.width, height: Self.height)
    }

    /// Block means of a flat grey picture, with `changed` blocks (column, row) brighter.
    func blocks(_ changed: [(Int, Int)] = []) -> [UInt8] {
        var b = [UInt8](repeating: 100, count: Self.blocksPerRow * Self.blockRows)
        for (c, r) in changed { b[r * Self.blocksPerRow + c] = 150 }
        return b
    }

    func add(_ p: inout DetectionPlanner, _ index: Int, _ changed: [(Int, Int)] = []) {
        p.add(index: index, time: UInt64(index) * Self.frameNs, blocks: blocks(changed))
    }

    /// Runs every pass due now, finding `faces(pass)` in each.
    @discardableResult
    func runDue(_ p: inout DetectionPlanner, faces: (DetectionPlanner.Pass) -> [FaceRect] = { _ in [] }) -> [DetectionPlanner.Pass] {
        var ran: [DetectionPlanner.Pass] = []
        while let pass = p.nextPass(), ran.count < 100 {
            p.begin(pass)
            p.record(pass, found: faces(pass))
            ran.append(pass)
        }
        return ran
    }

    func testTheFirstFrameIsSearchedWhole_AndAnUnchangedPictureNotAgain() {
        var p = planner()
        add(&p, 0)
        XCTAssertFalse(p.isSettled(0), "nothing searched yet")
        let first = runDue(&p)
        XCTAssertEqual(first.first?.kind, .whole)
        XCTAssertEqual(first.filter { if case .tile = $0.kind { return true } else { return false } }.count,
                       DetectionPlanner.tiles(width: Self.width, height: Self.height, tileWidth: 192, tileHeight: 128).count)
        XCTAssertTrue(first.allSatisfy { $0.frame == 0 })
        XCTAssertTrue(p.isSettled(0))
        for i in 1...20 { add(&p, i) }
        XCTAssertTrue(runDue(&p).isEmpty, "the same picture holds no new face")
        XCTAssertTrue((1...20).allSatisfy(p.isSettled))
    }

    func testAChangeIsSearchedAfterTheIntervalAndFramesWaitForIt() {
        var p = planner()
        add(&p, 0)
        runDue(&p)
        add(&p, 1, [(1, 1)])             // something moved in the top-left corner
        for i in 2...3 { add(&p, i, [(1, 1)]) }
        XCTAssertTrue(runDue(&p).isEmpty, "not before wholeEvery frames after the last search")
        XCTAssertTrue(p.isSettled(0))
        XCTAssertFalse(p.isSettled(1), "the changed frames wait")
        add(&p, 4, [(1, 1)])
        let ran = runDue(&p)
        XCTAssertEqual(ran.map(\.kind), [.whole])
        XCTAssertEqual(ran.first?.frame, 4)
        XCTAssertFalse(p.isSettled(1), "offline, the changed tile must be searched too")
        for i in 5...8 { add(&p, i, [(1, 1)]) }
        let tiles = runDue(&p)
        XCTAssertEqual(tiles.map(\.kind), [.tile(1)], "only the tile where the picture changed")
        XCTAssertEqual(tiles.first?.frame, 8)
        XCTAssertTrue((0...8).allSatisfy(p.isSettled))
    }

    func testAFrameLeavingUnsettledHidesOnlyWhatChangedSinceTheLastSearch() {
        var p = planner()
        add(&p, 0)
        XCTAssertEqual(p.unconfirmedCells(0, cell: 32).reduce(0) { $0 + $1.width * $1.height },
                       Double(Self.width * Self.height), "nothing searched yet: all of it")
        runDue(&p)
        XCTAssertTrue(p.unconfirmedCells(0, cell: 32).isEmpty, "searched: nothing to hide")
        // Something moves at block (5, 9) (pixels 40…47, 72…79) from frame 1 on; no search has run since.
        for i in 1...3 { add(&p, i, [(5, 9)]) }
        XCTAssertFalse(p.isSettled(2))
        let cells = p.unconfirmedCells(2, cell: 32)
        // Grown by one block: blocks 4…6 × 8…10, i.e. pixels 32…55 × 64…87, all in one 32-pixel cell.
        XCTAssertEqual(cells, [FaceRect(x: 32, y: 64, width: 32, height: 32)],
                       "the one cell of the grid holding the changed block and its neighbours")
        add(&p, 4, [(5, 9), (39, 22)])
        let edge = p.unconfirmedCells(4, cell: 32)
        XCTAssertEqual(edge.last, FaceRect(x: 288, y: 160, width: 32, height: 24), "cells at the edge are clipped to the frame")
        p.drain()   // the tiles' next searches are due later: run them now
        runDue(&p)
        XCTAssertTrue((0...4).allSatisfy { p.unconfirmedCells($0, cell: 32).isEmpty }, "searched again: confirmed")
    }

    /// A slow detector: the whole-frame searches on frames 4 and 8 find a face crossing fast (a box size
    /// every 4 frames), but its trace back and its follow never come back. Frames leaving late before and after
    /// the sighting hide where the face may have gone, not only the tracker's region (which assumes a
    /// search looked for it nearby).
    func testALateFrameHidesWhereAFaceNotYetLookedForOnItMayHaveGone() {
        var p = planner()
        add(&p, 0)
        runDue(&p)
        func face(at i: Int) -> FaceRect { FaceRect(x: 20 + Double(10 * i), y: 60, width: 40, height: 48) }
        func changed(_ i: Int) -> [(Int, Int)] {
            let f = face(at: i)
            return (Int(f.y) / 8...Int(f.maxY) / 8).flatMap { r in (Int(f.x) / 8...Int(f.maxX) / 8).map { ($0, r) } }
        }
        for i in 1...11 { add(&p, i, changed(i)) }
        var stuck: [DetectionPlanner.Pass] = []
        while let pass = p.nextPass() {
            p.begin(pass)
            if case .follow = pass.kind { stuck.append(pass); continue }   // never answered
            let f = face(at: pass.frame)
            p.record(pass, found: pass.frame >= 4 && pass.region.intersection(f)?.area == f.area ? [f] : [])
        }
        XCTAssertTrue(stuck.contains { if case .follow(_, true) = $0.kind { return true } else { return false } }, "a trace back was due")
        XCTAssertTrue(stuck.contains { if case .follow(_, false) = $0.kind { return true } else { return false } }, "a follow was due")
        for i in [1, 2, 3, 9, 10, 11] {   // before the first sighting; after the last (the whole frame, every 4)
            XCTAssertFalse(p.isSettled(i), "frame \(i) waits for the face's searches")
            let hidden = p.unconfirmedCells(i, cell: 32) + p.regions(forFrame: i)
            let f = face(at: i)
            let points = stride(from: f.x + 1, to: f.maxX, by: 2).flatMap { x in stride(from: f.y + 1, to: f.maxY, by: 2).map { (x, $0) } }
            let bare = points.filter { x, y in !hidden.contains { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY } }
            XCTAssertTrue(bare.isEmpty, "frame \(i): the face at \(f) is hidden whole when the frame leaves late: \(hidden)")
        }
        // Around the face, not the whole picture: the corners far from it stay visible.
        let reach = p.pendingFaceReach(11)
        XCTAssertFalse(reach.isEmpty, "frame 11 waits for the face's follow")
        for (x, y) in [(2.0, 2.0), (Double(Self.width) - 2, Double(Self.height) - 2), (2.0, Double(Self.height) - 2)] {
            XCTAssertFalse(reach.contains { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY }, "(\(x), \(y)) hidden by \(reach)")
        }
    }

    /// `tileScale` 1.5: tiles of two thirds the size, enlarged 1.5× for the network (faces of ~15 px become
    /// findable), still covering every pixel with neighbours overlapping by at least 64 px.
    func testEnlargedTilesCoverTheFrameInSmallerPiecesAtTheSameNetworkInput() {
        var s = PrivacyTuning.plannerTests
        s.searches.tileScale = 1.5
        let (width, height) = (1280, 720)
        var p = DetectionPlanner(tuning: s, width: width, height: height)
        let tiles = p.areas.dropFirst().map(\.rect)
        XCTAssertEqual(tiles.count, 20, "5 × 4 tiles of 320 × 277 px instead of 3 × 2 of 480 × 416")
        XCTAssertTrue(tiles.allSatisfy { $0.width == 320 && $0.height == 277 }, "\(tiles)")
        for y in stride(from: 0, to: height, by: 7) {
            for x in stride(from: 0, to: width, by: 7) {
                // A 64 px face anywhere lies whole inside some tile.
                let face = FaceRect(x: Double(min(x, width - 64)), y: Double(min(y, height - 64)), width: 64, height: 64)
                XCTAssertTrue(tiles.contains { $0.intersection(face)?.area == face.area }, "\(face) is whole in a tile")
            }
        }
        p.add(index: 0, time: 0, blocks: [UInt8](repeating: 100, count: (width / 8) * (height / 8)))
        let passes = runDue(&p).filter { if case .tile = $0.kind { return true } else { return false } }
        XCTAssertEqual(passes.count, 20)
        XCTAssertTrue(passes.allSatisfy { $0.input == (480, 416) && $0.keepAspect }, "the network sees each tile enlarged 1.5×")
    }

    /// Spare-time tiles: a second, finer grid that no frame waits for. The
    /// spare-time thread takes them one by one on the newest frame, never
    /// searched ones first; an unchanged picture owes them nothing; after a
    /// pan, the tile whose picture came in with it goes first; and what they
    /// find is followed and traced back like any face.
    func testSpareTimeTilesHoldNoFrameBackAndSearchWhatIsNewFirst() {
        var s = PrivacyTuning.plannerTests
        s.searches.tileEvery = 16
        s.searches.spareTileScale = 1.5
        let (width, height) = (1280, 720)
        var p = DetectionPlanner(tuning: s, width: width, height: height)
        XCTAssertEqual(p.vouchingAreas, 0..<7, "the whole frame and 3 × 2 regular tiles")
        XCTAssertEqual(p.areas.count, 7 + 20, "and 5 × 4 spare-time tiles")
        let flat = [UInt8](repeating: 100, count: (width / 8) * (height / 8))
        p.add(index: 0, time: 0, blocks: flat)
        let regular = runDue(&p)
        XCTAssertTrue(regular.allSatisfy { !p.isSpareTime($0.kind) }, "regular passes never include spare-time tiles")
        XCTAssertTrue(p.isSettled(0), "no frame waits for a spare-time tile")
        for i in 1...3 { p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: flat) }
        var swept: [Int] = []
        while let pass = p.nextSparePass() {
            guard case .tile(let i) = pass.kind, p.isSpareTime(pass.kind), swept.count < 30 else { return XCTFail("\(pass.kind)") }
            XCTAssertEqual(pass.frame, 3, "on the newest frame")
            XCTAssertEqual(pass.input.width, 480, "the regular tiles' network input, for a tile two thirds their size")
            XCTAssertEqual(pass.region.width, 320)
            p.begin(pass)
            p.record(pass, found: [])
            swept.append(i)
        }
        XCTAssertEqual(Set(swept).count, 20, "each spare-time tile once, then none owed on an unchanged picture")
        // The camera pans left by 160 px: the left column of spare tiles shows what no search saw.
        var moved = flat
        for r in 0..<(height / 8) { for c in 0..<(160 / 8) { moved[r * (width / 8) + c] = 160 } }
        p.add(index: 4, time: 4 * Self.frameNs, blocks: moved, cameraMotion: Similarity(a: 1, b: 0, tx: 160, ty: 0))
        let next = p.nextSparePass()
        XCTAssertEqual(next?.region.x, 0, "the tile at the edge the picture came in at goes first: \(String(describing: next))")
        // A face found there is followed and traced back by the regular passes.
        if let next {
            let face = FaceRect(x: next.region.x + 40, y: next.region.y + 40, width: 18, height: 22)
            p.begin(next)
            p.record(next, found: [face])
            XCTAssertTrue(p.follows.values.contains { $0.isPending(on: 5) || $0.frontier != nil || $0.checkedThrough == 4 })
            XCTAssertTrue(p.regions(forFrame: 4).contains { $0.intersection(face)?.area == face.area }, "hidden where found")
        }
    }

    /// The whole frame is searched mirrored beyond its edges, and so is the
    /// square around a followed face at an edge, by half a face: a face half
    /// out of the picture looks whole enough to be found. A box found mostly
    /// in the mirrored margin is a mirror image, not a face.
    func testSearchesReachBeyondTheEdgeWhereThePictureIsMirrored() {
        var p = planner()
        add(&p, 0)
        let whole = p.nextPass()
        XCTAssertEqual(whole?.kind, .whole)
        let pad = Double(PrivacyTuning.live.searches.wholeFramePad)
        XCTAssertEqual(whole?.region, FaceRect(x: -pad, y: -pad, width: Double(Self.width) + 2 * pad, height: Double(Self.height) + 2 * pad))
        guard let whole else { return }
        // A face half out on the left, and a mirror image (nearly all in the margin) on the right.
        let half = FaceRect(x: -20, y: 60, width: 40, height: 48)
        let mirror = FaceRect(x: Double(Self.width) - 6, y: 60, width: 40, height: 48)
        p.begin(whole)
        p.record(whole, found: [half, mirror])
        runDue(&p)
        let regions = p.regions(forFrame: 0)
        XCTAssertTrue(regions.contains { $0.intersection(half)?.area == half.area }, "the half face is hidden: \(regions)")
        XCTAssertFalse(regions.contains { $0.maxX > Double(Self.width) - 20 }, "the mirror image is not: \(regions)")
        // Its follow reaches beyond the edge, centred on it.
        add(&p, 1, [(0, 7), (0, 8), (1, 7), (1, 8)])
        add(&p, 2, [(0, 7), (0, 8), (1, 7), (1, 8)])
        var follow: DetectionPlanner.Pass?
        while let pass = p.nextPass() {
            p.begin(pass)
            if case .follow(_, false) = pass.kind { follow = pass; break }
            p.record(pass, found: [])
        }
        // Past the edge by half a face (further, the mirror images around a cut face hid it), at the
        // square's scale: centred on the face, its height is the square's side.
        guard let follow else { return XCTFail("no follow") }
        let reach = PrivacyTuning.live.searches.followReachBeyondEdge * half.height
        XCTAssertEqual(follow.region.x, -reach, accuracy: 1, "the follow reaches past the left edge by half a face: \(follow)")
        XCTAssertGreaterThan(follow.region.height, follow.region.width + reach, "the square, cut at the reach: \(follow)")
        XCTAssertLessThan(abs(follow.region.center.y - half.center.y), 2, "centred on the face: \(follow)")
        XCTAssertLessThan(abs(follow.region.maxX - (half.center.x + follow.region.height / 2)), 2, "centred on the face: \(follow)")
    }

    func testAFaceFoundLateIsTracedBackAndFollowed() {
        var p = planner()
        add(&p, 0)
        runDue(&p)
        // A face walks in from the left from frame 1 on, 4 px per frame; the whole-frame pass on frame 4 finds it.
        func face(at i: Int) -> FaceRect { FaceRect(x: Double(4 * i), y: 60, width: 40, height: 48) }
        var log: [DetectionPlanner.Pass] = []
        for i in 1...12 {
            add(&p, i, [(i / 2, 8), (i / 2 + 1, 8)])
            log += runDue(&p) { pass in
                let f = face(at: pass.frame)
                return pass.frame >= 1 && pass.region.intersection(f)?.area == f.area ? [f] : []
            }
        }
        let back = log.filter { if case .follow(_, true) = $0.kind { return true } else { return false } }
        XCTAssertFalse(back.isEmpty, "traced back from where it was found")
        XCTAssertTrue(back.contains { $0.frame < 4 })
        let forward = log.filter { if case .follow(_, false) = $0.kind { return true } else { return false } }
        XCTAssertFalse(forward.isEmpty, "followed after")
        for pass in back + forward {
            let f = face(at: pass.frame)
            XCTAssertNotNil(pass.region.intersection(f), "searched where the face is: \(pass)")
            XCTAssertTrue(pass.keepAspect)
            XCTAssertEqual(pass.input.width, 96)
        }
        XCTAssertTrue((1...8).allSatisfy(p.isSettled))
        // Frames before it was found are covered where it was, not guessed.
        for i in 1...3 {
            let regions = p.tracker.regions(at: UInt64(i) * Self.frameNs)
            XCTAssertTrue(regions.contains { $0.intersection(face(at: i))?.area == face(at: i).area }, "frame \(i): \(regions)")
        }
    }

    /// The detector finds a face only whole and with some picture around it,
    /// so a face crossing the frame's edge is found once well inside and lost
    /// while still partly in view.
    /// Its part in the picture is hidden on every frame anyway (the region
    /// reaches the edge it crosses), and the rest of the picture stays as it is.
    func testAFaceCrossingTheFramesEdgeIsHiddenWhileTheDetectorCannotSeeItWhole() {
        var p = planner()
        add(&p, 0)
        runDue(&p)
        let (width, height) = (Double(Self.width), Double(Self.height))
        // Enters from the right (frames 1–14), crosses, leaves on the left (from frame 46 on), 8 px per frame.
        func face(at i: Int) -> FaceRect { FaceRect(x: width - 8 * Double(i), y: 60, width: 40, height: 48) }
        func visible(_ f: FaceRect) -> FaceRect? { f.intersection(FaceRect(x: 0, y: 0, width: width, height: height)) }
        func findable(_ pass: DetectionPlanner.Pass) -> [FaceRect] {
            let f = face(at: pass.frame)
            let inside = FaceRect(x: 20, y: 20, width: width - 40, height: height - 40)
            return inside.intersection(f)?.area == f.area && pass.region.intersection(f)?.area == f.area ? [f] : []
        }
        let last = 50
        var left: [FaceRect] = []
        for i in 1...last {
            let f = visible(face(at: i))
            let changed = f.map { f in (Int(f.y) / 8...Int(f.maxY - 1) / 8).flatMap { r in (Int(f.x) / 8...Int(f.maxX - 1) / 8).map { ($0, r) } } } ?? []
            add(&p, i, changed)
            runDue(&p, faces: findable)
            while let oldest = p.oldest, p.isSettled(oldest.index) {
                if oldest.index >= 1, let f = visible(face(at: oldest.index)) {
                    let regions = p.regions(forFrame: oldest.index)
                    XCTAssertTrue(regions.contains { $0.intersection(f)?.area == f.area },
                                  "frame \(oldest.index): the face's visible part \(f) is hidden: \(regions)")
                    left.append(contentsOf: regions)
                }
                p.removeOldest()
            }
        }
        XCTAssertFalse(left.isEmpty)
        XCTAssertTrue(left.allSatisfy { $0.y > 20 && $0.maxY < height - 20 }, "a strip across to the edge, not the whole edge: \(left)")
    }

    /// The camera tilts up for three frames, then back down: a strip of picture comes in at the
    /// top edge after the tiles' search on frame 0 and leaves through it before their next, on
    /// frame 8. The search on frame 8 vouches for what it saw, not for that strip: the top tiles are
    /// searched again on the frame that shows most of it, and the frames showing any of it wait for
    /// that; a frame that must leave
    /// first hides the strip, not the whole tile. A steady tilt (picture leaving through the edge
    /// opposite the one it came in at, searched further in before) costs no such search.
    func testPictureThatCameAndWentBetweenTwoSearchesIsSearchedOnTheFramesThatShowedIt() {
        let tilt = { (dy: Double) in Similarity(a: 1, b: 0, tx: 0, ty: dy) }
        // A moving camera changes every block.
        let moving = { (i: Int) in [UInt8](repeating: i % 2 == 0 ? 100 : 120, count: Self.blocksPerRow * Self.blockRows) }
        let topTiles = Set(p0TopTiles())
        func p0TopTiles() -> [Int] {
            let p = planner()
            return p.vouchingAreas.filter { $0 != 0 && p.areas[$0].rect.y == 0 }
        }
        var p = planner()
        add(&p, 0)
        runDue(&p)
        let motion: [Int: Double] = [1: 10, 2: 10, 3: 10, 4: -10, 5: -10, 6: -10]
        var late: [DetectionPlanner.Pass] = []
        for i in 1...8 {
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: moving(i), cameraMotion: tilt(motion[i] ?? 0))
            if i == 8 {
                // The passes due on frame 8 run; those on earlier frames are still running.
                var running: [DetectionPlanner.Pass] = []
                while let pass = p.nextPass(), running.count < 20 {
                    p.begin(pass)
                    if pass.frame == 8 { p.record(pass, found: []) } else { running.append(pass) }
                }
                XCTAssertTrue(topTiles.allSatisfy { t in running.contains { $0.kind == .tile(t) } }, "\(running.map { "\($0.kind)@\($0.frame)" })")
                XCTAssertFalse(p.isSettled(3), "frame 3 shows picture no search saw")
                XCTAssertTrue(p.isSettled(1), "frame 1's strip (10 px) is still in frame 8's picture, give or take a block")
                let unvouched = p.unvouchedBlocks(topTiles.first!, 3)
                XCTAssertFalse(unvouched.isEmpty)
                XCTAssertTrue(unvouched.allSatisfy { $0.row < 4 }, "the 30 px strip at the top only: \(unvouched)")
                let cells = p.unconfirmedCells(3, cell: 8)
                XCTAssertFalse(cells.isEmpty)
                XCTAssertTrue(cells.allSatisfy { $0.maxY <= 8 * (4 + Double(PrivacyTuning.live.hiding.unvouchedGrowth)) },
                              "hidden if it must leave: the strip grown by a small face, not the tile: \(cells)")
                for pass in running { p.record(pass, found: []) }
                late += running
            }
            late += runDue(&p).filter { $0.frame < i }
        }
        let searchedAgain = late.compactMap { pass -> Int? in
            if case .tile(let t) = pass.kind, topTiles.contains(t) { return pass.frame }
            return nil
        }
        XCTAssertEqual(searchedAgain, [3, 3], "each top tile once, on frame 3, which shows all of the strip (frame 2 shows part of it): \(late.map { "\($0.kind)@\($0.frame)" })")
        XCTAssertTrue((0...8).allSatisfy(p.isSettled))
        XCTAssertTrue((0...8).allSatisfy { p.unconfirmedCells($0, cell: 8).isEmpty })

        var steady = planner()
        add(&steady, 0)
        runDue(&steady)
        var steadyLate: [DetectionPlanner.Pass] = []
        for i in 1...24 {
            steady.add(index: i, time: UInt64(i) * Self.frameNs, blocks: moving(i), cameraMotion: tilt(3))
            steadyLate += runDue(&steady).filter { $0.frame < i }
        }
        XCTAssertEqual(steadyLate.map(\.kind), [], "a steady tilt: every search on the newest frame")
    }

    /// A hand-held roll turns the picture's corners out of every other frame's: each frame shows
    /// slivers at its corners that no other frame does, too thin for a face. They are not searched
    /// for (searched, they held most frames of the roll back, one search each); what a turn of the
    /// roll shows deep enough to hold a face is, once per corner tile.
    func testARollingCameraCostsAtMostACornerTileSearchAtEachTurn() {
        var s = PrivacyTuning.plannerTests
        (s.searches.wholeEvery, s.searches.tileEvery, s.searches.recheckEvery) = (16, 24, 60)
        let (width, height) = (1280, 720)
        var p = DetectionPlanner(tuning: s, width: width, height: height)
        let corners = Set(p.vouchingAreas.filter { i in
            let r = p.areas[i].rect
            return i != 0 && (r.x == 0 || r.maxX == Double(width)) && (r.y == 0 || r.maxY == Double(height))
        })
        XCTAssertEqual(corners.count, 4)
        // Rolling about the centre, up to 0.6° a frame, turning every 20 frames, with a slight zoom.
        func roll(_ degrees: Double, zoom: Double) -> Similarity {
            let (a, b) = (cos(degrees * .pi / 180) * zoom, sin(degrees * .pi / 180) * zoom)
            return Similarity(a: a, b: b, tx: 640 - (a * 640 - b * 360), ty: 360 - (b * 640 + a * 360))
        }
        var late: [DetectionPlanner.Pass] = []
        for i in 0..<120 {
            let phase = Double(i) / 40 * 2 * .pi
            let motion = i == 0 ? Similarity.identity : roll(0.6 * cos(phase), zoom: 1 + 0.004 * sin(phase))
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: [UInt8](repeating: i % 2 == 0 ? 100 : 120, count: (width / 8) * (height / 8)),
                  cameraMotion: motion)
            late += runDue(&p).filter { $0.frame < i }
            while let oldest = p.oldest, p.isSettled(oldest.index), i - oldest.index > 30 { p.removeOldest() }
        }
        let described = late.map { "\($0.kind)@\($0.frame)" }
        XCTAssertTrue(late.allSatisfy { if case .tile(let t) = $0.kind { return corners.contains(t) } else { return false } }, "\(described)")
        XCTAssertLessThanOrEqual(late.count, 2 * corners.count, "the turns that showed more than slivers, once per corner tile: \(described)")
    }

    func testAFaceThatIsNoLongerFoundStopsHoldingFramesBack() {
        var p = planner()
        add(&p, 0)
        let face = FaceRect(x: 100, y: 60, width: 40, height: 48)
        runDue(&p) { $0.kind == .whole ? [face] : [] }
        XCTAssertEqual(p.follows.count, 1)
        // Gone from frame 1 on: a few misses, then it is lost (the tracker's hold still covers it).
        for i in 1...12 { add(&p, i, [(13, 9)]); runDue(&p) }
        XCTAssertTrue(p.follows.values.allSatisfy(\.isLost))
        XCTAssertTrue((0...12).allSatisfy(p.isSettled))
        XCTAssertFalse(p.tracker.regions(at: 10 * Self.frameNs).isEmpty, "held")
    }

    /// A search of an older frame that finishes after the face's follows
    /// began to miss (a slow detection thread; the search of picture no
    /// search saw) finds the face where it was then: that does not undo the
    /// misses after it. The face is lost at its third miss in a row, as it
    /// would have been without that search, and gone from there.
    func testAnOlderFramesLateSightingDoesNotUndoTheMissesAfterIt() throws {
        var p = planner()
        add(&p, 0)
        let face = FaceRect(x: 100, y: 60, width: 40, height: 48)
        let present = 0...4
        runDue(&p) { $0.kind == .whole ? [face] : [] }
        var late: DetectionPlanner.Pass?, missesBeforeIt = 0
        for i in 1...16 {
            add(&p, i, [(i % 2 == 0 ? 30 : 31, 18)])   // the picture changes far from the face: whole-frame passes are due
            while let pass = p.nextPass() {
                p.begin(pass)
                // The whole-frame search of frame 4 (the face still there) is slow: it finishes after two misses.
                if pass.kind == .whole, pass.frame == 4, late == nil { late = pass; continue }
                p.record(pass, found: present.contains(pass.frame) ? [face] : [])
            }
            if let pass = late, let follow = p.follows.values.first, follow.missesAhead == 2, missesBeforeIt == 0 {
                missesBeforeIt = follow.missesAhead
                p.record(pass, found: [face])
                XCTAssertEqual(p.follows.values.first?.missesAhead, 2, "frame \(i): the misses after frame 4 stand")
            }
        }
        XCTAssertEqual(missesBeforeIt, 2, "the slow search finished between the second and third miss")
        let follow = try XCTUnwrap(p.follows.values.first)
        XCTAssertTrue(follow.isLost)
        let lastSeen = Int(try XCTUnwrap(p.tracker.observations(of: p.follows.keys.first!).last).time / Self.frameNs)
        XCTAssertEqual(lastSeen, present.upperBound)
        XCTAssertLessThanOrEqual(follow.checkedThrough, lastSeen + p.searches.followEvery + 2,
                                 "lost at the third miss in a row: at most a follow interval and two frames after the last sighting")
        XCTAssertFalse(p.regions(forFrame: 16).contains { $0.intersection(face) != nil }, "gone in mid-picture: not hidden")
    }

    /// A face searched for where it was expected and not found, again and
    /// again, went behind someone or left: from the last miss on its region is
    /// no longer hidden, though the tracker's hold still covers it (before,
    /// a face behind a passer-by kept its region, grown, for the whole hold).
    /// Near an edge it stays hidden (a face half out of the picture is not
    /// found either: the face near the edge, not only its region's margin),
    /// and a face found again is hidden again.
    func testAFaceSearchedForAndNotFoundIsNoLongerHiddenExceptNearAnEdge() {
        var p = planner()
        add(&p, 0)
        let middle = FaceRect(x: 140, y: 70, width: 40, height: 48), atEdge = FaceRect(x: 2, y: 70, width: 40, height: 48)
        let regionNearEdge = FaceRect(x: 200, y: 40, width: 50, height: 60)   // its margin reaches the top edge, not the face
        runDue(&p) { $0.kind == .whole ? [middle, atEdge, regionNearEdge] : [] }
        XCTAssertEqual(p.follows.count, 3)
        for i in 1...12 { add(&p, i, [(13, 1)]); runDue(&p) }
        XCTAssertTrue(p.follows.values.allSatisfy(\.isLost))
        let firstMiss = 1, gone = p.follows.values.map(\.checkedThrough).max()!
        XCTAssertLessThan(gone, 12)
        func hides(_ face: FaceRect, _ i: Int) -> Bool {
            p.regions(forFrame: i).contains { $0.intersection(face)?.area == face.area }
        }
        for i in firstMiss..<gone {
            XCTAssertTrue(hides(middle, i) && hides(atEdge, i) && hides(regionNearEdge, i), "frame \(i), before searches gave up: all hidden")
            XCTAssertTrue(p.regions(forFrame: i).contains { $0.x <= 0 }, "frame \(i): the face at the edge, to the edge")
            XCTAssertFalse(p.regions(forFrame: i).contains { $0.y <= 0 }, "frame \(i): no face is near the top edge, no region reaches it")
        }
        for i in gone...12 {
            XCTAssertFalse(p.regions(forFrame: i).contains { $0.intersection(middle) != nil || $0.intersection(regionNearEdge) != nil },
                           "frame \(i): gone, not hidden")
            XCTAssertTrue(hides(atEdge, i), "frame \(i): near the edge, still hidden")
            XCTAssertEqual(p.tracker.regions(at: UInt64(i) * Self.frameNs).count, 3, "the tracker's hold is unchanged")
        }
        // Found again by a whole-frame pass: hidden again.
        var refound: Int?
        for i in 13...24 where refound == nil {
            add(&p, i, i % 2 == 0 ? [(13, 1)] : [(14, 1)])   // the picture changes: whole-frame passes are due
            for pass in runDue(&p, faces: { $0.kind == .whole ? [middle] : [] }) where pass.kind == .whole { refound = pass.frame }
        }
        XCTAssertTrue(hides(middle, try XCTUnwrap(refound)))
    }

    /// A box found once half in the mirrored margin beyond the edge, and by
    /// no search around it since, forwards or back, was a mirror image: once
    /// the searches gave up, it is not hidden at the edge for the rest of the
    /// hold, before its sighting or after. A face found there twice before
    /// it was lost, and a face found once inside the picture at the edge,
    /// still are (a face cut by the edge is not found).
    func testABoxFoundOnceInTheMirroredMarginAndNeverAgainIsNotHeldAtTheEdge() {
        var p = planner()
        add(&p, 0)
        let mirror = FaceRect(x: -20, y: 20, width: 40, height: 48)
        let cutTwice = FaceRect(x: -20, y: 110, width: 40, height: 48)
        let inside = FaceRect(x: Double(Self.width) - 44, y: 20, width: 40, height: 48)
        // Found by the whole-frame search of frame 4 alone: traced back and followed in vain.
        let lateMirror = FaceRect(x: Double(Self.width) - 20, y: 110, width: 40, height: 48)
        runDue(&p) { $0.kind == .whole ? [mirror, cutTwice, inside] : [] }
        for i in 1...14 {
            add(&p, i, [(20, 1)])
            runDue(&p) { pass in
                if pass.kind == .whole && pass.frame == 4 { return [lateMirror] }
                // The face cut by the edge is found again by its first follow (frame 2), then no more.
                return pass.frame <= 2 && pass.region.intersection(cutTwice) != nil ? [cutTwice] : []
            }
        }
        XCTAssertEqual(p.follows.count, 4)
        XCTAssertTrue(p.follows.values.allSatisfy(\.isLost))
        XCTAssertEqual(p.follows.keys.map { p.tracker.observations(of: $0).count }.sorted(), [1, 1, 1, 2],
                       "the cut face found twice, the others once")
        let gone = p.follows.values.map(\.checkedThrough).max()!
        XCTAssertLessThan(gone, 14)
        let picture = FaceRect(x: 0, y: 0, width: Double(Self.width), height: Double(Self.height))
        func hidden(_ face: FaceRect, _ i: Int) -> Bool {
            p.regions(forFrame: i).contains { $0.intersection(face.intersection(picture)!) != nil }
        }
        for i in 1..<3 { XCTAssertTrue(hidden(mirror, i), "frame \(i), before the searches gave up: hidden") }
        XCTAssertTrue(hidden(lateMirror, 3), "frame 3, beside its sighting, where its trace back had not given up: hidden")
        XCTAssertFalse(hidden(lateMirror, 1), "frame 1, where its trace back gave up: a mirror image, gone")
        for i in gone...14 {
            XCTAssertFalse(hidden(mirror, i) || hidden(lateMirror, i), "frame \(i): mirror images, gone")
            XCTAssertTrue(hidden(cutTwice, i), "frame \(i): found twice, held at the edge")
            XCTAssertTrue(hidden(inside, i), "frame \(i): found once inside the picture, held at the edge")
        }
    }

    /// Frames 0 to `last` (30) with block `changing` changed on each (and the camera
    /// moving by `cameraMotion` from frame to frame): `face(i)` is
    /// found on the frames `seenOn` (by the whole-frame search on frame 0,
    /// then by its follow), and not after. Returns the planner and the frame
    /// its follow gave up on, within 7 frames of the last sighting.
    func followUntilLost(_ face: (Int) -> FaceRect, seenOn seen: ClosedRange<Int>, changing: (Int, Int),
                         cameraMotion: Similarity = .identity, through last: Int = 30) throws -> (DetectionPlanner, gone: Int) {
        var p = planner()
        add(&p, 0)
        runDue(&p) { $0.kind == .whole ? [face(0)] : [] }
        for i in 1...last {
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: blocks([changing]), cameraMotion: cameraMotion)
            runDue(&p) { seen.contains($0.frame) ? [face($0.frame)] : [] }
        }
        let gone = try XCTUnwrap(p.follows.values.first { $0.isLost }).checkedThrough
        XCTAssertLessThan(gone, seen.upperBound + 8)
        return (p, gone)
    }

    /// A walker who stopped being found in mid-picture (behind someone) is
    /// gone from there: its motion, carried on for the hold, would reach the
    /// edge, but it cannot have left the picture from a place it never got to.
    func testAFaceGoneInMidPictureIsNotKeptWhereItsMotionWouldHaveTakenIt() throws {
        // 40 px wide, walking left 5 px a frame: found on frames 0 to 4, then not any more.
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 110 - 5 * Double(i), y: 70, width: 40, height: 48) }
        let seen = 0...4
        let (p, gone) = try followUntilLost(walker, seenOn: seen, changing: (13, 1))
        for i in seen.upperBound + 1..<gone {
            XCTAssertTrue(p.regions(forFrame: i).contains { $0.intersection(walker(i))?.area == walker(i).area }, "frame \(i): held")
        }
        // Half a second after its last sighting its motion leads within a face size of the left edge.
        XCTAssertLessThan(walker(19).x, 24)
        for i in gone...30 {
            XCTAssertEqual(p.regions(forFrame: i), [], "frame \(i): gone in mid-picture, hidden nowhere (not to the edge)")
        }
    }

    /// The same with a steady motion to go by (sightings a third of a second long): searched for in
    /// mid-picture where that motion put it and not found, it is not brought back at the edge its
    /// motion reaches later in the hold. On the fixed clip such a region, of a track that had taken
    /// two faces' boxes, hid the street at the top edge for half a second.
    func testAWalkerGoneInMidPictureIsNotHiddenAtTheEdgeItsSteadyMotionReaches() throws {
        // 40×48, walking left 5 px a frame: found on frames 0 to 10, then not any more.
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 150 - 5 * Double(i), y: 70, width: 40, height: 48) }
        let seen = 0...10
        let (p, gone) = try followUntilLost(walker, seenOn: seen, changing: (13, 1), through: 40)
        XCTAssertNotNil(p.tracker.steadyMotion(p.tracker.observations(of: try XCTUnwrap(p.follows.keys.first)), fromFirst: false),
                        "its motion is known")
        let zone = PrivacyTuning.live.hiding.edgeReach * 48
        XCTAssertGreaterThan(walker(gone).x, zone, "gone in mid-picture")
        let reachesEdge = try XCTUnwrap((gone...40).first { walker($0).x <= zone })
        XCTAssertLessThan(reachesEdge, 38, "its motion reaches the edge before the hold ends")
        for i in gone...40 {
            XCTAssertEqual(p.regions(forFrame: i), [], "frame \(i): gone in mid-picture, hidden nowhere (not at the edge)")
        }
    }

    /// A face that stops being found (it went behind someone) is searched for in a widening square;
    /// a passer-by coming to where it stood, whose own track expects it there, stays the passer-by's,
    /// not the lost face's: taken for it, the region between the two faces' boxes hid the street
    /// between them (the fixed clip).
    func testAFaceLostBehindSomeoneIsNotHandedAPasserBysFaceThatItsOwnTrackExpects() throws {
        var p = planner()
        let standing = FaceRect(x: 150, y: 70, width: 40, height: 48)
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 80 + 4 * Double(i), y: 70, width: 40, height: 48) }
        func visible(_ i: Int) -> [FaceRect] { (i <= 4 ? [standing] : []) + [walker(i)] }
        add(&p, 0)
        runDue(&p) { $0.kind == .whole ? visible(0) : [] }
        let ids = p.tracker.trackIDs
        let standingTrack = try XCTUnwrap(ids.first { p.tracker.observations(of: $0).first?.rect == standing })
        let walkerTrack = try XCTUnwrap(ids.first { p.tracker.observations(of: $0).first?.rect == walker(0) })
        // The detector misses the walker for a while in every search but the lost face's wider square
        // (a face found in one crop and not in another), so that it was last seen longer ago than a
        // follow's interval when that square finds it.
        let missed = 5...14
        var walkerInStandingsFollow = 0
        for i in 1...24 {
            add(&p, i, [(13, 1)])
            let passes = runDue(&p) { pass in
                let inSquare = visible(pass.frame).filter { pass.region.intersection($0)?.area == $0.area }
                if case .follow(standingTrack, false) = pass.kind { return inSquare }
                return missed.contains(pass.frame) ? [] : inSquare
            }
            for pass in passes {
                if case .follow(standingTrack, false) = pass.kind, pass.region.intersection(walker(pass.frame))?.area == walker(pass.frame).area,
                   FaceTracker.distance(standing, walker(pass.frame)) < 1 { walkerInStandingsFollow += 1 }
            }
        }
        XCTAssertGreaterThan(walkerInStandingsFollow, 0, "the test reaches searches for the lost face that find the walker near where it stood")
        for o in p.tracker.observations(of: standingTrack) {
            XCTAssertEqual(o.rect, standing, "the lost face's track holds only its own sightings")
        }
        XCTAssertGreaterThan(try XCTUnwrap(p.tracker.observations(of: walkerTrack).last).time, UInt64(missed.upperBound) * Self.frameNs,
                             "the walker's own track goes on")
    }

    /// A face lost at an edge stays hidden near where the searches lost it
    /// (what is left of it there is too little to find, or it moved on a
    /// little), not over the stretch its motion, carried on for the whole
    /// hold, would sweep: on the crowd clip that stretch hid the picture
    /// along the edges (`bench/live-faces --offline crowd`: 111 of 300
    /// frames hid picture beyond the faces, 53 after).
    func testAFaceLostAtAnEdgeIsHiddenWhereItWasLostNotWhereItsMotionLeads() throws {
        // Half out at the left edge, sliding down it 4 px a frame: found on frames 0 to 4, then not any more.
        func slider(_ i: Int) -> FaceRect { FaceRect(x: -20, y: 20 + 4 * Double(i), width: 40, height: 48) }
        let (p, gone) = try followUntilLost(slider, seenOn: 0...4, changing: (1, 1))
        let margin = p.tracker.settings.margin, growth = p.tracker.settings.maxGoneGrowth
        for i in gone...30 {
            let regions = p.regions(forFrame: i)
            XCTAssertEqual(regions.count, 1, "frame \(i): near the edge, still hidden")
            let region = try XCTUnwrap(regions.first)
            XCTAssertLessThanOrEqual(region.x, 0, "frame \(i): to the edge")
            let lost = slider(gone).intersection(FaceRect(x: 0, y: 0, width: 320, height: 184))!
            XCTAssertEqual(region.intersection(lost)?.area, lost.area, "frame \(i): where it was lost")
            XCTAssertLessThanOrEqual(region.maxY, slider(gone).maxY + (margin + growth) * 48 + 8,
                                     "frame \(i): not half a second of its motion further (\(slider(gone + 15).maxY)): \(region)")
        }
    }

    /// A walker who crossed a still camera's picture and was lost at its
    /// edge leaves through it at least at a stroll (`leavingPace`), whatever
    /// the boxes the edge cut say of its motion: on the fixed clip a walker's
    /// last boxes stood still (or moved inwards) while it went out, and its
    /// region stayed at the edge for up to half a second after it had left.
    func testAWalkerLostAtTheEdgeItWalkedToLeavesThroughIt() throws {
        // 40×48, walking right 8 px a frame from mid-picture, then found as the boxes the right edge
        // cuts, which do not move: found on frames 0 to 30, then not any more.
        func seen(_ i: Int) -> FaceRect {
            i <= 14 ? FaceRect(x: 150 + 8 * Double(i), y: 70, width: 40, height: 48)
                : i <= 16 ? FaceRect(x: 290, y: 70, width: 30, height: 48) : FaceRect(x: 300, y: 70, width: 20, height: 48)
        }
        let lastSeen = 30
        let (p, gone) = try followUntilLost(seen, seenOn: 0...lastSeen, changing: (13, 1), through: 60)
        var left = 0
        for i in gone...60 {
            let regions = p.regions(forFrame: i)
            XCTAssertFalse(regions.contains { $0.x < seen(lastSeen).x - 0.6 * 48 }, "frame \(i): not carried inwards: \(regions)")
            let strolled = PrivacyTuning.live.hiding.leavingPace * 48 * Double(i - lastSeen) / 30
            if seen(lastSeen).x + strolled >= 320 { XCTAssertEqual(regions, [], "frame \(i): it could have left"); left += 1 }
            // The trace log's account of each region: searched for and gone, kept at the edge.
            XCTAssertEqual(p.hiddenRegions(forFrame: i).map(\.rule), regions.isEmpty ? [] : [.gone], "frame \(i)")
        }
        XCTAssertGreaterThan(left, 5, "the test reaches frames where it could have left, before the hold ends")
        XCTAssertEqual(p.hiddenRegions(forFrame: lastSeen - 5).map(\.rule), [.sighted], "between sightings")
    }

    /// The trace log's form of a hidden region, which `bench/live_faces.py attribute` reads
    /// (`TRACED_REGION`) to say which rule hid the picture: change both together.
    func testATracedRegionNamesItsTrackAndRuleInTheFormTheBenchReads() {
        let edge = HiddenRegion(rect: FaceRect(x: -3.4, y: 20, width: 40.6, height: 48), track: 7, rule: .gone,
                                                 reachesEdge: true)
        XCTAssertEqual("\([edge, HiddenRegion(rect: FaceRect(x: 5, y: 6, width: 7, height: 8), track: 12, rule: .sighted)])",
                       "[track 7 gone to the edge (-3,20 41x48), track 12 sighted (5,6 7x8)]")
    }

    /// A face that appeared at an edge and was lost there is not taken for
    /// one leaving: it may be coming in, slower than a stroll, and stays
    /// hidden where its sightings put it (on the fixed clip, pushed out, a
    /// face entering slowly at the right edge was left unhidden for three
    /// frames before it was found again).
    func testAFaceComingInSlowlyAtAnEdgeAndLostThereIsNotPushedOut() throws {
        // 40×48, half out at the right edge, coming in 1 px a frame: found on frames 0 to 9, then not any more.
        func face(_ i: Int) -> FaceRect { FaceRect(x: 300 - Double(i), y: 70, width: 40, height: 48) }
        let (p, gone) = try followUntilLost(face, seenOn: 0...9, changing: (13, 1))
        for i in gone...30 {
            let inPicture = face(i).intersection(FaceRect(x: 0, y: 0, width: 320, height: 184))!
            XCTAssertTrue(p.regions(forFrame: i).contains { $0.intersection(inPicture)?.area == inPicture.area },
                          "frame \(i): \(inPicture) hidden: \(p.regions(forFrame: i))")
        }
    }

    /// For a walker lost while leaving the picture: on each frame from `gone` to 30, what is left of
    /// it in the picture is hidden, and once it and its grown region (`grown`) are out, nothing is.
    /// Returns how many frames it had left on.
    @discardableResult
    func checkLeaving(_ p: DetectionPlanner, _ walker: (Int) -> FaceRect, from gone: Int, grown: Double,
                      file: StaticString = #filePath, line: UInt = #line) -> Int {
        let picture = FaceRect(x: 0, y: 0, width: Double(Self.width), height: Double(Self.height))
        var left = 0
        for i in gone...30 {
            if let inPicture = walker(i).intersection(picture) {
                XCTAssertTrue(p.regions(forFrame: i).contains { $0.intersection(inPicture)?.area == inPicture.area },
                              "frame \(i): what is left of it is hidden", file: file, line: line)
            } else if walker(i).maxX + grown < 0 {
                XCTAssertEqual(p.regions(forFrame: i), [], "frame \(i): it left, and its region with it", file: file, line: line)
                left += 1
            }
        }
        return left
    }

    /// A face lost at an edge while walking out of a still camera's picture
    /// goes on walking: its region is carried along its own steady motion
    /// and leaves the picture with it, instead of staying where the searches
    /// lost it for the whole hold (on the fixed clip, walkers leaving at the
    /// edges kept the picture there hidden for up to a second).
    func testAFaceWalkingOutOfAStillPictureTakesItsRegionWithIt() throws {
        // 40 px wide, walking left 3 px a frame across the left edge: found on frames 0 to 9 (17 px
        // of it still in the picture), then not any more.
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 4 - 3 * Double(i), y: 70, width: 40, height: 48) }
        let (p, gone) = try followUntilLost(walker, seenOn: 0...9, changing: (13, 1))
        let grown = (p.tracker.settings.margin + p.tracker.settings.maxGoneGrowth) * 40
        checkLeaving(p, walker, from: gone, grown: grown)
        XCTAssertLessThan(walker(30).maxX + grown, 0, "the test reaches frames where it is gone")
    }

    /// With the camera moving, a face's motion through the scene mixes its
    /// own with the camera model's error (carried on, that error took
    /// regions off faces that stood still, on the moving clips): a face lost
    /// at an edge then stays hidden where it was lost, for the whole hold.
    func testAFaceLostWhileTheCameraMovesIsNotCarriedAlongItsMotion() throws {
        // The same walker, while the camera pans: the picture moves a pixel right each frame.
        let pan = Similarity(a: 1, b: 0, tx: 1, ty: 0)
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 4 - 3 * Double(i), y: 70, width: 40, height: 48) }
        let (p, gone) = try followUntilLost(walker, seenOn: 0...9, changing: (13, 1), cameraMotion: pan)
        var checked = 0
        for i in gone...30 {
            // Where it was lost, carried by the camera's pan since.
            guard let lost = FaceRect(x: walker(gone).x + Double(i - gone), y: 70, width: 40, height: 48)
                .intersection(FaceRect(x: 0, y: 0, width: 320, height: 184)) else { continue }
            checked += 1
            XCTAssertTrue(p.regions(forFrame: i).contains { $0.intersection(lost)?.area == lost.area },
                          "frame \(i): hidden where it was lost: \(p.regions(forFrame: i))")
        }
        XCTAssertGreaterThan(checked, 10)
    }

    /// A face lost at an edge while the camera moves stays where it was last seen (carried by the
    /// camera's motion), not also where its sightings' motion leads when the searches gave up: under
    /// a moving camera that motion is mostly the camera model's error. In a whip-pan on the crowd
    /// clip, the region of a face that had left through the left edge came back into the picture,
    /// four times the face's width (`bench/live-faces --offline --attribute crowd`).
    func testAFaceLostWhileTheCameraMovesIsHiddenWhereItWasLastSeen() throws {
        // Half out at the left edge, its boxes sliding down 4 px a frame while the picture moves a
        // pixel right each frame: found on frames 0 to 4, then not any more.
        let pan = Similarity(a: 1, b: 0, tx: 1, ty: 0)
        func slider(_ i: Int) -> FaceRect { FaceRect(x: -20 + Double(i), y: 20 + 4 * Double(i), width: 40, height: 48) }
        let lastSeen = 4
        let (p, gone) = try followUntilLost(slider, seenOn: 0...lastSeen, changing: (13, 1), cameraMotion: pan)
        XCTAssertGreaterThan(gone, lastSeen + 2, "its motion would have led it a face height further by then")
        let grown = (p.tracker.settings.margin + p.tracker.settings.maxGoneGrowth) * 48
        var checked = 0
        for i in gone...30 {
            let seen = slider(lastSeen).offsetBy(dx: Double(i - lastSeen), dy: 0)   // carried by the pan
            guard let inPicture = seen.intersection(FaceRect(x: 0, y: 0, width: 320, height: 184)) else { continue }
            checked += 1
            let regions = p.regions(forFrame: i)
            XCTAssertTrue(regions.contains { $0.intersection(inPicture)?.area == inPicture.area }, "frame \(i): where it was last seen: \(regions)")
            XCTAssertFalse(regions.contains { $0.maxY > seen.maxY + grown + 1 }, "frame \(i): not where its motion led: \(regions)")
        }
        XCTAssertGreaterThan(checked, 10)
    }

    /// A face the camera turns away from and back to is hidden where the camera brings it back,
    /// although that is later than the hold after its last sighting: no search could look for it
    /// while it was out of the picture. (The moving clip: a face carried out through the left edge
    /// came back through the top, half out and beyond the detector, after its hold had run out.)
    func testAFaceTheCameraTurnsAwayFromAndBackToIsHiddenWhereItComesBack() {
        var p = planner()
        let face = FaceRect(x: 20, y: 70, width: 40, height: 48)
        // Seen on frames 0–4; the camera pans it out through the left edge (frames 5–12), stays
        // there for a second, and pans back until it is four fifths in (frames 41–48).
        func motion(_ i: Int) -> Similarity {
            switch i {
            case 5...12: return Similarity(a: 1, b: 0, tx: -10, ty: 0)
            case 41...48: return Similarity(a: 1, b: 0, tx: 6.5, ty: 0)
            default: return .identity
            }
        }
        var x = face.x
        var back: [Int: FaceRect] = [:]
        for i in 0...70 {
            x += motion(i).tx
            p.add(index: i, time: UInt64(i) * Self.frameNs, blocks: blocks([(13, 1)]), cameraMotion: motion(i))
            runDue(&p) { $0.frame <= 4 ? [face] : [] }
            if i > 48 { back[i] = FaceRect(x: x, y: face.y, width: face.width, height: face.height) }
        }
        XCTAssertEqual(x, -8, accuracy: 0.01)
        let hold = Int(p.tracker.settings.holdNs / Self.frameNs)
        XCTAssertGreaterThan(49, 4 + hold, "back after the hold from its last sighting had run out")
        let picture = FaceRect(x: 0, y: 0, width: Double(Self.width), height: Double(Self.height))
        for i in 49...60 {
            let inPicture = back[i]!.intersection(picture)!
            let regions = p.regions(forFrame: i)
            XCTAssertTrue(regions.contains { $0.intersection(inPicture)?.area ?? 0 >= inPicture.area - 1 },
                          "frame \(i): hidden where the camera brought it back (\(inPicture)): \(regions)")
        }
    }

    /// A face coming up into the picture through its bottom edge is found once (nearly) whole and
    /// traced back until the searches lose it at the edge. Before its first sighting it is hidden
    /// at the edge it came through, and its region reaches no further in than that sighting and
    /// the margin: grown all round, it hid the street above the first sighting (the fixed clip,
    /// offline, `bench/live-faces --offline --attribute fixed`).
    func testAFaceComingInThroughAnEdgeIsHiddenBeforeItsFirstSightingNoFurtherInThanItWasSeen() throws {
        var p = planner()
        add(&p, 0)
        runDue(&p)
        let (width, height) = (Double(Self.width), Double(Self.height))
        // 40×48, coming up 10 px a frame from below the bottom edge, then standing with its chin 10 px above it.
        func face(at i: Int) -> FaceRect { FaceRect(x: 140, y: max(height - 58, height + 20 - 10 * Double(i)), width: 40, height: 48) }
        func visible(_ f: FaceRect) -> FaceRect? { f.intersection(FaceRect(x: 0, y: 0, width: width, height: height)) }
        func findable(_ pass: DetectionPlanner.Pass) -> [FaceRect] {
            let f = face(at: pass.frame)
            return pass.frame >= 1 && f.maxY <= height - 4 && pass.region.intersection(f)?.area == f.area ? [f] : []
        }
        for i in 1...24 {
            let f = visible(face(at: i))
            let changed = f.map { f in (Int(f.y) / 8...Int(f.maxY - 1) / 8).flatMap { r in (Int(f.x) / 8...Int(f.maxX - 1) / 8).map { ($0, r) } } } ?? []
            add(&p, i, changed + [(1, 1)])
            runDue(&p, faces: findable)
        }
        let id = try XCTUnwrap(p.tracker.trackIDs.first)
        let first = try XCTUnwrap(p.tracker.observations(of: id).first)
        let firstSeen = Int(first.time / Self.frameNs)
        XCTAssertEqual(first.rect, face(at: firstSeen))
        XCTAssertGreaterThan(firstSeen, 3, "the test reaches frames before the first sighting with the face in the picture")
        let margin = p.tracker.settings.margin * first.rect.height
        var gone = 0
        for i in 1..<firstSeen {
            let regions = p.hiddenRegions(forFrame: i)
            if let f = visible(face(at: i)) {
                XCTAssertTrue(regions.contains { $0.rect.intersection(f)?.area == f.area }, "frame \(i): its part in the picture \(f) is hidden: \(regions)")
            }
            // Before the trace back gave it up, where its motion leads, grown all round (no search said yet that it came in).
            guard regions.contains(where: { $0.rule == .gone }) else { continue }
            gone += 1
            XCTAssertFalse(regions.contains { $0.rect.y < first.rect.y - margin - 0.5 },
                           "frame \(i): no further from the edge than its first sighting \(first.rect) and the margin: \(regions)")
        }
        XCTAssertGreaterThan(gone, 3, "the test reaches frames where the trace back gave the face up")
    }

    /// A follow's square always holds picture, wherever the face is
    /// expected, at every fraction of a pixel. (One came out 0 px inside the
    /// picture, (-86, 521, 86×171) for a face expected 85.2 px left of the
    /// frame: its origin and size were rounded apart. No search could run
    /// on it, it stayed due and held every other search back, and the
    /// offline `blur` of the crowd clip hung in one run of six.)
    func testAFollowSearchesPictureWhereverTheFaceIsExpected() {
        let (width, height) = (1280, 720)
        let picture = FaceRect(x: 0, y: 0, width: Double(width), height: Double(height))
        let hung = DetectionPlanner.followSquare(around: FaceRect(x: -85.2 - 28, y: 572.3, width: 56, height: 68.4),
                                                 side: 171, reachBeyondEdge: 0.5, width: width, height: height)
        XCTAssertGreaterThan(hung.intersection(picture)?.area ?? 0, 0, "\(hung)")
        for side in [48, 113.5, 170.25, 171, 227] {
            for centre in stride(from: -300.0, through: 1600, by: 0.05) {
                let box = FaceRect(x: centre - side / 5, y: centre / 2, width: side / 2.5, height: side / 2.5)
                let square = DetectionPlanner.followSquare(around: box, side: side, reachBeyondEdge: 0.5, width: width, height: height)
                let inside = square.intersection(picture)
                if (inside?.width ?? 0) < side / 4 || (inside?.height ?? 0) < side / 4 {
                    XCTFail("side \(side), face centred at (\(centre), \(centre / 2)): \(square) holds \(inside.map { "\($0)" } ?? "no picture")")
                    return
                }
            }
        }
    }

    /// Between two network runs on a face, at most `templateFollows` forward
    /// follows may be answered by its template; then the network looks again
    /// (a template that drifted is corrected), and traces back always use it.
    func testTemplatesAnswerAtMostTheirShareOfFollowsAndTheNetworkAnchorsThem() {
        var p = planner()
        add(&p, 0)
        let face = FaceRect(x: 100, y: 60, width: 40, height: 48)
        runDue(&p) { $0.kind == .whole ? [face] : [] }
        var kinds: [(template: Bool, may: Bool)] = []
        for i in 1...40 {
            add(&p, i, [(13, 9)])
            while let pass = p.nextPass() {
                p.begin(pass)
                guard case .follow(_, let backwards) = pass.kind else { p.record(pass, found: []); continue }
                XCTAssertFalse(backwards && pass.mayUseTemplate, "a trace back is the network's")
                let byTemplate = pass.mayUseTemplate
                if !backwards { kinds.append((byTemplate, pass.mayUseTemplate)) }
                let sightings = p.record(pass, found: [face], byTemplate: byTemplate)
                XCTAssertEqual(sightings.isEmpty, byTemplate, "the network's sightings are returned (templates are cut from them), the template's are not")
            }
        }
        XCTAssertGreaterThan(kinds.count, 6)
        // Never more than templateFollows template answers in a row.
        var run = 0
        for k in kinds {
            run = k.template ? run + 1 : 0
            XCTAssertLessThanOrEqual(run, p.searches.templateFollows)
        }
        XCTAssertTrue(kinds.contains { $0.template } && kinds.contains { !$0.template })
        XCTAssertTrue((0...36).allSatisfy(p.isSettled))
    }

    /// `when_behind = lower_fps`: a frame counts as searched only when it was
    /// searched itself (or did not change since); a later search does not
    /// vouch for it, and nothing is followed between searches.
    func testStrictModeVouchesOnlyForFramesSearchedThemselves() {
        var s = PrivacyTuning.plannerTests
        s.searches.wholeEvery = 1
        s.searches.tileEvery = 1
        s.searches.tileWidth = 192
        s.searches.tileHeight = 128
        var p = DetectionPlanner(tuning: s, strict: true, width: Self.width, height: Self.height)
        add(&p, 0)
        let face = FaceRect(x: 100, y: 60, width: 40, height: 48)
        runDue(&p) { $0.kind == .whole ? [face] : [] }
        XCTAssertTrue(p.isSettled(0))
        for i in 1...3 { add(&p, i, [(i, 1)]) }   // something changes on every frame
        XCTAssertFalse(p.isSettled(1))
        let ran = runDue(&p) { $0.kind == .whole ? [face] : [] }
        XCTAssertFalse(ran.contains { if case .follow = $0.kind { return true } else { return false } }, "nothing is followed: \(ran.map(\.kind))")
        XCTAssertEqual(Set(ran.filter { $0.kind == .whole }.map(\.frame)), [1, 2, 3], "each changed frame searched whole itself")
        XCTAssertTrue((0...3).allSatisfy(p.isSettled), "\((0...3).map(p.isSettled)) \(ran.map { "\($0.kind)@\($0.frame)" })")
        // Unchanged since frame 3 was searched: vouched for without another search.
        add(&p, 4, [(3, 1)])
        XCTAssertTrue(p.isSettled(4))
        XCTAssertTrue(runDue(&p).isEmpty)
    }
}
