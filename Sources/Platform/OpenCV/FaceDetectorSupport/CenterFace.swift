import CFaceDetector

// The OpenCV boundary: thin typed Swift over the CFaceDetector shim
// (CenterFace through OpenCV DNN, and in-place plane edits in C++). Every
// call into CFaceDetector is here; the face-blur stage above speaks only
// Swift types. Planes are 8-bit sample memory (a video frame's Y plane,
// or interleaved UV) given as pointer, size and stride in bytes.

/// A rectangle in whole pixels of a plane.
public struct PixelRect: Equatable, Sendable {
    public var x: Int, y: Int, width: Int, height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
}

/// Why the net could not be loaded or run, in OpenCV's or ONNX Runtime's words.
public struct CenterFaceError: Error, CustomStringConvertible {
    public var description: String
}

/// The CenterFace network, run by OpenCV DNN or (through `Shared`) ONNX Runtime.
///
/// Threading: not thread-safe; one thread uses an instance.
public final class CenterFaceNet {
    /// One face in frame pixels (not region-relative); `score` is the heatmap peak (0…1).
    public struct Face: Sendable {
        public var x: Float, y: Float, width: Float, height: Float
        public var score: Float
    }

    /// How a region is brought to the network's input size.
    public enum Fit: Sendable {
        /// Resized to the input (its aspect ratio changes).
        case stretch
        /// Scaled uniformly into the input's top-left corner, the rest filled
        /// with its mean; faces centred in the filler are dropped.
        case keepAspect
    }

    /// Networks that several `CenterFaceNet`s borrow from, one detection at
    /// a time: a thread runs one network at a time, so the instances of the
    /// detection threads need not each keep every input size's activations.
    /// The networks kept add up to at most `sharers` times the largest input
    /// area asked for (the largest idle ones are let go first); detections
    /// are the same as with an instance's own networks.
    ///
    /// Threading: the instances sharing it may run on different threads at once.
    public final class Shared: @unchecked Sendable {
        fileprivate let handle: OpaquePointer

        /// Loads the ONNX model; `sharers`: how many instances detect at once.
        public init(modelPath: String, threads: Int, sharers: Int) throws {
            var err = [CChar](repeating: 0, count: 512)
            guard let handle = afd_pool_create(modelPath, Int32(threads), Int32(sharers), &err, err.count) else {
                throw CenterFaceError(description: String(cString: err))
            }
            self.handle = handle
        }

        /// Runs the model in ONNX Runtime instead (`libraryPath`: libonnxruntime;
        /// `modelPath`: CenterFace with dynamic input sizes): one session for
        /// every input size and every instance, any number at once.
        public init(onnxRuntimeLibrary libraryPath: String, modelPath: String) throws {
            var err = [CChar](repeating: 0, count: 512)
            guard let handle = afd_pool_create_onnxruntime(libraryPath, modelPath, &err, err.count) else {
                throw CenterFaceError(description: String(cString: err))
            }
            self.handle = handle
        }

        deinit { afd_pool_free(handle) }
    }

    private let handle: OpaquePointer

    /// Loads the ONNX model. `threads` > 0 sets OpenCV's thread count, which
    /// is process-wide; 0 leaves OpenCV's setting alone.
    public init(modelPath: String, threads: Int) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let handle = afd_create(modelPath, Int32(threads), &err, err.count) else {
            throw CenterFaceError(description: String(cString: err))
        }
        self.handle = handle
    }

    /// An instance borrowing its networks from `shared`.
    public init(sharing shared: Shared) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let handle = afd_create_shared(shared.handle, &err, err.count) else {
            throw CenterFaceError(description: String(cString: err))
        }
        self.handle = handle
    }

    deinit { afd_free(handle) }

    /// Faces within `region` of the luma plane, highest score first, at
    /// network input size `input` (positive multiples of 32).
    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region: PixelRect, input: (width: Int, height: Int), fit: Fit,
                       threshold: Float, maximumFaces: Int = 64) throws -> [Face] {
        var faces = [afd_face](repeating: afd_face(), count: maximumFaces)
        var err = [CChar](repeating: 0, count: 512)
        let detect = fit == .keepAspect ? afd_detect_gray_fit : afd_detect_gray
        let n = detect(handle, luma, Int32(width), Int32(height), Int32(stride),
                       Int32(region.x), Int32(region.y), Int32(region.width), Int32(region.height),
                       Int32(input.width), Int32(input.height), threshold,
                       &faces, Int32(faces.count), &err, err.count)
        guard n >= 0 else { throw CenterFaceError(description: String(cString: err)) }
        return faces.prefix(Int(n)).map { Face(x: $0.x, y: $0.y, width: $0.width, height: $0.height, score: $0.score) }
    }
}

/// The process's malloc (glibc) tuned for detection threads that load and
/// drop large networks: see `afd_limit_heap_growth`.
public enum ProcessHeap {
    /// No new per-thread arenas, and blocks of `mmapThreshold` bytes or more
    /// mapped on their own (given back when freed). Process-wide; false where
    /// unsupported.
    @discardableResult
    public static func limitGrowth(mmapThreshold: Int) -> Bool {
        afd_limit_heap_growth(max(0, mmapThreshold)) == 0
    }
}

/// In-place edits and summaries of 8-bit planes, done in C++.
public enum PlanePixels {
    /// Means of `block`×`block` cells of a plane, row-major, ceil(width/block) per row.
    public static func blockMeans(_ plane: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int, block: Int) -> [UInt8] {
        let (w, h) = ((width + block - 1) / block, (height + block - 1) / block)
        var out = [UInt8](repeating: 0, count: w * h)
        out.withUnsafeMutableBufferPointer { _ = afd_block_means(plane, Int32(width), Int32(height), Int32(stride), Int32(block), $0.baseAddress!) }
        return out
    }

    /// Replaces each `cell`×`cell` block of `rect` (clipped to the plane)
    /// with its mean; `channels` interleaved samples per pixel (2 for NV12's UV).
    public static func pixelate(_ plane: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int,
                                channels: Int, rect: PixelRect, cell: Int) {
        _ = afd_pixelate_plane_n(plane, Int32(width), Int32(height), Int32(stride), Int32(channels),
                                 Int32(rect.x), Int32(rect.y), Int32(rect.width), Int32(rect.height), Int32(cell))
    }
}
