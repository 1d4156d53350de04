import Foundation

/// How the regions a run hid cover a clip's faces, and how much of the
/// rest of the picture they hide: what a replay of the stage is judged by
/// (`blur --score-against`, the replay tests, bench/replay-corpus).
///
/// It judges regions, not pixels: a face is covered when nearly all of its
/// box lies in hidden regions (the benchmark's judge, bench/live_faces.py,
/// looks at the pixels of the recording instead). Outside the faces means
/// outside every face box grown by half its size on each side, as there.
public struct HidingScore: Equatable, Sendable, CustomStringConvertible {
    /// The faces of each frame (`Truth.faces`), at least this high.
    public static let minimumFaceHeight = 24.0
    /// A face is covered when this share of its box is hidden.
    public static let coveredShare = 0.9
    /// A frame hides beyond faces when this share of the picture outside them is hidden.
    public static let beyondShareCounted = 0.01

    public var frames = 0
    /// Faces of `minimumFaceHeight` or more, frame by frame, and how many of them were covered.
    public var faceFrames = 0
    public var covered = 0
    /// Frames hiding `beyondShareCounted` or more of the picture outside the faces.
    public var framesHidingBeyond = 0
    /// The share of the picture outside the faces hidden, summed over frames.
    public var beyondShareSum = 0.0
    /// The face-frames not covered: frame index and box.
    public var uncovered: [(frame: Int, face: FaceRect)] = []

    public init() {}

    public var meanBeyondShare: Double { frames > 0 ? beyondShareSum / Double(frames) : 0 }

    public var description: String {
        "\(covered) of \(faceFrames) face-frames covered; \(framesHidingBeyond) of \(frames) frames hiding beyond faces, "
            + String(format: "%.2f %% of the picture outside faces on average", meanBeyondShare * 100)
    }

    /// Adds one frame: its faces and the regions hidden on it.
    public mutating func add(frame index: Int, faces: [FaceRect], hidden: [FaceRect], width: Int, height: Int) {
        frames += 1
        func isHidden(_ x: Double, _ y: Double) -> Bool {
            hidden.contains { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY }
        }
        for face in faces where face.height >= Self.minimumFaceHeight {
            // A face mostly out of the picture is not counted (no search can see it).
            guard let inside = face.intersection(FaceRect(x: 0, y: 0, width: Double(width), height: Double(height))),
                  inside.area >= 0.3 * face.area else { continue }
            faceFrames += 1
            let steps = 6
            var hit = 0
            for i in 0..<steps {
                for j in 0..<steps {
                    hit += isHidden(inside.x + (Double(i) + 0.5) * inside.width / Double(steps),
                                    inside.y + (Double(j) + 0.5) * inside.height / Double(steps)) ? 1 : 0
                }
            }
            if Double(hit) >= Self.coveredShare * Double(steps * steps) {
                covered += 1
            } else {
                uncovered.append((index, face))
            }
        }
        let grown = faces.map { $0.expanded(by: 0.5) }
        let step = 8.0
        var outside = 0, hiddenOutside = 0
        var y = step / 2
        while y < Double(height) {
            var x = step / 2
            while x < Double(width) {
                if !grown.contains(where: { x >= $0.x && x < $0.maxX && y >= $0.y && y < $0.maxY }) {
                    outside += 1
                    hiddenOutside += isHidden(x, y) ? 1 : 0
                }
                x += step
            }
            y += step
        }
        let share = outside > 0 ? Double(hiddenOutside) / Double(outside) : 0
        beyondShareSum += share
        framesHidingBeyond += share >= Self.beyondShareCounted ? 1 : 0
    }

    public static func == (a: HidingScore, b: HidingScore) -> Bool {
        (a.frames, a.faceFrames, a.covered, a.framesHidingBeyond) == (b.frames, b.faceFrames, b.covered, b.framesHidingBeyond)
            && a.beyondShareSum == b.beyondShareSum
    }

    /// A clip's faces, frame by frame (bench/video_faces.py and bench/live_faces.py write it).
    public struct Truth: Decodable, Sendable {
        public var width: Int
        public var height: Int
        /// Per frame, per person: the box (x, y, width, height), or null where that person is not in the frame.
        public var faces: [[[Double]?]]

        public init(path: String) throws {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw FaceDetectorError(description: "\(path): cannot read the faces of the clip")
            }
            do {
                self = try JSONDecoder().decode(Truth.self, from: data)
            } catch {
                throw FaceDetectorError(description: "\(path): not a clip's faces (width, height, faces per frame): \(error)")
            }
        }

        /// Frame `index`'s faces (none past the end).
        public func faces(onFrame index: Int) -> [FaceRect] {
            guard index < faces.count else { return [] }
            return faces[index].compactMap { box in
                guard let box, box.count == 4 else { return nil }
                return FaceRect(x: box[0], y: box[1], width: box[2], height: box[3])
            }
        }
    }
}
