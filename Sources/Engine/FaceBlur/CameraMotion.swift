import Foundation

/// The camera's own motion (a pan or tilt, hand-held shake) between two
/// frames, estimated from the 8×8 block means the stage computes anyway.
///
/// When the camera moves, every face moves with it: the tracker then
/// works in *scene* coordinates (frame pixels plus the camera's travel so
/// far), where a person standing still stays still while the camera pans,
/// so predictions, follow searches and traces back land where the face is.
///
/// Method: the translation that best maps the previous block grid onto the
/// current one (least mean absolute difference over the overlap, each grid
/// with its mean removed, so a change of light is not taken for motion),
/// searched coarse to fine: on 4×4-block cells first (up to ±`maxCells`
/// cells, i.e. ±192 px per frame), then ±3 blocks around that; then refined
/// below a block by fitting a parabola through the differences around the
/// minimum. It counts only when most of the picture changed (someone
/// walking past a fixed camera, however big, moves part of it, not all) and
/// the match is clearly better than standing still (not a zoom, a scene
/// change, a flat picture); otherwise it is no motion, and the tracker
/// falls back on each face's own motion, as without this estimate.
///
/// Pure value logic, about a millisecond at 720p; the stage runs it on the
/// streaming thread for each frame as it arrives, outside its lock.
struct CameraMotion {
    let columns: Int, rows: Int
    static let block = DetectionPlanner.block
    static let cellBlocks = 4
    static let maxCells = 6
    /// The best shift must beat standing still by this factor to count.
    static let confidence = 0.8
    /// ... and at least this share of the blocks must have changed (by `changed` levels).
    static let movedShare = 0.5
    static let changed: Float = 6

    init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }

    /// For frames of this size (the block grid `PlaneEditor.blockMeans` makes).
    init(frameWidth width: Int, height: Int) {
        self.init(columns: (width + Self.block - 1) / Self.block, rows: (height + Self.block - 1) / Self.block)
    }

    /// Translation in pixels (dx, dy): content at p in `previous` is at p + (dx, dy) in `current`.
    func shift(from previous: [UInt8], to current: [UInt8]) -> (dx: Double, dy: Double) {
        guard previous.count == columns * rows, current.count == columns * rows, columns >= 8, rows >= 8 else { return (0, 0) }
        let a = centred(previous), b = centred(current)
        let moved = zip(a, b).reduce(0) { $0 + (abs($1.0 - $1.1) >= Self.changed ? 1 : 0) }
        guard Double(moved) >= Self.movedShare * Double(a.count) else { return (0, 0) }
        // Coarse: 4×4-block cells.
        let (cc, cr) = (columns / Self.cellBlocks, rows / Self.cellBlocks)
        let ca = cells(a), cb = cells(b)
        var best = (dx: 0, dy: 0, cost: Double.infinity)
        for dy in -Self.maxCells...Self.maxCells {
            for dx in -Self.maxCells...Self.maxCells {
                let cost = difference(ca, cb, columns: cc, rows: cr, dx: dx, dy: dy)
                if cost < best.cost { best = (dx, dy, cost) }
            }
        }
        // Fine: blocks, around the coarse answer.
        let (gx, gy) = (best.dx * Self.cellBlocks, best.dy * Self.cellBlocks)
        var fine = (dx: gx, dy: gy, cost: Double.infinity)
        var costs: [Int: Double] = [:]
        func cost(_ dx: Int, _ dy: Int) -> Double {
            let key = (dy + 1000) * 4000 + dx + 1000
            if let c = costs[key] { return c }
            let c = difference(a, b, columns: columns, rows: rows, dx: dx, dy: dy)
            costs[key] = c
            return c
        }
        for dy in (gy - 3)...(gy + 3) {
            for dx in (gx - 3)...(gx + 3) {
                let c = cost(dx, dy)
                if c < fine.cost { fine = (dx, dy, c) }
            }
        }
        let still = cost(0, 0)
        guard fine.cost.isFinite, fine.dx != 0 || fine.dy != 0, fine.cost < Self.confidence * still else { return (0, 0) }
        // Below a block: the vertex of the parabola through the neighbours.
        func vertex(_ minus: Double, _ centre: Double, _ plus: Double) -> Double {
            let curvature = minus - 2 * centre + plus
            guard curvature > 0, minus.isFinite, plus.isFinite else { return 0 }
            return max(-0.5, min(0.5, (minus - plus) / (2 * curvature)))
        }
        let sx = vertex(cost(fine.dx - 1, fine.dy), fine.cost, cost(fine.dx + 1, fine.dy))
        let sy = vertex(cost(fine.dx, fine.dy - 1), fine.cost, cost(fine.dx, fine.dy + 1))
        return ((Double(fine.dx) + sx) * Double(Self.block), (Double(fine.dy) + sy) * Double(Self.block))
    }

    private func centred(_ grid: [UInt8]) -> [Float] {
        let mean = Float(grid.reduce(0) { $0 + Int($1) }) / Float(max(1, grid.count))
        return grid.map { Float($0) - mean }
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
