import XCTest
import FaceBlur
import Foundation
import RecorderTestSupport

/// A fixed camera on the coffee photo with the astronaut standing in it, swaying slowly, face
/// about 110 px high (`findFaces` measures the astronaut's face to scale it): the scene the
/// preview and stream privacy tests play live and search for the face.
func standingAstronautClip(in dir: TemporaryDirectory, findFaces: (RawImage) throws -> [FaceRect]) throws -> URL {
    let background = try decodeFrames(testAsset("coffee.png"))[0].resized(width: 640, height: 360)
    let astronaut = try decodeFrames(testAsset("astronaut.png"))[0]
    let face = try XCTUnwrap(try findFaces(astronaut).first)
    let scale = 110 / face.height
    var frames: [RawImage] = []
    for i in 0..<150 {
        var frame = background
        // A slow sway, so the picture changes as a real scene does.
        frame.draw(astronaut, x: 260 + 20 * sin(Double(i) / 15) - face.x * scale, y: 90 - face.y * scale, scale: scale)
        frames.append(frame)
    }
    let url = dir.file("standing.mp4")
    try writeClip(frames, to: url)
    return url
}
