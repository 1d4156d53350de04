import FaceDetectorSupport
import Foundation

/// A rectangle in frame pixels.
public struct FaceRect: Equatable, Sendable, CustomStringConvertible {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    public var maxX: Double { x + width }
    public var maxY: Double { y + height }
    public var area: Double { max(0, width) * max(0, height) }
    public var center: (x: Double, y: Double) { (x + width / 2, y + height / 2) }

    /// Grows each side by `fraction` of the width/height.
    public func expanded(by fraction: Double) -> FaceRect {
        FaceRect(x: x - width * fraction, y: y - height * fraction,
                 width: width * (1 + 2 * fraction), height: height * (1 + 2 * fraction))
    }

    public func offsetBy(dx: Double, dy: Double) -> FaceRect {
        FaceRect(x: x + dx, y: y + dy, width: width, height: height)
    }

    public func union(_ other: FaceRect) -> FaceRect {
        let minX = min(x, other.x), minY = min(y, other.y)
        return FaceRect(x: minX, y: minY, width: max(maxX, other.maxX) - minX, height: max(maxY, other.maxY) - minY)
    }

    public func intersection(_ other: FaceRect) -> FaceRect? {
        let minX = max(x, other.x), minY = max(y, other.y)
        let w = min(maxX, other.maxX) - minX, h = min(maxY, other.maxY) - minY
        return w > 0 && h > 0 ? FaceRect(x: minX, y: minY, width: w, height: h) : nil
    }

    public func intersectionOverUnion(_ other: FaceRect) -> Double {
        guard let i = intersection(other) else { return 0 }
        return i.area / (area + other.area - i.area)
    }

    public var description: String { String(format: "(%.0f,%.0f %.0fx%.0f)", x, y, width, height) }
}

public struct FaceDetection: Sendable {
    public var rect: FaceRect
    public var score: Float
}

public struct FaceDetectorError: Error, CustomStringConvertible {
    public var description: String
}

/// What the face-blur stage asks of a detector: faces within `region` at
/// network input size `input`. `FaceDetector` is the real one; tests wrap it
/// (a slowed or failing detector) to prove how the stage behaves then.
///
/// Threading: one detection thread uses an instance.
public protocol FaceDetecting: AnyObject {
    func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                region: FaceRect, input: (width: Int, height: Int), keepAspect: Bool,
                threshold: Float) throws -> [FaceDetection]
}

/// What runs the CenterFace network. The same model, pre- and post-processing
/// either way; ONNX Runtime is several times faster on it than Debian's
/// OpenCV.
public enum InferenceRuntime: String, Sendable, CaseIterable {
    /// ONNX Runtime where `scripts/fetch-face-model` installed it (x86_64 and
    /// aarch64), else OpenCV DNN, with a warning saying which file is missing.
    case auto
    /// ONNX Runtime; an error when its files are missing.
    case onnxRuntime = "onnxruntime"
    /// OpenCV DNN (Debian's package; every machine has it).
    case openCV = "opencv"
}

/// Which searches run CenterFace quantised to 8-bit integers
/// (`FaceDetector.quantizedModelName`).
public enum SearchPrecision: String, Sendable, CaseIterable {
    /// Every search in 8-bit integers where ONNX Runtime and the quantised
    /// model are installed, what it is unsure of settled in floating point
    /// (`ScreenedDetector`: alone, the 8-bit network scores some non-faces
    /// above the threshold).
    case auto
    /// Every search in floating point.
    case float
}

/// CenterFace, run by ONNX Runtime or OpenCV DNN (`FaceDetectorSupport`).
///
/// Threading: not thread-safe; one thread uses a detector (the stage's
/// detection thread, or a test).
public final class FaceDetector: FaceDetecting {
    private let net: CenterFaceNet
    /// Keeps the networks of a detector made on its own alive.
    private let ownNets: SharedNets?

    /// ONNX Runtime's library, as `scripts/fetch-face-model` installs it beside the model.
    public static let onnxRuntimeLibraryName = "libonnxruntime.so.1.32.0"
    /// CenterFace with dynamic input sizes, which ONNX Runtime needs, written beside the model by the same script.
    public static let dynamicModelName = "centerface-dynamic.onnx"
    /// The same network quantised to 8-bit integers (about twice as fast on a
    /// CPU with VNNI), written and checked by the same script; ONNX Runtime only.
    public static let quantizedModelName = "centerface-int8.onnx"

    /// Loads the model (`runtime`: see `SharedNets`); throws with the reason
    /// when it is missing or unreadable. On OpenCV the detector keeps a
    /// network per input size of its own; on ONNX Runtime it has a session.
    public init(modelPath: String, threads: Int = 2, runtime: InferenceRuntime = .auto) throws {
        let resolved = try Self.resolve(modelPath: modelPath, runtime: runtime)
        if case .openCV = resolved {
            do {
                net = try CenterFaceNet(modelPath: modelPath, threads: threads)
            } catch {
                throw FaceDetectorError(description: "cannot load the face model \(modelPath): \(error)")
            }
            ownNets = nil
        } else {
            let nets = try SharedNets(modelPath: modelPath, threads: threads, sharers: 1, resolved: resolved)
            net = try CenterFaceNet(sharing: nets.nets)
            ownNets = nets
        }
    }

    /// Where the network will run, after checking the files `runtime` needs.
    fileprivate enum ResolvedRuntime {
        case openCV(fallbackReason: String?)
        case onnxRuntime(library: String, dynamicModel: String)
    }

    fileprivate static func resolve(modelPath: String, runtime: InferenceRuntime) throws -> ResolvedRuntime {
        try checkReadable(modelPath)
        let folder = (modelPath as NSString).deletingLastPathComponent as NSString
        let library = folder.appendingPathComponent(onnxRuntimeLibraryName)
        let dynamicModel = folder.appendingPathComponent(dynamicModelName)
        let missing = [library, dynamicModel].filter { !FileManager.default.isReadableFile(atPath: $0) }
        switch runtime {
        case .openCV:
            return .openCV(fallbackReason: nil)
        case .auto where !missing.isEmpty:
            return .openCV(fallbackReason: "\(missing.joined(separator: " and ")) missing (scripts/fetch-face-model installs \(missing.count > 1 ? "them" : "it") on x86_64 and aarch64)")
        case .onnxRuntime where !missing.isEmpty:
            throw FaceDetectorError(description: "privacy.runtime = \"onnxruntime\" but \(missing.joined(separator: " and ")) \(missing.count > 1 ? "are" : "is") missing or unreadable: scripts/fetch-face-model installs ONNX Runtime on x86_64 and aarch64 (elsewhere use \"opencv\")")
        case .auto, .onnxRuntime:
            return .onnxRuntime(library: library, dynamicModel: dynamicModel)
        }
    }

    /// Networks shared by the detectors of one stage (`FaceDetector(sharing:)`).
    /// In ONNX Runtime one session serves them all; in OpenCV each detection
    /// thread borrows the network of the input size it needs, so the large
    /// inputs' activations are not kept once per thread.
    public final class SharedNets: @unchecked Sendable {
        fileprivate let nets: CenterFaceNet.Shared
        /// What runs the network (never `.auto`).
        public let runtime: InferenceRuntime
        /// Why `.auto` fell back to OpenCV (nil otherwise).
        public let fallbackReason: String?

        /// Loads the model for `sharers` detectors that detect at once. ONNX
        /// Runtime's files are looked for beside `modelPath`.
        public convenience init(modelPath: String, threads: Int = 2, sharers: Int, runtime: InferenceRuntime = .auto) throws {
            try self.init(modelPath: modelPath, threads: threads, sharers: sharers,
                          resolved: FaceDetector.resolve(modelPath: modelPath, runtime: runtime))
        }

        /// The 8-bit model installed beside `modelPath`, in ONNX Runtime; nil
        /// when it is not installed or the network runs on OpenCV DNN.
        public static func quantized(besideModel modelPath: String, runtime: InferenceRuntime = .auto) throws -> SharedNets? {
            guard case .onnxRuntime(let library, let dynamicModel) = try FaceDetector.resolve(modelPath: modelPath, runtime: runtime) else {
                return nil
            }
            let quantized = ((dynamicModel as NSString).deletingLastPathComponent as NSString).appendingPathComponent(quantizedModelName)
            guard FileManager.default.isReadableFile(atPath: quantized) else { return nil }
            return try SharedNets(modelPath: modelPath, threads: 1, sharers: 1,
                                  resolved: .onnxRuntime(library: library, dynamicModel: quantized))
        }

        fileprivate init(modelPath: String, threads: Int, sharers: Int, resolved: ResolvedRuntime) throws {
            switch resolved {
            case .openCV(let reason):
                fallbackReason = reason
                self.runtime = .openCV
                do {
                    nets = try CenterFaceNet.Shared(modelPath: modelPath, threads: threads, sharers: max(1, sharers))
                } catch {
                    throw FaceDetectorError(description: "cannot load the face model \(modelPath): \(error)")
                }
            case .onnxRuntime(let library, let dynamicModel):
                fallbackReason = nil
                self.runtime = .onnxRuntime
                do {
                    nets = try CenterFaceNet.Shared(onnxRuntimeLibrary: library, modelPath: dynamicModel)
                } catch {
                    throw FaceDetectorError(description: "cannot run the face model in ONNX Runtime: \(error)")
                }
            }
        }
    }

    /// A detector borrowing its networks from `shared` (same detections as its own would give).
    public init(sharing shared: SharedNets) throws {
        ownNets = nil
        do {
            net = try CenterFaceNet(sharing: shared.nets)
        } catch {
            throw FaceDetectorError(description: "cannot make a face detector: \(error)")
        }
    }

    private static func checkReadable(_ modelPath: String) throws {
        guard FileManager.default.isReadableFile(atPath: modelPath) else {
            // Present but not readable is a permissions problem, not a missing install.
            if FileManager.default.fileExists(atPath: modelPath) {
                throw FaceDetectorError(description: "the face model \(modelPath) is not readable by this user (uid \(getuid())): check its permissions and those of its folders (e.g. chmod 644 \(modelPath))")
            }
            throw FaceDetectorError(description: "the face model \(modelPath) is missing; scripts/setup installs it (scripts/fetch-face-model)")
        }
    }

    /// Network input size for a region: `width` wide (a multiple of 32), the
    /// height following the region's aspect ratio, rounded to a multiple of 32.
    public static func inputSize(forRegionWidth w: Int, height h: Int, inputWidth: Int) -> (width: Int, height: Int) {
        let width = max(32, (inputWidth / 32) * 32)
        let height = max(32, Int((Double(width) * Double(h) / Double(max(1, w)) / 32).rounded()) * 32)
        return (width, height)
    }

    /// Detects faces on an 8-bit luma plane within `region` (nil: the whole frame).
    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region: FaceRect? = nil, inputWidth: Int, threshold: Float) throws -> [FaceDetection] {
        let r = region ?? FaceRect(x: 0, y: 0, width: Double(width), height: Double(height))
        let rw = Int(r.width.rounded()), rh = Int(r.height.rounded())
        // Never upscale beyond the region's own size (rounded up to the network's multiple of 32).
        let input = Self.inputSize(forRegionWidth: rw, height: rh, inputWidth: min(inputWidth, ((rw + 31) / 32) * 32))
        return try detect(luma: luma, width: width, height: height, stride: stride, region: r,
                          input: input, keepAspect: false, threshold: threshold)
    }

    /// Detects faces within `region` at network input size `input` (multiples
    /// of 32). `keepAspect`: the region is scaled uniformly into the input's
    /// top-left corner and the rest filled (any region shape, one input size);
    /// otherwise it is stretched to the input.
    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region r: FaceRect, input: (width: Int, height: Int), keepAspect: Bool,
                       threshold: Float) throws -> [FaceDetection] {
        let region = PixelRect(x: Int(r.x.rounded()), y: Int(r.y.rounded()), width: Int(r.width.rounded()), height: Int(r.height.rounded()))
        let faces: [CenterFaceNet.Face]
        do {
            faces = try net.detect(luma: luma, width: width, height: height, stride: stride, region: region,
                                   input: input, fit: keepAspect ? .keepAspect : .stretch, threshold: threshold)
        } catch {
            throw FaceDetectorError(description: "face detection failed: \(error)")
        }
        return faces.map {
            FaceDetection(rect: FaceRect(x: Double($0.x), y: Double($0.y), width: Double($0.width), height: Double($0.height)), score: $0.score)
        }
    }
}

/// A fast network screens, the reference network settles what it is unsure
/// of: each face the screen finds below `sure` is searched for again by the
/// reference on a square around it (the size and input of a follow: 2.5
/// times its size, at 96 × 96) and kept only where the reference finds a
/// face there, with the reference's box. CenterFace in 8 bits scores some
/// non-faces just above the threshold where the float network scores them
/// well below it, so its unsure finds are the float network's call. The
/// reference answers at `settle` (0.2), below the search threshold: two
/// networks agreeing is evidence enough, and in the follow square, a
/// different scale and crop from the search's, small faces at dusk score lower.
///
/// Threading: as its two detectors, one thread uses it.
public final class ScreenedDetector: FaceDetecting {
    private let screen: any FaceDetecting
    private let reference: any FaceDetecting
    private let sure: Float
    private let settle: Float
    /// The square and input size of a follow.
    private static let follow = PrivacyTuning.live.searches

    public init(screen: any FaceDetecting, reference: any FaceDetecting, sure: Float = 0.5, settle: Float = 0.2) {
        self.screen = screen
        self.reference = reference
        self.sure = sure
        self.settle = settle
    }

    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region: FaceRect, input: (width: Int, height: Int), keepAspect: Bool,
                       threshold: Float) throws -> [FaceDetection] {
        let found = try screen.detect(luma: luma, width: width, height: height, stride: stride, region: region,
                                      input: input, keepAspect: keepAspect, threshold: threshold)
        var faces = found.filter { $0.score >= sure }
        for unsure in found where unsure.score < sure {
            let side = max(unsure.rect.width, unsure.rect.height) * Self.follow.followScale
            let (cx, cy) = unsure.rect.center
            let square = FaceRect(x: (cx - side / 2).rounded(), y: (cy - side / 2).rounded(), width: side.rounded(), height: side.rounded())
            let settled = try reference.detect(luma: luma, width: width, height: height, stride: stride, region: square,
                                               input: (Self.follow.followInput, Self.follow.followInput), keepAspect: true,
                                               threshold: min(threshold, settle))
            for face in settled where face.rect.intersectionOverUnion(unsure.rect) > 0.3
                && !faces.contains(where: { $0.rect.intersectionOverUnion(face.rect) > 0.5 }) {
                faces.append(face)
            }
        }
        return faces.sorted { $0.score > $1.score }
    }
}

/// Pixelation and fills on raw planes (I420/NV12), in place.
public enum PlaneEditor {
    /// Means of `block`×`block` cells of a plane, row-major, ceil(width/block) per row.
    public static func blockMeans(_ plane: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, block: Int) -> [UInt8] {
        PlanePixels.blockMeans(plane, width: width, height: height, stride: stride, block: block)
    }

    /// Replaces each cell of the rectangle with its mean.
    public static func pixelate(_ plane: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int,
                                channels: Int = 1, rect: FaceRect, cell: Int) {
        PlanePixels.pixelate(plane, width: width, height: height, stride: stride, channels: channels,
                             rect: PixelRect(x: Int(rect.x.rounded(.down)), y: Int(rect.y.rounded(.down)),
                                             width: Int(rect.width.rounded(.up)), height: Int(rect.height.rounded(.up))),
                             cell: max(1, cell))
    }

    /// Sets every byte of the (clipped) rectangle to `value`.
    public static func fill(_ plane: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int,
                            channels: Int = 1, rect: FaceRect, value: UInt8) {
        let x0 = max(0, Int(rect.x.rounded(.down))), y0 = max(0, Int(rect.y.rounded(.down)))
        let x1 = min(width, Int(rect.maxX.rounded(.up))), y1 = min(height, Int(rect.maxY.rounded(.up)))
        guard x1 > x0, y1 > y0 else { return }
        for row in y0..<y1 {
            (plane + row * stride + x0 * channels).update(repeating: value, count: (x1 - x0) * channels)
        }
    }
}
