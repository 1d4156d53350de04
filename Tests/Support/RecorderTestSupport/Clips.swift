import Foundation
import GStreamerSupport

/// An I420 picture held in memory, for building and checking test clips.
public struct RawImage: Equatable {
    public var width: Int
    public var height: Int
    public var y: [UInt8]
    public var u: [UInt8]
    public var v: [UInt8]

    public init(width: Int, height: Int, luma: UInt8 = 16) {
        self.width = width
        self.height = height
        y = [UInt8](repeating: luma, count: width * height)
        u = [UInt8](repeating: 128, count: ((width + 1) / 2) * ((height + 1) / 2))
        v = u
    }

    init(_ frame: VideoFrame) {
        self.init(width: frame.width, height: frame.height)
        let (cw, ch) = ((width + 1) / 2, (height + 1) / 2)
        func copy(_ plane: VideoFrame.Plane, _ w: Int, _ h: Int, into out: inout [UInt8]) {
            out.withUnsafeMutableBufferPointer { o in
                for row in 0..<h { (o.baseAddress! + row * w).update(from: plane.data + row * plane.stride, count: w) }
            }
        }
        copy(frame.planes[0], width, height, into: &y)
        copy(frame.planes[1], cw, ch, into: &u)
        copy(frame.planes[2], cw, ch, into: &v)
    }

    public var bytes: [UInt8] { y + u + v }

    public func luma(_ x: Int, _ y: Int) -> UInt8 { self.y[y * width + x] }

    /// Draws `image` scaled by `scale` with its top-left at (x, y), clipped
    /// to this picture, with brightness multiplied by `gain` (nearest neighbour).
    public mutating func draw(_ image: RawImage, x: Double, y ox: Double, scale: Double, gain: Double = 1) {
        let w = Int(Double(image.width) * scale), h = Int(Double(image.height) * scale)
        let x0 = Int(x.rounded()), y0 = Int(ox.rounded())
        for row in max(0, y0)..<min(height, y0 + h) {
            let sy = min(image.height - 1, Int(Double(row - y0) / scale))
            for col in max(0, x0)..<min(width, x0 + w) {
                let sx = min(image.width - 1, Int(Double(col - x0) / scale))
                let value = Double(image.y[sy * image.width + sx]) * gain
                self.y[row * width + col] = UInt8(max(0, min(255, value)))
                if row % 2 == 0, col % 2 == 0 {
                    let c = (row / 2) * ((width + 1) / 2) + col / 2
                    let sc = (sy / 2) * ((image.width + 1) / 2) + sx / 2
                    u[c] = image.u[sc]
                    v[c] = image.v[sc]
                }
            }
        }
    }

    /// The picture scaled to `width`×`height` (nearest neighbour).
    public func resized(width: Int, height: Int) -> RawImage {
        var out = RawImage(width: width, height: height)
        out.draw(self, x: 0, y: 0, scale: max(Double(width) / Double(self.width), Double(height) / Double(self.height)))
        return out
    }
}

public struct Rect: Equatable {
    public var x: Double, y: Double, width: Double, height: Double
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    /// The part inside a width×height frame, in whole pixels.
    public func clipped(width w: Int, height h: Int) -> (x0: Int, y0: Int, x1: Int, y1: Int)? {
        let x0 = max(0, Int(x.rounded(.up))), y0 = max(0, Int(y.rounded(.up)))
        let x1 = min(w, Int((x + width).rounded(.down))), y1 = min(h, Int((y + height).rounded(.down)))
        return x1 > x0 && y1 > y0 ? (x0, y0, x1, y1) : nil
    }
    public var area: Double { width * height }
    /// Whether the two overlap (touching edges do not).
    public func intersects(_ other: Rect) -> Bool {
        x < other.x + other.width && other.x < x + width && y < other.y + other.height && other.y < y + height
    }
}

/// Decodes a picture or video file into I420 frames.
public func decodeFrames(_ url: URL, decoder: String = "decodebin") throws -> [RawImage] {
    try decodeTimedFrames(url, decoder: decoder).map(\.image)
}

/// Decodes a picture or video file into I420 frames with their presentation times (ns).
public func decodeTimedFrames(_ url: URL, decoder: String = "decodebin") throws -> [(time: UInt64, image: RawImage)] {
    let pipeline = try Pipeline.parse("filesrc location=\"\(url.path)\" ! \(decoder) ! videoconvert ! video/x-raw,format=I420 ! appsink name=out sync=false")
    guard let element = pipeline.element(named: "out"), let sink = AppSink(element) else { throw GStreamerError("no appsink") }
    let lock = NSLock()
    var frames: [(time: UInt64, image: RawImage)] = []
    sink.setHandlers(onSample: { sample in
        if let image = try? sample.readingVideoFrame({ RawImage($0) }) {
            lock.withLock { frames.append((UInt64(sample.presentationTime ?? 0), image)) }
        }
        return true
    }, onEndOfStream: {})
    defer { sink.clearHandlers() }
    do {
        try pipeline.playToEnd(timeoutSeconds: 120)
    } catch {
        throw GStreamerError("decoding \(url.lastPathComponent): \(error)")
    }
    return lock.withLock { frames }
}

/// Encodes frames (all the same size) as H.264 at 30 fps into an mp4, near-losslessly.
public func writeClip(_ frames: [RawImage], to url: URL, fps: Int = 30) throws {
    guard let first = frames.first else { throw GStreamerError("no frames") }
    let pipeline = try Pipeline.parse("""
        appsrc name=src format=time caps=video/x-raw,format=I420,width=\(first.width),height=\(first.height),framerate=\(fps)/1 \
        ! x264enc pass=quant quantizer=12 speed-preset=veryfast key-int-max=\(fps) ! h264parse ! mp4mux ! filesink location="\(url.path)"
        """)
    guard let element = pipeline.element(named: "src"), let source = AppSource(element) else { throw GStreamerError("no appsrc") }
    source.element.set("block", true)
    source.element.set("max-bytes", 16_000_000)
    let feeder = Thread {
        let period = ClockTime(1_000_000_000 / fps)
        for (i, frame) in frames.enumerated() {
            _ = source.push(bytes: frame.bytes, presentationTime: ClockTime(i) * period, duration: period)
        }
        source.endOfStream()
    }
    do {
        try pipeline.playToEnd(timeoutSeconds: 120, whilePlaying: { feeder.start(); return nil })
    } catch {
        throw GStreamerError("encoding \(url.lastPathComponent): \(error)")
    }
}

/// Mean of |horizontal| + |vertical| luma differences inside `rect`: the
/// detail a face keeps. Pixelation collapses it.
public func detail(of image: RawImage, in rect: Rect) -> Double? {
    guard let r = rect.clipped(width: image.width - 1, height: image.height - 1) else { return nil }
    var sum = 0, n = 0
    for row in r.y0..<r.y1 {
        for col in r.x0..<r.x1 {
            let p = Int(image.luma(col, row))
            sum += abs(Int(image.luma(col + 1, row)) - p) + abs(Int(image.luma(col, row + 1)) - p)
            n += 1
        }
    }
    return n > 0 ? Double(sum) / Double(n) : nil
}

/// Mean absolute luma difference outside the given rectangles.
public func meanDifference(_ a: RawImage, _ b: RawImage, excluding rects: [Rect]) -> Double {
    var sum = 0, n = 0
    for row in 0..<a.height {
        for col in 0..<a.width {
            let x = Double(col), y = Double(row)
            if rects.contains(where: { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }) { continue }
            sum += abs(Int(a.luma(col, row)) - Int(b.luma(col, row)))
            n += 1
        }
    }
    return n > 0 ? Double(sum) / Double(n) : 0
}

/// A file of the evaluation corpus (bench/corpus; scripts/fetch-corpus, which `scripts/setup --tests` runs).
public func corpusFile(_ name: String) throws -> String {
    let path = repositoryRoot.appendingPathComponent("corpus/\(name)").path
    guard FileManager.default.fileExists(atPath: path) else {
        throw GStreamerError("\(path) is missing: run scripts/fetch-corpus (scripts/setup --tests does)")
    }
    return path
}

/// The real test images (scripts/fetch-test-assets).
public func testAsset(_ name: String) throws -> URL {
    let url = repositoryRoot.appendingPathComponent("test-assets/\(name)")
    guard FileManager.default.fileExists(atPath: url.path) else {
        throw GStreamerError("\(url.path) is missing: run scripts/fetch-test-assets (scripts/test does)")
    }
    return url
}

public var faceModelPath: String { repositoryRoot.appendingPathComponent("models/centerface.onnx").path }

/// True when `scripts/fetch-face-model` installed the 8-bit network: it does only where the
/// network's check passes on this machine's CPU (else it leaves `centerface-int8.onnx.rejected`
/// and the stage runs in floating point).
public var eightBitModelInstalled: Bool {
    FileManager.default.fileExists(atPath: repositoryRoot.appendingPathComponent("models/centerface-int8.onnx").path)
}
