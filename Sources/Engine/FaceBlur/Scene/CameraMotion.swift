import Foundation

/// A similarity transform of the image plane (pan, tilt, zoom, roll):
/// p ↦ (a·x − b·y + tx, b·x + a·y + ty), i.e. a rotation by atan2(b, a),
/// a scale of √(a² + b²) and a translation.
struct Similarity: Equatable, CustomStringConvertible {
    var a = 1.0, b = 0.0, tx = 0.0, ty = 0.0

    static let identity = Similarity()

    var scale: Double { (a * a + b * b).squareRoot() }
    var angle: Double { atan2(b, a) }

    func apply(_ x: Double, _ y: Double) -> (x: Double, y: Double) {
        (a * x - b * y + tx, b * x + a * y + ty)
    }

    /// How far the point (x, y) moves.
    func displacement(ofX x: Double, y: Double) -> (dx: Double, dy: Double) {
        let m = apply(x, y)
        return (m.x - x, m.y - y)
    }

    /// `self` after `first`: p ↦ self(first(p)).
    func after(_ first: Similarity) -> Similarity {
        Similarity(a: a * first.a - b * first.b, b: b * first.a + a * first.b,
                   tx: a * first.tx - b * first.ty + tx, ty: b * first.tx + a * first.ty + ty)
    }

    var inverse: Similarity {
        let n = a * a + b * b
        guard n > 0 else { return .identity }
        let (ia, ib) = (a / n, -b / n)
        return Similarity(a: ia, b: ib, tx: -(ia * tx - ib * ty), ty: -(ib * tx + ia * ty))
    }

    /// A box carried through the transform: its centre exactly, its size by
    /// the scale (boxes stay upright: the roll between two sightings of a
    /// face is small, and the margin covers it).
    func apply(_ r: FaceRect) -> FaceRect {
        let c = apply(r.center.x, r.center.y), s = scale
        return FaceRect(x: c.x - r.width * s / 2, y: c.y - r.height * s / 2, width: r.width * s, height: r.height * s)
    }

    var description: String {
        String(format: "(×%.3f, %.2f°, %+.1f, %+.1f)", scale, angle * 180 / .pi, tx, ty)
    }
}

/// The camera's own motion between two frames (a pan or tilt, a push-in, a
/// roll, hand-held shake) as a similarity transform, estimated from the
/// 8×8 block means the stage computes anyway.
///
/// When the camera moves, every face moves with it: the tracker then
/// works in *scene* coordinates (an earlier frame's pixels, see
/// `SceneMotion`), where a person standing still stays still
/// while the camera pans, zooms or rolls, so predictions, follow searches,
/// traces back and hidden regions land where the face is. Searches are
/// still scheduled on plain block changes, never on this model's word: a
/// wrong estimate must not let a face through unsearched.
///
/// Method:
/// 1. the translation that best maps the whole previous block grid onto
///    the current one, coarse to fine (4×4-block cells first, up to
///    ±`maxCells` cells, i.e. ±256 px per frame: a whip-pan), each grid with
///    its mean removed and the current one at the previous one's contrast,
///    so a change of light is not taken for motion;
/// 2. around it, the local shift of each textured patch of a grid (±2
///    blocks, refined below a block with a parabola through the costs);
/// 3. a similarity fitted to those shifts by iteratively reweighted least
///    squares (patches far off the fit, such as a person walking across,
///    lose their weight).
/// The fit counts when enough patches agree with it and it explains the
/// change better than standing still; otherwise the answer is no motion
/// (a flat picture, a scene change), and the tracker falls back on each
/// face's own motion.
///
/// Pure value logic, about a millisecond at 720p; the stage runs it on the
/// streaming thread for each frame as it arrives, outside its lock.
struct CameraMotion {
    let columns: Int, rows: Int
    static let block = DetectionPlanner.block
    static let cellBlocks = 4
    static let maxCells = 8
    /// Patches: `patch`×`patch` blocks, one every `patch` blocks.
    static let patch = 8
    /// Local search around the global translation, in blocks.
    static let reach = 2
    /// A patch flatter than this (standard deviation of its block means, in luma levels) says nothing.
    static let minimumTexture: Float = 3
    /// A fit must leave at most this share of the difference standing still leaves.
    static let confidence = 0.8
    /// A patch within this many pixels of the fit agrees with it.
    static let inlierPixels = 3.0
    /// The share of textured patches that must agree with a fit. Large walkers in front of a plain
    /// background fit a motion of their own with about half the patches agreeing, and would carry a
    /// fixed camera with them; a moving camera's fits mostly have more.
    static let agreeingShare = 0.6

    init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }

    /// For frames of this size (the block grid `PlaneEditor.blockMeans` makes).
    init(frameWidth width: Int, height: Int) {
        self.init(columns: (width + Self.block - 1) / Self.block, rows: (height + Self.block - 1) / Self.block)
    }

    /// The transform taking a point of `previous` (frame pixels) to where
    /// it is in `current`; nil when the pictures do not tell (too little
    /// texture or agreement). `guess`: where the motion is expected (the
    /// motion to the frame before, from the same `previous`): each patch is
    /// then searched around where it puts it, so `previous` can be a key
    /// frame several frames back (larger shifts, measured as precisely:
    /// errors do not pile up frame by frame).
    func motion(from previous: [UInt8], to current: [UInt8], guess: Similarity? = nil) -> Similarity? {
        guard previous.count == columns * rows, current.count == columns * rows, columns >= 8, rows >= 8 else { return nil }
        // Each grid with its mean removed, the current one at the previous one's contrast: a change
        // of light (the lights dimming, an exposure step) is neither motion nor a failed fit.
        let a = centred(previous), b = centred(current, contrastOf: a)
        let block = Double(Self.block)
        if let guess, guess != .identity { return fitted(a, b, around: { guess.apply($0, $1) }, fallback: .identity) }
        // 1. Global translation, coarse (cells) then fine (blocks).
        let (cc, cr) = (columns / Self.cellBlocks, rows / Self.cellBlocks)
        let ca = cells(a), cb = cells(b)
        var best = (dx: 0, dy: 0, cost: Double.infinity)
        for dy in -Self.maxCells...Self.maxCells {
            for dx in -Self.maxCells...Self.maxCells {
                let cost = difference(ca, cb, columns: cc, rows: cr, dx: dx, dy: dy)
                if cost < best.cost { best = (dx, dy, cost) }
            }
        }
        let (gx, gy) = (best.dx * Self.cellBlocks, best.dy * Self.cellBlocks)
        var fine = (dx: gx, dy: gy, cost: Double.infinity)
        for dy in (gy - 3)...(gy + 3) {
            for dx in (gx - 3)...(gx + 3) {
                let c = difference(a, b, columns: columns, rows: rows, dx: dx, dy: dy)
                if c < fine.cost { fine = (dx, dy, c) }
            }
        }
        guard fine.cost.isFinite else { return nil }
        let translation = Similarity(tx: Double(fine.dx) * block, ty: Double(fine.dy) * block)
        let still = difference(a, b, columns: columns, rows: rows, dx: 0, dy: 0)
        let global = (fine.dx != 0 || fine.dy != 0) && fine.cost < 0.8 * still ? translation : .identity
        return fitted(a, b, around: { translation.apply($0, $1) }, fallback: global)
    }

    /// Steps 2 and 3: local shifts of textured patches, each searched around
    /// where `around` puts its centre, and the similarity fitted to them.
    private func fitted(_ a: [Float], _ b: [Float], around: (Double, Double) -> (x: Double, y: Double),
                        fallback: Similarity) -> Similarity? {
        var pairs: [(px: Double, py: Double, qx: Double, qy: Double)] = []
        let p = Self.patch, r = Self.reach, block = Double(Self.block)
        var py0 = 0
        while py0 + p <= rows {
            var px0 = 0
            while px0 + p <= columns {
                defer { px0 += p }
                guard texture(a, x0: px0, y0: py0) >= Self.minimumTexture else { continue }
                let cx = (Double(px0) + Double(p) / 2) * block, cy = (Double(py0) + Double(p) / 2) * block
                let expected = around(cx, cy)
                let (gx, gy) = (Int(((expected.x - cx) / block).rounded()), Int(((expected.y - cy) / block).rounded()))
                var costs = [Double](repeating: .infinity, count: (2 * r + 1) * (2 * r + 1))
                var local = (i: -1, cost: Double.infinity)
                for oy in -r...r {
                    for ox in -r...r {
                        let c = patchDifference(a, b, x0: px0, y0: py0, dx: gx + ox, dy: gy + oy)
                        let i = (oy + r) * (2 * r + 1) + (ox + r)
                        costs[i] = c
                        if c < local.cost { local = (i, c) }
                    }
                }
                guard local.i >= 0, local.cost.isFinite else { continue }
                let (ox, oy) = (local.i % (2 * r + 1) - r, local.i / (2 * r + 1) - r)
                // A minimum on the edge of the search, or no clear minimum: the patch says nothing.
                guard abs(ox) < r, abs(oy) < r else { continue }
                let w = 2 * r + 1
                let left = costs[local.i - 1], right = costs[local.i + 1], up = costs[local.i - w], down = costs[local.i + w]
                guard min(left, right, up, down) > local.cost * 1.1 + 1 else { continue }
                let sx = Self.vertex(left, local.cost, right), sy = Self.vertex(up, local.cost, down)
                let dx = (Double(gx + ox) + sx) * block, dy = (Double(gy + oy) + sy) * block
                pairs.append((cx, cy, cx + dx, cy + dy))
            }
            py0 += p
        }
        // Too little texture for a fit: the global translation, when it clearly beats standing still.
        guard pairs.count >= 6 else { return fallback == .identity ? nil : fallback }
        // 3. Similarity by iteratively reweighted least squares.
        var weights = [Double](repeating: 1, count: pairs.count)
        var fit = fallback
        for _ in 0..<6 {
            guard let f = Self.fit(pairs, weights) else { break }
            fit = f
            var residuals: [Double] = []
            residuals.reserveCapacity(pairs.count)
            for q in pairs {
                let m = fit.apply(q.px, q.py)
                residuals.append(((m.x - q.qx) * (m.x - q.qx) + (m.y - q.qy) * (m.y - q.qy)).squareRoot())
            }
            let median = residuals.sorted()[residuals.count / 2]
            let c = max(Self.inlierPixels, 2.5 * median)
            // Tukey's biweight: patches beyond c count for nothing.
            weights = residuals.map { $0 >= c ? 0 : (1 - ($0 / c) * ($0 / c)) * (1 - ($0 / c) * ($0 / c)) }
        }
        var inliers = 0
        let (w, h) = (Double(columns) * block, Double(rows) * block)
        for q in pairs {
            let m = fit.apply(q.px, q.py)
            if ((m.x - q.qx) * (m.x - q.qx) + (m.y - q.qy) * (m.y - q.qy)).squareRoot() < Self.inlierPixels { inliers += 1 }
        }
        // A moving camera moves the whole picture: carried through the fit, the previous picture must
        // match this one clearly better than standing still does. Someone big moving in front of a fixed
        // camera fits a motion of their own, which makes the still background match worse.
        guard warpedDifference(a, b, fit) < Self.confidence * warpedDifference(a, b, .identity) else { return .identity }
        // Most textured patches must agree (a fixed camera with people walking: the still background wins),
        // and a zoom or roll beyond what a hand can do in a frame is a failed fit.
        guard inliers >= 6, Double(inliers) >= Self.agreeingShare * Double(pairs.count),
              abs(fit.scale - 1) < 0.3, abs(fit.angle) < 0.3 else { return nil }
        // What moves no corner of the picture by a pixel is a still camera (block means resolve no
        // better): a fixed camera then compares its blocks as they are, and a slow move shows up
        // against the key frame a few frames later, whole.
        let corners = [(0.0, 0.0), (w, 0), (0, h), (w, h)].map { x, y -> Double in
            let m = fit.apply(x, y)
            return ((m.x - x) * (m.x - x) + (m.y - y) * (m.y - y)).squareRoot()
        }
        return corners.max()! < 1 ? .identity : fit
    }

    /// Weighted least-squares similarity taking each (px, py) to (qx, qy).
    static func fit(_ pairs: [(px: Double, py: Double, qx: Double, qy: Double)], _ weights: [Double]) -> Similarity? {
        var sw = 0.0, mpx = 0.0, mpy = 0.0, mqx = 0.0, mqy = 0.0
        for (q, w) in zip(pairs, weights) { sw += w; mpx += w * q.px; mpy += w * q.py; mqx += w * q.qx; mqy += w * q.qy }
        guard sw > 1e-9 else { return nil }
        (mpx, mpy, mqx, mqy) = (mpx / sw, mpy / sw, mqx / sw, mqy / sw)
        var spp = 0.0, sa = 0.0, sb = 0.0
        for (q, w) in zip(pairs, weights) {
            let (x, y, u, v) = (q.px - mpx, q.py - mpy, q.qx - mqx, q.qy - mqy)
            spp += w * (x * x + y * y)
            sa += w * (x * u + y * v)
            sb += w * (x * v - y * u)
        }
        guard spp > 1e-9 else { return Similarity(tx: mqx - mpx, ty: mqy - mpy) }
        let a = sa / spp, b = sb / spp
        return Similarity(a: a, b: b, tx: mqx - (a * mpx - b * mpy), ty: mqy - (b * mpx + a * mpy))
    }

    /// The vertex of the parabola through three costs around a minimum, within half a step.
    static func vertex(_ minus: Double, _ centre: Double, _ plus: Double) -> Double {
        let curvature = minus - 2 * centre + plus
        guard curvature > 0, minus.isFinite, plus.isFinite else { return 0 }
        return max(-0.5, min(0.5, (minus - plus) / (2 * curvature)))
    }

    private func centred(_ grid: [UInt8], contrastOf reference: [Float]? = nil) -> [Float] {
        let mean = Float(grid.reduce(0) { $0 + Int($1) }) / Float(max(1, grid.count))
        let centred = grid.map { Float($0) - mean }
        guard let reference else { return centred }
        let (own, wanted) = (Self.deviation(centred), Self.deviation(reference))
        // A flat picture stays flat (nothing to scale).
        guard own > 1, wanted > 1 else { return centred }
        let gain = wanted / own
        return centred.map { $0 * gain }
    }

    private static func deviation(_ centred: [Float]) -> Float {
        (centred.reduce(0) { $0 + $1 * $1 } / Float(max(1, centred.count))).squareRoot()
    }

    private func cells(_ grid: [Float]) -> [Float] {
        let n = Self.cellBlocks
        let (cc, cr) = (columns / n, rows / n)
        var out = [Float](repeating: 0, count: cc * cr)
        for y in 0..<(cr * n) {
            for x in 0..<(cc * n) { out[(y / n) * cc + x / n] += grid[y * columns + x] }
        }
        return out.map { $0 / Float(n * n) }
    }

    /// Mean absolute difference between `b` and `a` carried through `m`
    /// (bilinear between block centres), over the blocks whose source is in the picture.
    private func warpedDifference(_ a: [Float], _ b: [Float], _ m: Similarity) -> Double {
        let inverse = m.inverse, block = Double(Self.block), columns = self.columns, rows = self.rows
        return a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var sum: Float = 0, n = 0
                // Every other block each way: enough to tell, at a quarter of the cost.
                for y in Swift.stride(from: 0, to: rows, by: 2) {
                    for x in Swift.stride(from: 0, to: columns, by: 2) {
                        let p = inverse.apply((Double(x) + 0.5) * block, (Double(y) + 0.5) * block)
                        let gx = p.x / block - 0.5, gy = p.y / block - 0.5
                        guard gx >= 0, gy >= 0, gx < Double(columns - 1), gy < Double(rows - 1) else { continue }
                        let x0 = Int(gx), y0 = Int(gy)
                        let fx = Float(gx - Double(x0)), fy = Float(gy - Double(y0))
                        let r0 = y0 * columns + x0, r1 = r0 + columns
                        let v = (a[r0] * (1 - fx) + a[r0 + 1] * fx) * (1 - fy) + (a[r1] * (1 - fx) + a[r1 + 1] * fx) * fy
                        sum += abs(b[y * columns + x] - v)
                        n += 1
                    }
                }
                return n * 8 >= columns * rows ? Double(sum) / Double(n) : .infinity
            }
        }
    }

    /// Standard deviation of a patch's block means.
    private func texture(_ g: [Float], x0: Int, y0: Int) -> Float {
        let p = Self.patch, columns = self.columns
        return g.withUnsafeBufferPointer { g in
            var s: Float = 0, s2: Float = 0
            for y in y0..<(y0 + p) {
                let row = g.baseAddress! + y * columns + x0
                for x in 0..<p { let v = row[x]; s += v; s2 += v * v }
            }
            let n = Float(p * p), m = s / n
            return max(0, s2 / n - m * m).squareRoot()
        }
    }

    /// Mean squared difference between a patch of `a` at (x0, y0) and `b`
    /// at the same patch moved by (dx, dy) blocks, each with its own mean
    /// removed (light changing across the picture); infinity when the moved
    /// patch leaves the grid. Squared: near the minimum it is a parabola,
    /// so the vertex through three costs finds the shift below a block.
    private func patchDifference(_ a: [Float], _ b: [Float], x0: Int, y0: Int, dx: Int, dy: Int) -> Double {
        let p = Self.patch, columns = self.columns
        guard x0 + dx >= 0, y0 + dy >= 0, x0 + dx + p <= columns, y0 + dy + p <= rows else { return .infinity }
        return a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                var ma: Float = 0, mb: Float = 0
                for y in 0..<p {
                    let ra = a.baseAddress! + (y0 + y) * columns + x0, rb = b.baseAddress! + (y0 + y + dy) * columns + x0 + dx
                    for x in 0..<p { ma += ra[x]; mb += rb[x] }
                }
                let shift = (mb - ma) / Float(p * p)
                var sum: Float = 0
                for y in 0..<p {
                    let ra = a.baseAddress! + (y0 + y) * columns + x0, rb = b.baseAddress! + (y0 + y + dy) * columns + x0 + dx
                    for x in 0..<p { let d = ra[x] + shift - rb[x]; sum += d * d }
                }
                return Double(sum) / Double(p * p)
            }
        }
    }

    /// Mean absolute difference between `a` at p and `b` at p + (dx, dy),
    /// over the overlap; infinity when it is under half the grid.
    private func difference(_ a: [Float], _ b: [Float], columns: Int, rows: Int, dx: Int, dy: Int) -> Double {
        let x0 = max(0, -dx), x1 = min(columns, columns - dx)
        let y0 = max(0, -dy), y1 = min(rows, rows - dy)
        guard x1 > x0, y1 > y0, (x1 - x0) * (y1 - y0) * 2 >= columns * rows else { return .infinity }
        var sum: Float = 0
        a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                for y in y0..<y1 {
                    let ra = y * columns, rb = (y + dy) * columns + dx
                    for x in x0..<x1 { sum += abs(a[ra + x] - b[rb + x]) }
                }
            }
        }
        return Double(sum) / Double((x1 - x0) * (y1 - y0))
    }
}

/// Follows the camera frame by frame, measuring each frame against a key
/// frame a few frames back rather than against the frame before: shifts
/// of a few pixels a frame (a slow push-in moves the edges of the picture
/// by about a pixel) are below what block means resolve, and measured
/// frame to frame their errors would pile up; against a key frame they
/// grow into shifts that are measured well. The key moves on every
/// `keyEvery` frames, and when the picture no longer matches it (a whip-pan).
///
/// Value type; the stage keeps one on its streaming thread.
struct CameraTracker {
    let estimator: CameraMotion
    static let keyEvery = 12
    /// The most a camera zooms (scale change) or rolls (radians) from one frame to the next.
    static let maxStepZoom = 0.1
    static let maxStepRoll = 0.06
    private var key: [UInt8]
    private var previous: [UInt8]
    /// Key frame → previous frame, and the previous frame's own step.
    private var keyToPrevious = Similarity.identity
    private var lastStep = Similarity.identity
    private var sinceKey = 0
    /// Frames in a row given the last step because no fit told their motion (`maxExtrapolated`).
    private var extrapolated = 0
    /// Steps measured as motion since the camera last stood still (or no fit told).
    private var movingSteps = 0

    init(first blocks: [UInt8], width: Int, height: Int) {
        estimator = CameraMotion(frameWidth: width, height: height)
        key = blocks
        previous = blocks
    }

    /// For frames with this block grid.
    func fits(_ blocks: [UInt8]) -> Bool { blocks.count == key.count }

    /// The motion from the previous frame to this one (previous frame's pixels → this frame's).
    mutating func next(_ blocks: [UInt8]) -> Similarity {
        defer { previous = blocks }
        // Against the key frame, around where the last step leads (a steady move is measured over
        // several frames' worth of shift, precisely); a failed or implausible fit is no answer.
        if sinceKey > 0, let m = estimator.motion(from: key, to: blocks, guess: lastStep.after(keyToPrevious)), m != .identity {
            let step = m.after(keyToPrevious.inverse)
            if Self.isPlausible(step) {
                (keyToPrevious, lastStep, sinceKey, extrapolated) = (m, step, sinceKey + 1, 0)
                movingSteps += 1
                if sinceKey >= Self.keyEvery || abs(m.scale - 1) > 0.1 || abs(m.angle) > 0.1 {
                    (key, keyToPrevious, sinceKey) = (blocks, .identity, 0)
                }
                return step
            }
        }
        // From scratch against the previous frame: the camera changed pace (a whip-pan starting or
        // stopping), or the key frame no longer matches.
        let fromScratch = estimator.motion(from: previous, to: blocks)
        if let m = fromScratch, m != .identity, Self.isPlausible(m) {
            (key, keyToPrevious, lastStep, sinceKey, extrapolated) = (previous, m, m, 1, 0)
            movingSteps += 1
            return m
        }
        if fromScratch == nil, movingSteps >= Self.movingStepsToExtrapolate, extrapolated < Self.maxExtrapolated {
            // No answer at all (too little texture or agreement: motion blur, dusk's noise) while the
            // camera was moving: it most likely still is, at the pace it had. Read as standing still,
            // such a frame would put every region a whole step behind its face from there on, and
            // count the camera as still in mid-move.
            extrapolated += 1
            // The next frame is searched around this step, from this frame.
            (key, keyToPrevious, sinceKey) = (blocks, .identity, 1)
            return lastStep
        }
        (key, keyToPrevious, lastStep, sinceKey, extrapolated, movingSteps) = (blocks, .identity, .identity, 0, 0, 0)
        return .identity
    }

    /// Frames in a row whose motion no fit could tell that take the last step measured, at most:
    /// beyond a moment the camera may have stopped, and standing still is the answer again.
    static let maxExtrapolated = 2
    /// Steps measured as motion in a row before a frame no fit can tell takes the last one: a camera
    /// on a move, not one misread step (a fixed camera's big walkers now and then fit a motion of
    /// their own, which carried on would read the camera as moving).
    static let movingStepsToExtrapolate = 2

    /// No faster zoom or roll than a hand gives a camera (a whip-pan rolls it by a few degrees a frame;
    /// pulling back while panning fast zooms out by several per cent a frame):
    /// a faster one is a big subject moving in front of a still camera, which can seem to carry the picture.
    static func isPlausible(_ step: Similarity) -> Bool {
        abs(step.scale - 1) <= maxStepZoom && abs(step.angle) <= maxStepRoll
    }
}
