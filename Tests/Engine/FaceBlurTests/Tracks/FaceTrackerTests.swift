import XCTest
@testable import FaceBlur
import RecorderCore

final class FaceTrackerTests: XCTestCase {
    let second: UInt64 = 1_000_000_000
    var settings: PrivacyTuning.Tracking {
        var s = PrivacyTuning.Tracking()
        s.margin = 0.25
        s.motion = 1.0
        s.holdNs = second
        s.lookAheadNs = second / 2
        s.maxMotionGrowth = 0.5
        return s
    }

    func testCoversAFaceBetweenDetectionsGrowingWithTheGap() {
        var tracker = FaceTracker(settings: settings)
        let face = FaceRect(x: 100, y: 100, width: 40, height: 40)
        tracker.update(detections: [face], time: 10 * second)
        let atDetection = tracker.regions(at: 10 * second)
        XCTAssertEqual(atDetection, [face.expanded(by: 0.25)])
        let later = tracker.regions(at: 10 * second + second / 10)
        XCTAssertEqual(later.count, 1)
        XCTAssertEqual(later[0], face.expanded(by: 0.35), "grows by motion × gap")
        XCTAssertEqual(tracker.regions(at: 10 * second - second / 4).count, 1, "look-ahead: hidden before it was first seen")
        XCTAssertEqual(tracker.regions(at: 10 * second - second).count, 0, "but not long before")
        XCTAssertEqual(tracker.regions(at: 11 * second + 1).count, 0, "released after the hold")
        XCTAssertEqual(tracker.regions(at: 11 * second), [face.expanded(by: 0.75)], "motion growth is capped")
    }

    /// While the camera keeps a face out of the picture (where no search can look) its hold is
    /// stretched, up to `maxHeldOutOfSightNs`; a face found near it after the plain hold is a new
    /// track, not that face seen again (the stretch hides, it does not identify).
    func testAFaceOutOfSightIsHeldLongerButTakesNoDetectionPastItsHold() {
        var tracker = FaceTracker(settings: settings)
        let face = FaceRect(x: 100, y: 100, width: 40, height: 40)
        tracker.update(detections: [face], time: 10 * second)
        let step = second / 10
        for k in 1...20 {
            let t = 10 * second + UInt64(k) * step
            tracker.noteCamera(moving: true, at: t)
            tracker.holdWhileOutOfSight(at: t, for: step) { _ in k <= 5 }   // out of sight for half a second
        }
        XCTAssertEqual(tracker.regions(at: 11 * second + second / 2).count, 1, "held half a second longer")
        XCTAssertEqual(tracker.regions(at: 11 * second + second / 2 + 1).count, 0, "and no more")
        let assigned = tracker.update(detections: [face], time: 11 * second + second / 4)
        XCTAssertEqual(assigned, [FaceTracker.Assignment(id: 2, isNew: true)], "past the plain hold: a new track")

        // Under a still camera a face out of sight walked out: its hold is not stretched.
        var still = FaceTracker(settings: settings)
        still.update(detections: [face], time: 10 * second)
        still.holdWhileOutOfSight(at: 10 * second + step, for: step) { _ in true }
        XCTAssertEqual(still.regions(at: 11 * second + 1).count, 0)
    }

    /// A fast face seen twice far apart: between the sightings it is hidden where the line from one
    /// to the other puts it, grown by the margin and motion in face sizes; not over the stretch
    /// between them (which hides a stripe of the street a walker crossed), and not by a share of
    /// that stretch (which hides the picture around fast faces).
    func testAFastFacesRegionFollowsTheLineBetweenSightingsGrownByTheFace() {
        // Two face sizes in 0.3 s: a fast walker close to the camera.
        let a = FaceRect(x: 100, y: 100, width: 40, height: 40)
        let b = FaceRect(x: 180, y: 100, width: 40, height: 40)
        var follow = FaceTracker(settings: settings)
        let id = follow.update(detections: [a], time: second)[0].id
        follow.add(b, to: id, time: second + 3 * second / 10)
        let between = follow.regions(at: second + 3 * second / 20)
        let grow = 0.25 + 1.0 * 0.15   // margin + motion × the distance to the nearest sighting
        XCTAssertEqual(between, [FaceRect(x: 140 - 40 * grow, y: 100 - 40 * grow, width: 40 + 80 * grow, height: 40 + 80 * grow)])
        XCTAssertNotEqual(between, [a.union(b).expanded(by: grow)], "not a share of the stretch")
    }

    /// Under a moving camera the places of a face's sightings carry the camera model's error, which
    /// does not move along a line (a whip-pan): between two sightings the region spans both, as before.
    func testBetweenSightingsUnderAMovingCameraTheRegionSpansBoth() {
        var tracker = FaceTracker(settings: settings)
        let a = FaceRect(x: 100, y: 100, width: 40, height: 40), b = FaceRect(x: 180, y: 100, width: 40, height: 40)
        let id = tracker.update(detections: [a], time: second)[0].id
        for frame in 1...9 { tracker.noteCamera(moving: true, at: second + UInt64(frame) * second / 30) }
        tracker.add(b, to: id, time: second + 3 * second / 10)
        let between = tracker.regions(at: second + 3 * second / 20)
        XCTAssertEqual(between.count, 1)
        for seen in [a, b] {
            XCTAssertEqual(between.first?.intersection(seen)?.area, seen.area, "\(seen) inside \(between)")
        }
    }

    /// Two sightings of clearly different sizes (one a partial box: the detector found part of the
    /// face, or a follow fitted its template to part of it) do not say where the face is between
    /// them: the region spans both. On the moving clip a line between a whole face and a box of half
    /// its height left the face's lower part unhidden for three frames.
    func testBetweenSightingsOfDifferentSizesTheRegionSpansBoth() {
        // A face standing still, then found as its upper half, or as its left half (someone in front of its right).
        let whole = FaceRect(x: 100, y: 100, width: 40, height: 60)
        for part in [FaceRect(x: 100, y: 100, width: 40, height: 30), FaceRect(x: 100, y: 100, width: 20, height: 56)] {
            var tracker = FaceTracker(settings: settings)
            let id = tracker.update(detections: [whole], time: second)[0].id
            tracker.add(part, to: id, time: second + 3 * second / 10)
            for time in [second + second / 10, second + second / 4] {
                let between = tracker.regions(at: time)
                XCTAssertEqual(between.count, 1)
                XCTAssertEqual(between.first?.intersection(whole)?.area, whole.area, "\(part): the face inside \(between)")
                let spanned = whole.union(part)
                XCTAssertEqual(between.first?.intersection(spanned)?.area ?? 0, spanned.area, accuracy: 1e-6, "\(part): both inside \(between)")
            }
        }
    }

    /// Sightings of one track further apart than a face moves in the time
    /// between them (a camera motion the estimate missed, or two faces taken
    /// for one): between them the face is hidden around the line from one to
    /// the other, not over the whole stretch, which spanned the picture
    /// between two people on the `moving` clip.
    func testALeapNoFaceMakesIsHiddenAlongTheLineNotOverTheStretch() {
        var tracker = FaceTracker(settings: settings)
        let a = FaceRect(x: 100, y: 100, width: 40, height: 40), b = FaceRect(x: 500, y: 300, width: 40, height: 40)
        let id = tracker.update(detections: [a], time: second)[0].id
        tracker.add(b, to: id, time: second + second / 10)   // ten face sizes in 0.1 s
        let regions = tracker.regions(at: second + second / 20)
        XCTAssertEqual(regions.count, 1)
        let midway = FaceRect(x: 300, y: 200, width: 40, height: 40)
        XCTAssertEqual(regions.first?.intersection(midway)?.area, midway.area, "where the line between them puts it: \(regions)")
        XCTAssertLessThan(regions.first?.width ?? .infinity, 3 * 40, "not the stretch between them: \(regions)")
        XCTAssertEqual(tracker.regions(at: second), [a.expanded(by: 0.25)], "on a sighting: the face and its margin")
    }

    /// Regions fit the faces live and offline; enlarged tiles are offline's default only (live cannot
    /// afford them); a config can set the tiles.
    func testFittedRegionsEverywhereAndEnlargedTilesOffline() throws {
        let offline = FaceBlurSettings(modelPath: "m", offline: true), live = FaceBlurSettings(modelPath: "m")
        XCTAssertEqual(offline.plannedSearches(realTime: false).tileScale, 1.25)
        XCTAssertEqual(live.plannedSearches(realTime: true).tileScale, 1)
        // Offline's enlarged tiles are large (3 × 2 at 720p, as live's at full resolution): 20 small
        // ones searched nearly twice the picture's pixels, in their overlaps.
        func offlineTiles(_ settings: FaceBlurSettings) -> [FaceRect] {
            var tuning = PrivacyTuning.live
            tuning.searches = settings.plannedSearches(realTime: false)
            let planner = DetectionPlanner(tuning: tuning, width: 1280, height: 720)
            return planner.areas.dropFirst().map(\.rect)
        }
        XCTAssertEqual(offline.plannedSearches(realTime: false).tileWidth, 608)
        XCTAssertEqual(offline.plannedSearches(realTime: false).tileHeight, 512)
        XCTAssertEqual(offlineTiles(offline).count, 6)
        XCTAssertTrue(offlineTiles(offline).allSatisfy { $0.width == 486 && $0.height == 409 }, "\(offlineTiles(offline))")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tile-scale-\(getpid()).toml")
        try "[recording]\npipeline = \"p\"\n[privacy]\ntile_scale = 2\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        var privacy = try ConfigLoader.load(file: file.path).privacy
        // Another scale enlarges the same grid more (a larger network input), not a finer grid.
        let twice = FaceBlurSettings(privacy, offline: true)
        XCTAssertEqual(twice.plannedSearches(realTime: false).tileScale, 2)
        XCTAssertEqual(offlineTiles(twice).count, 6)
        XCTAssertTrue(offlineTiles(twice).allSatisfy { abs($0.width - 486) < 16 && abs($0.height - 409) < 16 }, "\(offlineTiles(twice))")
        XCTAssertEqual(FaceBlurSettings(privacy, offline: false).plannedSearches(realTime: true).tileScale, 2, "live takes the scale as it is")
        privacy.tileScale = nil
        XCTAssertEqual(FaceBlurSettings(privacy, offline: true).plannedSearches(realTime: false).tileScale, 1.25)
    }

    func testFollowsAMovingFaceAndCoversItBetweenObservations() {
        var tracker = FaceTracker(settings: settings)
        let a = FaceRect(x: 100, y: 100, width: 40, height: 40)
        let b = FaceRect(x: 120, y: 100, width: 40, height: 40)
        tracker.update(detections: [a], time: second)
        tracker.update(detections: [b], time: 2 * second)
        XCTAssertEqual(tracker.trackCount, 1, "a moved face is the same track")
        let between = tracker.regions(at: second + second / 2)
        XCTAssertEqual(between.count, 1)
        XCTAssertLessThanOrEqual(between[0].x, a.x)
        XCTAssertGreaterThanOrEqual(between[0].maxX, b.maxX, "covers both positions")
    }

    /// Where a face is expected after its last sighting (or before its first) is read from its motion
    /// over at least `steadyMotionSpan.lowerBound`, not from the last two sightings a frame apart: a
    /// few pixels of the detector's jitter there, carried on for half a second, moved the expected
    /// face far enough for a walker to be taken for it (on the fixed clip, a track it had no part in).
    func testAFaceIsExpectedWhereItsSteadyMotionLeadsNotWhereTheLastFramesJitterLeads() throws {
        var tracker = FaceTracker(settings: settings)
        let frame = second / 30
        // 40 px wide, walking right 3 px a frame, found on frames 0 to 9; the last sighting 3 px off.
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 100 + 3 * Double(i), y: 100, width: 40, height: 48) }
        let id = try XCTUnwrap(tracker.update(detections: [walker(0)], time: 0).first).id
        for i in 1...9 {
            var seen = walker(i)
            if i == 9 { seen.x += 3 }
            tracker.add(seen, to: id, time: UInt64(i) * frame)
        }
        let ahead = try XCTUnwrap(tracker.predicted(id, at: 24 * frame))
        XCTAssertLessThan(abs(ahead.center.x - walker(24).center.x), 0.4 * 40, "half a second on: \(ahead) for \(walker(24))")
        // And before its first sighting, the same way (the first sighting 3 px off).
        var before = FaceTracker(settings: settings)
        let jittered = FaceRect(x: walker(0).x - 3, y: 100, width: 40, height: 48)
        let first = try XCTUnwrap(before.update(detections: [jittered], time: 30 * frame).first).id
        for i in 1...9 { before.add(walker(i), to: first, time: UInt64(30 + i) * frame) }
        let back = try XCTUnwrap(before.predicted(first, at: 15 * frame))
        XCTAssertLessThan(abs(back.center.x - walker(-15).center.x), 0.4 * 40, "half a second before: \(back) for \(walker(-15))")
    }

    /// A walker followed steadily under a still camera and then no longer found (gone behind someone)
    /// is hidden where its motion leads, with the slack of `knownMotionGrowth`: at `motion`'s pace the
    /// region outgrew the face by half its size within a third of a second and hid the street around
    /// it (the fixed clip). Under a moving camera its motion is not known, and the region grows as before.
    func testAfterItsLastSightingAWalkerUnderAStillCameraIsHiddenWithTheSlackOfAKnownMotion() throws {
        let frame = second / 30
        // 40×48, walking right 3 px a frame, found on frames 0 to 9.
        func walker(_ i: Int) -> FaceRect { FaceRect(x: 100 + 3 * Double(i), y: 100, width: 40, height: 48) }
        func region(cameraMoving: Bool, at i: Int) throws -> FaceRect {
            var tracker = FaceTracker(settings: settings)
            let id = try XCTUnwrap(tracker.update(detections: [walker(0)], time: 0).first).id
            for j in 1...20 {
                tracker.noteCamera(moving: cameraMoving, at: UInt64(j) * frame)
                if j <= 9 { tracker.add(walker(j), to: id, time: UInt64(j) * frame) }
            }
            let regions = tracker.regions(at: UInt64(i) * frame)
            XCTAssertEqual(regions.count, 1)
            return try XCTUnwrap(regions.first)
        }
        let still = try region(cameraMoving: false, at: 18), moving = try region(cameraMoving: true, at: 18)
        for r in [still, moving] { XCTAssertEqual(r.intersection(walker(18))?.area, walker(18).area, "the walker inside \(r)") }
        // From the last sighting to where its motion leads, grown by the margin and 0.3 s at each pace.
        let known = settings.margin + settings.knownMotionGrowth * 0.3, unknown = settings.margin + settings.motion * 0.3
        XCTAssertEqual(still.height, 48 * (1 + 2 * known), accuracy: 0.5, "\(still)")
        XCTAssertEqual(moving.height, 48 * (1 + 2 * unknown), accuracy: 0.5, "\(moving)")
    }

    func testSeparateFacesAreSeparateTracksAndArePruned() {
        var tracker = FaceTracker(settings: settings)
        tracker.update(detections: [FaceRect(x: 0, y: 0, width: 30, height: 30),
                                    FaceRect(x: 400, y: 200, width: 30, height: 30)], time: second)
        XCTAssertEqual(tracker.trackCount, 2)
        XCTAssertEqual(tracker.regions(at: second).count, 2)
        tracker.prune(now: 3 * second)
        XCTAssertEqual(tracker.trackCount, 0)
    }

    /// A walker passing just below a standing face, found beside it by one pass, is near enough
    /// and alike enough in size to continue the standing face's track: the track takes only the
    /// nearer face, and the walker starts its own; nor does a later pass on the same frame hand the
    /// walker to the track that already holds the face beside it. (Both given to one track, the
    /// united box steered by the walker hid the street of the fixed clip for a second.)
    func testOnePassGivesATrackOneFaceAndTwoFacesAreNotUnited() {
        var tracker = FaceTracker(settings: settings)
        let standing = FaceRect(x: 1000, y: 330, width: 52, height: 66)
        let still = tracker.update(detections: [standing], time: second)
        let walker = FaceRect(x: 1027, y: 410, width: 104, height: 130)
        XCTAssertLessThan(FaceTracker.distance(standing, walker), 1, "the walker alone would continue the standing face's track")
        let frame = second + second / 30
        let onePass = tracker.update(detections: [walker, standing.offsetBy(dx: -1, dy: -5)], time: frame)
        XCTAssertEqual(onePass.map(\.id)[1], still[0].id, "the nearer face continues the track")
        XCTAssertEqual(onePass.map(\.isNew), [true, false], "the walker starts its own")
        XCTAssertEqual(tracker.observations(of: still[0].id).last?.rect, standing.offsetBy(dx: -1, dy: -5), "not united with the walker")

        // The same, pass by pass: the standing face is found by one tile, the walker by the next.
        var byTiles = FaceTracker(settings: settings)
        let id = byTiles.update(detections: [standing], time: second)[0].id
        byTiles.update(detections: [standing], time: frame)
        let later = byTiles.update(detections: [walker], time: frame)
        XCTAssertEqual(later.map(\.isNew), [true])
        XCTAssertEqual(byTiles.observations(of: id).last?.rect, standing)
        // A pass that finds part of the same face (cut by its tile's edge) still adds to the track.
        let part = FaceRect(x: 1010, y: 330, width: 42, height: 60)
        XCTAssertEqual(byTiles.update(detections: [part], time: frame).map(\.id), [id])
        XCTAssertEqual(byTiles.observations(of: id).last?.rect, standing.union(part))
        XCTAssertEqual(byTiles.trackCount, 2)
    }

    func testCoversWhereAFastFaceWasBeforeItWasFirstFound() {
        var tracker = FaceTracker(settings: settings)
        // Seen at x = 100 and x = 120 a tenth of a second apart: moving right fast.
        tracker.update(detections: [FaceRect(x: 100, y: 100, width: 30, height: 30)], time: second)
        tracker.update(detections: [FaceRect(x: 120, y: 100, width: 30, height: 30)], time: second + second / 10)
        XCTAssertEqual(tracker.trackCount, 1)
        let before = tracker.regions(at: second - second / 10)   // it was at about x = 80 then
        XCTAssertEqual(before.count, 1)
        XCTAssertLessThanOrEqual(before[0].x, 80, "the region reaches back along its motion: \(before)")
        let after = tracker.regions(at: second + second / 5)   // and about x = 140 after the last sighting
        XCTAssertGreaterThanOrEqual(after[0].maxX, 170)
    }

    func testObservationsOutOfOrderAndDuplicateTracks() {
        var tracker = FaceTracker(settings: settings)
        let a = tracker.update(detections: [FaceRect(x: 100, y: 100, width: 40, height: 40)], time: 2 * second)
        XCTAssertEqual(a.map(\.isNew), [true])
        // Found again later, and traced back to an earlier frame.
        tracker.add(FaceRect(x: 110, y: 100, width: 40, height: 40), to: a[0].id, time: 3 * second)
        tracker.add(FaceRect(x: 90, y: 100, width: 40, height: 40), to: a[0].id, time: second)
        XCTAssertEqual(tracker.observations(of: a[0].id).map(\.time), [second, 2 * second, 3 * second])
        let p = tracker.predicted(a[0].id, at: second + second / 2)
        XCTAssertEqual(p?.x ?? 0, 95, accuracy: 0.01, "interpolated between the sightings around it")
        // A second track on the same face agrees with the first; a face elsewhere does not.
        let b = tracker.update(detections: [FaceRect(x: 300, y: 100, width: 40, height: 40)], time: 2 * second)
        XCTAssertTrue(b[0].isNew)
        XCTAssertFalse(tracker.agree(b[0].id, a[0].id))
        XCTAssertEqual(tracker.owner(of: FaceRect(x: 101, y: 100, width: 40, height: 40), at: 2 * second, excluding: b[0].id,
                                     within: second / 10), a[0].id)
        tracker.merge(b[0].id, into: a[0].id, at: 0, followMisses: 3)
        XCTAssertEqual(tracker.trackCount, 1)
    }

    /// One face found twice, as two tracks, then merged: a trace back that
    /// gave up before the earlier track's first sighting still says the face
    /// was not there before it, and a follow that gave up after the later
    /// track's last sighting still says it left; a mark that now lies
    /// between the merged sightings says nothing.
    func testAMergeKeepsWhatSearchesLearntBeyondTheMergedSightings() throws {
        var tracker = FaceTracker(settings: settings)
        let face = FaceRect(x: 100, y: 100, width: 40, height: 40)
        let first = try XCTUnwrap(tracker.update(detections: [face], time: 2 * second).first)
        tracker.markGone(first.id, at: 2 * second - second / 5, afterLastSighting: false)   // traced back, not found
        tracker.markGone(first.id, at: 2 * second + second / 5, afterLastSighting: true)    // lost for a moment
        // Found again, far enough on to start a track of its own, which a follow then gives up on too.
        let again = try XCTUnwrap(tracker.update(detections: [face.offsetBy(dx: 200, dy: 0)], time: 3 * second).first)
        XCTAssertTrue(again.isNew)
        tracker.markGone(again.id, at: 3 * second + second / 5, afterLastSighting: true)
        tracker.merge(again.id, into: first.id, at: 0, followMisses: 3)
        func gone(at time: UInt64) -> Bool? { tracker.hidden(at: time).first { $0.track == first.id }?.searchedAndGone }
        XCTAssertEqual(gone(at: 2 * second - second / 3), true, "before the trace back gave up: not there")
        XCTAssertEqual(gone(at: 2 * second + second / 2), false, "between the two sightings: hidden as the face")
        XCTAssertEqual(gone(at: 3 * second + second / 3), true, "after the later track's follow gave up: gone")
        // The other way round (the earlier track merged into the later one): the same marks.
        var swapped = FaceTracker(settings: settings)
        let a = try XCTUnwrap(swapped.update(detections: [face], time: 2 * second).first)
        swapped.markGone(a.id, at: 2 * second - second / 5, afterLastSighting: false)
        let b = try XCTUnwrap(swapped.update(detections: [face.offsetBy(dx: 200, dy: 0)], time: 3 * second).first)
        swapped.markGone(b.id, at: 3 * second + second / 5, afterLastSighting: true)
        swapped.merge(a.id, into: b.id, at: 0, followMisses: 3)
        XCTAssertEqual(swapped.hidden(at: 2 * second - second / 3).first?.searchedAndGone, true)
        XCTAssertEqual(swapped.hidden(at: 3 * second + second / 3).first?.searchedAndGone, true)
    }

    func testTileDetectionsOnInnerEdgesAreDropped() {
        let tile = FaceRect(x: 0, y: 0, width: 600, height: 600)   // top-left of a 1000×1000 frame
        XCTAssertTrue(DetectionPlanner.touchesInnerEdge(FaceRect(x: 560, y: 100, width: 40, height: 50), of: tile, width: 1000, height: 1000))
        XCTAssertFalse(DetectionPlanner.touchesInnerEdge(FaceRect(x: 0, y: 0, width: 40, height: 50), of: tile, width: 1000, height: 1000),
                       "the frame's own edges are real edges")
    }

    /// A big face cut by a tile: the box around what is left may stop a few
    /// pixels short of the cut (the moving clip: 114×266 px, 3 px short). From
    /// a tile it is dropped; a small face as close is a face whole in the
    /// tile (2 px, as before); a follow's square keeps its 2 px.
    func testABigFaceCutByATileIsDroppedThoughItsBoxStopsShortOfTheCut() {
        let tile = FaceRect(x: 0, y: 148, width: 320, height: 277)   // a spare-time tile of a 1280×720 frame
        let cut = FaceRect(x: 203, y: 152, width: 114, height: 266)  // ends at x = 317
        func drops(_ box: FaceRect, _ kind: DetectionPlanner.Kind) -> Bool {
            DetectionPlanner.touchesInnerEdge(box, of: tile, width: 1280, height: 720,
                                              slack: DetectionPlanner.innerEdgeSlack(for: box, foundBy: kind))
        }
        XCTAssertTrue(drops(cut, .tile(12)))
        XCTAssertFalse(drops(cut, .follow(track: 1, backwards: false)), "a follow's square is centred on its face")
        XCTAssertFalse(drops(FaceRect(x: 287, y: 200, width: 30, height: 36), .tile(12)), "a small face 3 px from the edge is whole")
        XCTAssertFalse(DetectionPlanner.touchesInnerEdge(cut, of: tile, width: 1280, height: 720), "2 px by default")
    }

    func testTilesCoverTheFrameWithOverlap() {
        let tiles = DetectionPlanner.tiles(width: 1280, height: 720, tileWidth: 480, tileHeight: 416)
        XCTAssertEqual(tiles.count, 6)
        XCTAssertEqual(tiles[0].x, 0); XCTAssertEqual(tiles[0].y, 0)
        XCTAssertEqual(tiles[5].maxX, 1280); XCTAssertEqual(tiles[5].maxY, 720)
        for t in tiles { XCTAssertLessThanOrEqual(t.width, 480); XCTAssertLessThanOrEqual(t.height, 416) }
        XCTAssertGreaterThanOrEqual(tiles[0].maxX - tiles[1].x, 64, "neighbours overlap by a small face at least")
        XCTAssertGreaterThanOrEqual(tiles[0].maxY - tiles[3].y, 64)
        let small = DetectionPlanner.tiles(width: 640, height: 360, tileWidth: 480, tileHeight: 416)
        XCTAssertEqual(small.map(\.height), [360, 360], "a frame lower than a tile: one row, not stretched")
    }

    /// A track's follow lives with its sightings: merged with them, and forgotten with them.
    func testAFollowIsMergedAndPrunedWithItsTrack() {
        var tracker = FaceTracker(settings: settings)
        let a = tracker.update(detections: [FaceRect(x: 100, y: 100, width: 40, height: 40)], time: second)[0].id
        let b = tracker.update(detections: [FaceRect(x: 400, y: 100, width: 40, height: 40)], time: second)[0].id
        var lost = Follow(foundOn: 30, traceBack: false)
        _ = lost.missed(aheadOn: 31, giveUpAfter: 1)
        tracker.setFollow(lost, of: a)
        tracker.setFollow(Follow(foundOn: 20, traceBack: true), of: b)
        XCTAssertEqual(tracker.follows.map(\.id), [a, b])
        tracker.merge(b, into: a, at: 2 * second, followMisses: 3)
        XCTAssertEqual(tracker.follows.map(\.id), [a], "one track, one follow")
        XCTAssertEqual(tracker.follow(of: a)?.born, 20)
        XCTAssertEqual(tracker.follow(of: a)?.ahead, .following(misses: 3), "followed again: the other track was")
        XCTAssertEqual(tracker.follow(of: a)?.frontier, 20, "the earlier track's trace goes on")
        tracker.prune(now: 10 * second)
        XCTAssertTrue(tracker.follows.isEmpty, "forgotten with its sightings")
    }
}
