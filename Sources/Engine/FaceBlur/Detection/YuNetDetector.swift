import Foundation
import YuNetSupport

/// The network a kind of search runs on.
public enum FaceNetwork: String, Sendable, CaseIterable {
    /// CenterFace through OpenCV DNN (`FaceDetector`): the best recall on
    /// small, dark and turned faces, at about 3 ms per 96×96 of input.
    case centerFace = "centerface"
    /// YuNet from libfacedetection (`YuNetDetector`): about half
    /// CenterFace's time per pixel, but fewer of the small faces at dusk.
    case yuNet = "yunet"
}

/// YuNet (libfacedetection) as a `FaceDetecting`.
///
/// Threading: not thread-safe; one detection thread uses an instance.
public final class YuNetDetector: FaceDetecting {
    private let net: YuNetNet

    /// The library's file name in the models folder, and the OpenMP runtime
    /// it was linked against (named as the wheel's auditwheel renamed it).
    public static let libraryName = "libfacedetection.so"
    public static let openMPName = "libgomp-a34b3233.so.1.0.0"

    /// Loads `libraryPath` (the OpenMP runtime beside it); throws with the
    /// reason when it is missing or not libfacedetection.
    public init(libraryPath: String) throws {
        guard FileManager.default.isReadableFile(atPath: libraryPath) else {
            throw FaceDetectorError(description: "the YuNet library \(libraryPath) is missing or unreadable: scripts/fetch-face-model installs it on x86_64, the only machine its wheel is built for (elsewhere leave privacy.follow_network at \"centerface\")")
        }
        let openMP = (libraryPath as NSString).deletingLastPathComponent + "/" + Self.openMPName
        do {
            net = try YuNetNet(libraryPath: libraryPath,
                               openMPPath: FileManager.default.fileExists(atPath: openMP) ? openMP : nil)
        } catch {
            throw FaceDetectorError(description: "cannot load YuNet from \(libraryPath): \(error)")
        }
    }

    /// YuNet's boxes are tighter than CenterFace's, which the tracker's
    /// margin and the tests' face boxes are made for, with the same centre.
    /// Each side moves out by this fraction.
    static let boxGrowth = 0.06

    public func detect(luma: UnsafePointer<UInt8>, width: Int, height: Int, stride: Int,
                       region r: FaceRect, input: (width: Int, height: Int), keepAspect: Bool,
                       threshold: Float) throws -> [FaceDetection] {
        let region = (x: Int(r.x.rounded()), y: Int(r.y.rounded()), width: Int(r.width.rounded()), height: Int(r.height.rounded()))
        do {
            return try net.detect(luma: luma, width: width, height: height, stride: stride, region: region,
                                  input: input, keepAspect: keepAspect, threshold: threshold).map {
                let box = FaceRect(x: Double($0.x), y: Double($0.y), width: Double($0.width), height: Double($0.height))
                return FaceDetection(rect: box.expanded(by: Self.boxGrowth), score: $0.score)
            }
        } catch {
            throw FaceDetectorError(description: "face detection (YuNet) failed: \(error)")
        }
    }
}
