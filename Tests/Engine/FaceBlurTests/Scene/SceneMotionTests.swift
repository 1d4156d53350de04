import XCTest
@testable import FaceBlur

/// The camera's travel through the scene, and the scene started again after a long zoom.
final class SceneMotionTests: XCTestCase {
    func testAPanIsAddedUpAndAFaceStandingStillKeepsItsScenePlace() {
        var scene = SceneMotion()
        let face = FaceRect(x: 600, y: 300, width: 40, height: 40)
        let pan = Similarity(a: 1, b: 0, tx: -10, ty: 0)   // the picture moves 10 px left a frame
        for _ in 0..<5 { XCTAssertNil(scene.advance(by: pan, width: 1280, height: 720)) }
        XCTAssertEqual(scene.cameraSpeed, 10, accuracy: 1e-9)
        // Seen 50 px further left after five frames, it is where it was in the scene.
        let seen = scene.travel.toScene(face.offsetBy(dx: -50, dy: 0))
        XCTAssertEqual(seen.x, 600, accuracy: 1e-9)
        XCTAssertEqual(scene.epoch, 0)
    }

    func testAPushInPastTwiceTheScaleStartsANewSceneAndAnOldTravelIsCarriedIntoIt() {
        var scene = SceneMotion()
        let pushIn = Similarity(a: 1.1, b: 0, tx: -64, ty: -36)   // 10 % a frame about the centre of 1280×720
        var rebases: [Similarity] = []
        var before = scene.travel
        for frame in 1...8 {
            if frame == 8 { before = scene.travel }
            if let sceneToNew = scene.advance(by: pushIn, width: 1280, height: 720) { rebases.append(sceneToNew) }
        }
        XCTAssertEqual(rebases.count, 1, "1.1^8 = 2.14: once past twice the scale")
        XCTAssertEqual(scene.epoch, 1)
        XCTAssertEqual(scene.travel, SceneMotion.Travel(), "the latest frame is the scene again")
        let carried = try? XCTUnwrap(scene.current(before, readIn: 0))
        XCTAssertEqual(carried, before.rebased(by: rebases[0]), "a travel of the scene before, carried into this one")
        XCTAssertEqual(scene.current(before, readIn: 1), before, "a travel of this scene stays")
        var later = scene
        for _ in 1...8 { _ = later.advance(by: pushIn, width: 1280, height: 720) }
        XCTAssertEqual(later.epoch, 2)
        XCTAssertNil(later.current(before, readIn: 0), "two scenes back: nothing to go by")
    }
}
