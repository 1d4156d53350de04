/// A face's look when the detector last found it: its box's luma reduced to
/// `side`×`side` samples, zero-mean and unit-norm. A follow search may first
/// look for the face by this template (normalised cross-correlation around
/// where the tracker expects it) instead of running the network.
///
/// Why: in a crowd the searches around faces already found cost most of the
/// detection time (one network run per face every 2 to 8 frames), and a live stage that
/// cannot keep up has to pixelate what it could not search. A template match
/// costs about a hundredth of a network run. It only ever moves a known
/// face's box; finding faces stays the network's (whole-frame and tile
/// passes), and every few follows of a face are network runs again, so a
/// template that drifted is corrected (`PrivacyTuning.Searches.templateFollows`).
///
/// Pure value logic over luma buffers.
struct FaceTemplate: Equatable {
    static let side = 16
    /// Normalised samples (zero mean, unit norm), row by row.
    let samples: [Float]

    /// The template of `box` in a luma plane, or nil when the box is not
    /// wholly inside it or has too little texture to be matched reliably.
    init?(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, box: FaceRect) {
        guard box.width >= 8, box.height >= 8, let samples = Self.sample(luma: luma, width: width, height: height, stride: stride, box: box) else { return nil }
        self.samples = samples
    }

    /// How well the face box `box` of the luma matches (-1…1; nil when the
    /// box leaves the plane or is flat).
    func score(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, box: FaceRect) -> Float? {
        guard let other = Self.sample(luma: luma, width: width, height: height, stride: stride, box: box) else { return nil }
        var dot: Float = 0
        for i in 0..<samples.count { dot += samples[i] * other[i] }
        return dot
    }

    /// Looks for the face around `expected` (a box of the size the tracker
    /// expects) in a luma plane: a coarse grid of positions within `radius`
    /// face sizes, then a finer one around the best. Returns the best box and
    /// its score when it reaches `threshold` and does not lie on the edge of
    /// the searched range (the face may have moved further: let the network look).
    func find(in luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, around expected: FaceRect,
              radius: Double = 0.5, threshold: Float = 0.8) -> (box: FaceRect, score: Float)? {
        let steps = 4
        let step = radius * max(expected.width, expected.height) / Double(steps)
        guard step > 0 else { return nil }
        var best: (dx: Double, dy: Double, score: Float)?
        func consider(_ dx: Double, _ dy: Double) {
            let box = FaceRect(x: expected.x + dx, y: expected.y + dy, width: expected.width, height: expected.height)
            guard let s = score(luma: luma, width: width, height: height, stride: stride, box: box) else { return }
            if s > (best?.score ?? -.infinity) { best = (dx, dy, s) }
        }
        for j in -steps...steps { for i in -steps...steps { consider(Double(i) * step, Double(j) * step) } }
        guard let coarse = best else { return nil }
        let onEdge = abs(coarse.dx) >= Double(steps) * step - 1e-9 || abs(coarse.dy) >= Double(steps) * step - 1e-9
        for j in -2...2 { for i in -2...2 where i != 0 || j != 0 { consider(coarse.dx + Double(i) * step / 4, coarse.dy + Double(j) * step / 4) } }
        guard let fine = best, fine.score >= threshold, !onEdge else { return nil }
        return (FaceRect(x: expected.x + fine.dx, y: expected.y + fine.dy, width: expected.width, height: expected.height), fine.score)
    }

    /// `box` reduced to side×side cell means (each cell averages a small grid
    /// of nearest samples), normalised; nil outside the plane or when flat.
    private static func sample(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, box: FaceRect) -> [Float]? {
        guard box.x >= 0, box.y >= 0, box.maxX <= Double(width), box.maxY <= Double(height) else { return nil }
        let n = side, sub = 3
        var out = [Float](repeating: 0, count: n * n)
        let cw = box.width / Double(n), ch = box.height / Double(n)
        var mean: Float = 0
        for cy in 0..<n {
            for cx in 0..<n {
                var sum = 0
                for sy in 0..<sub {
                    let y = min(height - 1, Int(box.y + (Double(cy) + (Double(sy) + 0.5) / Double(sub)) * ch))
                    let row = luma + y * stride
                    for sx in 0..<sub {
                        sum += Int(row[min(width - 1, Int(box.x + (Double(cx) + (Double(sx) + 0.5) / Double(sub)) * cw))])
                    }
                }
                let v = Float(sum) / Float(sub * sub)
                out[cy * n + cx] = v
                mean += v
            }
        }
        mean /= Float(n * n)
        var norm: Float = 0
        for i in 0..<out.count { out[i] -= mean; norm += out[i] * out[i] }
        // A flat patch (less than about 4 luma levels of spread) matches anything.
        guard norm > Float(n * n) * 16 else { return nil }
        let scale = 1 / norm.squareRoot()
        for i in 0..<out.count { out[i] *= scale }
        return out
    }
}
