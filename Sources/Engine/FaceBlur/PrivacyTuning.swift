/// Every number the privacy stage is tuned by, each documented once, in one value: what is
/// searched and when (`searches`), where a face is between its sightings (`tracking`), and what
/// is hidden around it and on frames that leave unsettled (`hiding`).
///
/// Live and offline are two values of it (`live`, `offline`). A config's `[privacy]` keys change
/// a few fields (`FaceBlurSettings.init(_:offline:)`); `bench/replay-corpus --set` changes them
/// for a study. A change is judged by replaying both corpus halves (`CorpusReplayTests`,
/// `bench/replay-corpus`) and kept only where the validation half holds or improves
/// (docs/privacy.md).
///
/// Not here: the constants of a method rather than of the stage's judgement, which live with the
/// method: the camera motion estimator's (block grid, patch search, robust fit; `CameraMotion`),
/// how YuNet's boxes are brought to CenterFace's size (`YuNetDetector`), and the templates'
/// matching (`FaceTemplate`).
public struct PrivacyTuning: Equatable, Sendable {
    /// What is searched for faces, where and when (`DetectionPlanner`, the detectors).
    public struct Searches: Equatable, Sendable {
        /// CenterFace heatmap threshold: lower finds more faces, and a few non-faces.
        public var threshold: Float = 0.3
        /// YuNet's confidence threshold, when follows run on it first (its scores are not CenterFace's).
        public var yuNetThreshold: Float = 0.5
        /// Network input width of a whole-frame search (a multiple of 32): at 640 it finds faces
        /// from about 45 px at 720p; the tiles find the smaller ones.
        public var wholeWidth = 640
        /// Frames between whole-frame searches while the picture changes. A frame waits for the
        /// next search, so with `tileEvery` this sets the delay.
        public var wholeEvery = 16
        /// Pixels of picture mirrored beyond each edge for a whole-frame search: a face cut by
        /// the edge, with its mirror image, looks whole enough to be found, where unmirrored the
        /// detector never finds a face a third to a half out of the picture.
        public var wholeFramePad = 48
        /// A tile search's network input (multiples of 32 each way). A tile covers
        /// `tileWidth / tileScale` × `tileHeight / tileScale` pixels of the frame, neighbours
        /// overlapping by at least 64 px. Live keeps tiles small (a search must be short to meet
        /// the frame's deadline); offline has no deadline.
        public var tileWidth = 480, tileHeight = 416
        /// Frames between searches of a tile while it changes (0: no tiles).
        public var tileEvery = 24
        /// How much each tile is enlarged for the network: 1 searches at full resolution (faces
        /// from about 22 px); 1.5 finds faces from about 15 px, with 2.25 times as many tiles.
        public var tileScale = 1.0
        /// Live: a second tile grid enlarged this much, searched only with CPU the machine leaves
        /// unused (`SpareCPU`), by a thread no frame waits for. A quiet box finds a crowd's
        /// smallest faces; a loaded one loses nothing else. 0: none.
        public var spareTileScale = 1.5
        /// Frames after which an unchanged area is searched again anyway (detector misses, drift).
        public var recheckEvery = 60
        /// Change of an 8×8 block's mean luma that makes its area need a new search.
        public var changeThreshold = 8
        /// Frames between searches around a followed face, at most (a face fast for its size is
        /// searched for more often).
        public var followEvery = 8
        /// Side of the square searched around a followed face, in face sizes.
        public var followScale = 2.5
        /// A follow's network input side (CenterFace): small faces are enlarged, big ones shrunk.
        public var followInput = 96
        /// YuNet's follow input side: it needs more pixels than CenterFace to find a face.
        public var yuNetFollowInput = 128
        /// How far beyond the frame's edge a follow searches (mirrored), in face sizes: reaching
        /// further, a face cut by the edge is lost among mirror images of the picture around it.
        public var followReachBeyondEdge = 0.5
        /// A face box found partly in the mirrored margin is a face only with at least this share
        /// of it in the picture; the rest are mirror images of faces near the edge.
        public var minimumShareInside = 0.25
        /// Misses in a row after which a face is no longer followed (the hold still covers it; a
        /// whole-frame or tile search can pick it up again).
        public var followMisses = 3
        /// Misses in a row that end a trace back.
        public var backtraceMisses = 2
        /// Forward follows of a face its template (`FaceTemplate`) may answer between two network
        /// runs on it; 0: every follow runs the network. Templates keep a crowd within a live
        /// detector's budget; offline has the time, and the network's box is more exact.
        public var templateFollows = 2
        /// Offline: frames held at most before the file waits for the detector. More than
        /// `wholeEvery` and `tileEvery` (a frame waits for both searches after it); the longer the
        /// line, the further back a face found late is traced.
        public var maxQueuedFrames = 32
        public init() {}
    }

    /// Where a face is between and around its sightings (`FaceTracker`).
    public struct Tracking: Equatable, Sendable {
        /// Share of the face box added on each side: the whole head, not the tight box.
        public var margin = 0.3
        /// Growth per second of distance to the nearest sighting, in face sizes: a face that moved
        /// between searches stays covered.
        public var motion = 1.5
        /// The most motion growth adds: a face lost for a whole hold is not chased across the picture.
        public var maxMotionGrowth = 0.5
        /// How long a face stays hidden after its last sighting, while searches have not found it gone.
        public var holdNs: UInt64 = 1_000_000_000
        /// How long before its first sighting a face is hidden (the delay line is long enough).
        public var lookAheadNs: UInt64 = 500_000_000
        /// The most motion growth adds to a face gone near an edge: it was leaving, the region
        /// reaches the edge, and this covers it sliding along the edge for a moment.
        public var maxGoneGrowth = 0.25
        /// Growth per second, in face sizes, before a face's first sighting or after its last where
        /// its own steady motion is known (a still camera): the region follows that motion
        /// already, and this is only the slack for a change of pace or direction. Between two
        /// sightings `motion` stays (a face may stop or turn in between).
        public var knownMotionGrowth = 0.5
        /// The most a hold is stretched by time the camera kept the face out of the picture: no
        /// search can look for it there, so not finding it says nothing. Zero: a plain hold.
        public var maxHeldOutOfSightNs: UInt64 = 3_000_000_000
        /// The fastest a face moves through the scene, in face sizes per second (a fast walker
        /// close to the camera). Sightings further apart than that are two faces or a missed camera
        /// motion: neither united nor extrapolated from.
        public var fastestFace = 8.0
        /// Slack, in face sizes, around the line between two sightings that leap further than a
        /// face moves.
        public var leapAllowance = 0.5
        /// Two sightings whose heights or widths differ by more than this ratio are not one face
        /// moving between them: one is likely a partial box, and the region spans both.
        public var sameSizeRatio = 1.25
        /// The shortest and longest stretch of sightings a face's steady motion is read from:
        /// shorter, and the detector's jitter of a few pixels reads as a fast motion.
        public var steadyMotionSpan: ClosedRange<UInt64> = 150_000_000...1_000_000_000
        /// The most the picture may move between frames (scene pixels, averaged over the frame)
        /// for the camera to count as standing still: below what the motion estimate resolves.
        public var stillCameraSpeed = 0.5
        /// The share of a face's box in the picture under which no search is expected to find it
        /// (the network finds faces nearly whole; half out, in a mirrored margin, at best).
        public var outOfSightShare = 0.5
        public init() {}
    }

    /// What is hidden beyond a tracked face's region: at the picture's edges, and on a frame that
    /// must leave before the searches settled it (`DetectionPlanner.hiddenRegions`,
    /// `DetectionPlanner.unconfirmedCells`), and how it is pixelated.
    public struct Hiding: Equatable, Sendable {
        /// How near an edge, in face sizes, a face's region may come before the face may be
        /// crossing it (the region then reaches the edge).
        public var edgeReach = 0.5
        /// How fast, at least, a face lost near an edge leaves through it, in face sizes a second
        /// (a stroll; walkers cross faster).
        public var leavingPace = 1.0
        /// How far towards an edge, in face sizes, a face's sightings must have come for it to be
        /// leaving through that edge when lost there.
        public var leavingApproach = 0.5
        /// A frame that leaves unsettled: cells of this fraction of the frame height (a fixed grid
        /// of whole change blocks) are hidden wherever the picture changed since the part around
        /// it was last searched.
        public var unconfirmedCellFraction = 1.0 / 12
        /// Blocks an unsearched change is grown by on such a frame: the smallest face a tile finds
        /// is about this many blocks, part of which a later search may already have seen.
        public var unvouchedGrowth = 3
        /// On such a frame, where a face not yet looked for on it may have gone since a search last
        /// saw it (face sizes per second of distance, at most `growth` face sizes). A face seen once
        /// has no known motion: anywhere a fast walker gets. A face seen twice or more is where its
        /// motion leads, give or take a change of pace: an overloaded stage does not hide the
        /// picture around every face it follows.
        public var pendingReach = PendingReach(unknownMotion: Reach(speed: 8, growth: 3), knownMotion: Reach(speed: 3, growth: 1.5))
        /// Pixel cells across the smaller side of a hidden region (a face gets about two):
        /// finer cells leave edges inside a small face that the encoder sharpens.
        public var cellsAcross = 3
        /// The smallest pixel cell, in pixels: small faces get coarse cells too.
        public var minimumCell = 8
        public init() {}

        public struct Reach: Equatable, Sendable {
            public var speed: Double, growth: Double
        }
        public struct PendingReach: Equatable, Sendable {
            public var unknownMotion: Reach, knownMotion: Reach
        }
    }

    public var searches = Searches()
    public var tracking = Tracking()
    public var hiding = Hiding()

    /// Live recording: a schedule a frame's deadline allows, templates answering follows, and
    /// spare-time tiles for the smallest faces.
    public static let live = PrivacyTuning()

    /// The offline `blur` command: no deadline, so whole frames and tiles are searched more
    /// often (small faces are not left unfound between tile searches), the tiles are enlarged
    /// (faces from about 18 px) instead of a spare-time grid, every follow runs the network, and
    /// the delay line reaches back past one tile cycle for tracing back.
    public static let offline: PrivacyTuning = {
        var tuning = PrivacyTuning()
        tuning.searches.wholeEvery = 4
        tuning.searches.tileEvery = 16
        tuning.searches.useOfflineTiles(scale: 1.25)
        tuning.searches.spareTileScale = 0
        tuning.searches.templateFollows = 0
        tuning.searches.maxQueuedFrames = max(tuning.searches.wholeEvery, tuning.searches.tileEvery) + 16
        return tuning
    }()
}

extension PrivacyTuning.Searches {
    /// Offline tiles cover about this much of the frame whatever they are enlarged by (3 × 2 at
    /// 720p): live's small tile input enlarged would make a grid whose 64 px overlaps search
    /// nearly twice the picture.
    static let offlineTileCover = (width: 486.0, height: 410.0)

    /// Offline tiles enlarged `scale` times: each covers `offlineTileCover`, and the network input
    /// grows with the scale (rounded to multiples of 32).
    public mutating func useOfflineTiles(scale: Double) {
        tileScale = scale
        let input = { (side: Double) in max(32, Int((side * min(3, max(1, scale)) / 32).rounded()) * 32) }
        tileWidth = input(Self.offlineTileCover.width)
        tileHeight = input(Self.offlineTileCover.height)
    }

    /// The schedule the planner runs: every value in its range, and, live with
    /// `when_behind = lower_fps` (`strict`), the whole frame and the tiles on every frame that changed.
    func effective(realTime: Bool, strict: Bool) -> Self {
        var s = self
        s.wholeEvery = max(1, wholeEvery)
        s.tileEvery = max(0, tileEvery)
        s.tileScale = min(3, max(1, tileScale))
        s.spareTileScale = realTime && spareTileScale > 0 ? min(3, max(1, spareTileScale)) : 0
        s.tileWidth = max(32, tileWidth / 32 * 32)
        s.tileHeight = max(32, tileHeight / 32 * 32)
        s.followEvery = max(1, followEvery)
        s.templateFollows = max(0, templateFollows)
        s.recheckEvery = max(1, recheckEvery)
        s.changeThreshold = max(1, changeThreshold)
        if strict {
            s.wholeEvery = 1
            s.tileEvery = tileEvery > 0 ? 1 : 0
        }
        return s
    }
}
