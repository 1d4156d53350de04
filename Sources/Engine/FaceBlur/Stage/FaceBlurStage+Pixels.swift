import CoreMetrics
import FaceDetectorSupport
import Foundation
import GStreamerSupport
import Logging
import Recorder

/// Hiding in place on the frame's planes: pixelation, fill, black.
extension FaceBlurStage {
    func hide(_ regions: [FaceRect], in frame: VideoFrame) {
        for region in regions {
            switch settings.mode {
            case .pixelate:
                pixelate(region, cell: max(hiding.minimumCell, Int(min(region.width, region.height)) / hiding.cellsAcross), in: frame)
            case .fill:
                fillBlack(region, in: frame)
            }
        }
    }

    /// Pixelates `region` (luma and chroma) in cells of `cell` pixels.
    func pixelate(_ region: FaceRect, cell: Int, in frame: VideoFrame) {
        let half = FaceRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2)
        let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
        let y = frame.planes[0]
        PlaneEditor.pixelate(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, cell: cell)
        if frame.format == .i420 {
            for p in frame.planes[1...2] {
                PlaneEditor.pixelate(p.data, width: cw, height: ch, stride: p.stride, rect: half, cell: max(2, cell / 2))
            }
        } else {
            PlaneEditor.pixelate(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride,
                                 channels: 2, rect: half, cell: max(2, cell / 2))
        }
    }

    func blackOut(_ frame: VideoFrame) {
        fillBlack(FaceRect(x: 0, y: 0, width: Double(frame.width), height: Double(frame.height)), in: frame)
    }

    /// Paints `region` black (luma 16, neutral chroma).
    func fillBlack(_ region: FaceRect, in frame: VideoFrame) {
        let half = FaceRect(x: region.x / 2, y: region.y / 2, width: region.width / 2, height: region.height / 2)
        let (cw, ch) = ((frame.width + 1) / 2, (frame.height + 1) / 2)
        let y = frame.planes[0]
        PlaneEditor.fill(y.data, width: frame.width, height: frame.height, stride: y.stride, rect: region, value: 16)
        if frame.format == .i420 {
            for p in frame.planes[1...2] { PlaneEditor.fill(p.data, width: cw, height: ch, stride: p.stride, rect: half, value: 128) }
        } else {
            PlaneEditor.fill(frame.planes[1].data, width: cw, height: ch, stride: frame.planes[1].stride, channels: 2, rect: half, value: 128)
        }
    }
}
