import Foundation

/// What the network found in every search of one run, kept to replay the
/// stage without the network.
///
/// Recording (`blur --record-detections FILE`) writes one JSON line per
/// network search as it finishes (`Search`): the frame, the kind of search,
/// the area searched and the network input it was brought to, the faces
/// found (frame pixels, with scores) and how long the search took.
///
/// Replaying (`blur --replay-detections FILE`) runs the scheduler, the
/// tracker and the hiding as they are, on the real frames (change gating,
/// camera motion and templates read pixels, which costs little), and
/// answers each search from the record instead of the network:
/// - the same search on the same frame (kind, area, input): what was
///   recorded. Offline the schedule depends only on the file and on what
///   was found, so a replay of an unchanged stage asks only these and hides
///   exactly what the recorded run hid;
/// - a search the recorded run did not make (a rule changed the schedule,
///   or a live run's timing differed): the faces recorded on that frame by
///   any search whose centre lies in the area and which are big enough at
///   that search's scale for the network to find (`findableHeight`),
///   counted as approximate (`Replay.Counts`).
/// Live, a replayed search takes as long as the recorded one (an
/// approximate one, the median of its kind), so the stage meets the same
/// deadlines.
public enum DetectionEvidence {
    /// One network search, one JSON line.
    public struct Search: Codable, Equatable, Sendable {
        public enum Kind: String, Codable, Sendable {
            case whole, tile, follow
            /// A follow backwards through the frames held (a face found late).
            case trace
        }
        public var frame: Int
        public var kind: Kind
        /// The area searched: x, y, width, height in frame pixels.
        public var region: [Double]
        /// The network input it was brought to: width, height.
        public var input: [Int]
        /// The faces found: x, y, width, height (frame pixels), score.
        public var faces: [[Double]]
        public var seconds: Double

        public init(frame: Int, kind: Kind, region: FaceRect, input: (width: Int, height: Int),
                    faces: [FaceDetection], seconds: Double) {
            self.frame = frame
            self.kind = kind
            self.region = [region.x, region.y, region.width, region.height].map(Self.rounded)
            self.input = [input.width, input.height]
            // Faces as found, unrounded: a replay hides exactly what the recorded run hid.
            self.faces = faces.map { [$0.rect.x, $0.rect.y, $0.rect.width, $0.rect.height, Double($0.score)] }
            self.seconds = (seconds * 1e5).rounded() / 1e5
        }

        init(_ pass: DetectionPlanner.Pass, faces: [FaceDetection], seconds: Double) {
            self.init(frame: pass.frame, kind: Kind(pass.kind), region: pass.region, input: pass.input, faces: faces, seconds: seconds)
        }

        /// Areas to two decimals: a replay's areas match the recorded ones whatever the last bits.
        static func rounded<F: BinaryFloatingPoint>(_ value: F) -> Double { (Double(value) * 100).rounded() / 100 }

        var area: FaceRect { FaceRect(x: region[0], y: region[1], width: region[2], height: region[3]) }

        var detections: [FaceDetection] {
            faces.map { FaceDetection(rect: FaceRect(x: $0[0], y: $0[1], width: $0[2], height: $0[3]), score: Float($0[4])) }
        }

        /// The search's identity: what a replay looks it up by.
        var key: Key { Key(frame: frame, kind: kind, region: region, input: input) }

        struct Key: Hashable {
            var frame: Int
            var kind: Kind
            var region: [Double]
            var input: [Int]
        }

        /// Whether the fields hold what they say (a record edited by hand, or cut short).
        var isWellFormed: Bool {
            frame >= 0 && region.count == 4 && input.count == 2 && faces.allSatisfy { $0.count == 5 } && seconds >= 0
        }
    }

    /// How a stage uses evidence: writes it, or answers its searches from it.
    public enum Role: Sendable {
        case record(Recorder)
        case replay(Replay)
    }

    /// Writes searches as they finish.
    ///
    /// Threading: any detection thread; lines are written whole under a lock.
    public final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private let file: FileHandle
        private let encoder = JSONEncoder()
        public let path: String
        public private(set) var searches = 0

        /// Creates (or empties) `path`.
        public init(path: String) throws {
            guard FileManager.default.createFile(atPath: path, contents: nil),
                  let file = FileHandle(forWritingAtPath: path) else {
                throw FaceDetectorError(description: "\(path): cannot write the detection record")
            }
            self.path = path
            self.file = file
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        }

        deinit { try? file.close() }

        public func record(_ search: Search) {
            guard let line = try? encoder.encode(search) else { return }
            lock.withLock {
                file.write(line + Data("\n".utf8))
                searches += 1
            }
        }
    }

    /// Answers searches from a record.
    ///
    /// Threading: any detection thread; the counts are kept under a lock.
    public final class Replay: @unchecked Sendable {
        public struct Counts: Equatable, Sendable {
            /// Searches answered by the same search recorded.
            public var exact = 0
            /// Searches the recorded run did not make, answered from its other searches of the frame.
            public var approximate = 0
        }

        public let path: String
        private let recorded: [Search.Key: Search]
        /// Every face recorded on a frame, by any search (the same face found twice kept once, at its best score).
        private let facesByFrame: [Int: [FaceDetection]]
        private let medianSeconds: [Search.Kind: Double]
        private let lock = NSLock()
        private var countsStorage = Counts()
        public var counts: Counts { lock.withLock { countsStorage } }

        /// Reads a record; an unreadable line is an error naming the file and the line.
        public init(path: String) throws {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw FaceDetectorError(description: "\(path): cannot read the detection record")
            }
            let decoder = JSONDecoder()
            var searches: [Search] = []
            for (number, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
            where !line.allSatisfy({ $0 == UInt8(ascii: " ") }) {
                let search: Search
                do {
                    search = try decoder.decode(Search.self, from: Data(line))
                } catch {
                    throw FaceDetectorError(description: "\(path):\(number + 1): not a recorded search (\(Self.reason(error)))")
                }
                guard search.isWellFormed else {
                    throw FaceDetectorError(description: "\(path):\(number + 1): a recorded search needs a frame ≥ 0, 4 region values, 2 input values, 5 values per face and seconds ≥ 0")
                }
                searches.append(search)
            }
            self.path = path
            recorded = Dictionary(searches.map { ($0.key, $0) }, uniquingKeysWith: { _, later in later })
            var byFrame: [Int: [FaceDetection]] = [:]
            for search in searches {
                for face in search.detections {
                    var faces = byFrame[search.frame, default: []]
                    if let same = faces.firstIndex(where: { $0.rect.intersectionOverUnion(face.rect) > 0.5 }) {
                        if faces[same].score < face.score { faces[same] = face }
                    } else {
                        faces.append(face)
                    }
                    byFrame[search.frame] = faces
                }
            }
            facesByFrame = byFrame
            medianSeconds = Dictionary(grouping: searches, by: \.kind).mapValues { kind in
                let sorted = kind.map(\.seconds).sorted()
                return sorted[sorted.count / 2]
            }
        }

        private static func reason(_ error: Error) -> String {
            switch error {
            case DecodingError.keyNotFound(let key, _): return "no \"\(key.stringValue)\""
            case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
                return "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
            case DecodingError.dataCorrupted(let context):
                return context.codingPath.isEmpty ? "not JSON" : "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\": \(context.debugDescription)"
            default: return "\(error)"
            }
        }

        /// The faces a search finds (frame pixels) and how long it takes.
        public func answer(frame: Int, kind: Search.Kind, region: FaceRect,
                           input: (width: Int, height: Int)) -> (faces: [FaceDetection], seconds: Double) {
            let key = Search(frame: frame, kind: kind, region: region, input: input, faces: [], seconds: 0).key
            if let search = recorded[key] {
                lock.withLock { countsStorage.exact += 1 }
                return (search.detections, search.seconds)
            }
            lock.withLock { countsStorage.approximate += 1 }
            let scale = min(Double(input.width) / max(1, region.width), Double(input.height) / max(1, region.height))
            let faces = (facesByFrame[frame] ?? []).filter { face in
                let (cx, cy) = face.rect.center
                return cx >= region.x && cx < region.maxX && cy >= region.y && cy < region.maxY
                    && face.rect.height * scale >= Self.findableHeight
            }
            return (faces, medianSeconds[kind] ?? 0)
        }

        func answer(_ pass: DetectionPlanner.Pass) -> (faces: [FaceDetection], seconds: Double) {
            answer(frame: pass.frame, kind: Search.Kind(pass.kind), region: pass.region, input: pass.input)
        }

        /// The smallest face CenterFace finds, in pixels of its input.
        public static let findableHeight = 20.0
    }
}

extension DetectionEvidence.Search.Kind {
    init(_ kind: DetectionPlanner.Kind) {
        switch kind {
        case .whole: self = .whole
        case .tile: self = .tile
        case .follow(_, let backwards): self = backwards ? .trace : .follow
        }
    }
}

/// The detector of a replay: never asked (the record answers), it only
/// stands where a network would, so that no model is loaded.
final class NoNetwork: FaceDetecting {
    func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                region: FaceRect, input: (width: Int, height: Int), keepAspect: Bool,
                threshold: Float) throws -> [FaceDetection] {
        throw FaceDetectorError(description: "a replay runs no network")
    }
}
