import CYuNet

// The libfacedetection boundary: thin typed Swift over the CYuNet shim
// (YuNet loaded at run time from the library the setup fetches). Every call
// into CYuNet is here.

/// Why YuNet could not be loaded or run.
public struct YuNetError: Error, CustomStringConvertible {
    public var description: String
}

/// libfacedetection's YuNet.
///
/// Threading: not thread-safe; one thread uses an instance (instances on
/// different threads may detect at once).
public final class YuNetNet {
    /// One face in frame pixels; `score` is YuNet's confidence (0…1).
    public struct Face: Sendable {
        public var x: Float, y: Float, width: Float, height: Float
        public var score: Float
    }

    private let handle: OpaquePointer

    /// Loads the library (once per process) and makes a detector.
    /// `openMPPath`: the OpenMP runtime the library was linked against.
    public init(libraryPath: String, openMPPath: String?) throws {
        var err = [CChar](repeating: 0, count: 512)
        guard let handle = yunet_create(libraryPath, openMPPath, &err, err.count) else {
            throw YuNetError(description: String(cString: err))
        }
        self.handle = handle
    }

    deinit { yunet_free(handle) }

    /// Faces within `region` of the luma plane (frame pixels), highest score
    /// first, the region brought to `input` (any size from 16 px).
    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region: (x: Int, y: Int, width: Int, height: Int), input: (width: Int, height: Int), keepAspect: Bool,
                       threshold: Float, maximumFaces: Int = 64) throws -> [Face] {
        var faces = [yunet_face](repeating: yunet_face(), count: maximumFaces)
        var err = [CChar](repeating: 0, count: 512)
        let n = yunet_detect_gray(handle, luma, Int32(width), Int32(height), Int32(stride),
                                  Int32(region.x), Int32(region.y), Int32(region.width), Int32(region.height),
                                  Int32(input.width), Int32(input.height), keepAspect ? 1 : 0, threshold,
                                  &faces, Int32(faces.count), &err, err.count)
        guard n >= 0 else { throw YuNetError(description: String(cString: err)) }
        return faces.prefix(Int(n)).map { Face(x: $0.x, y: $0.y, width: $0.width, height: $0.height, score: $0.score) }
    }
}
