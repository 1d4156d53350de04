import Foundation

/// Where the camera has taken the picture since the scene's reference frame, frame by frame
/// (`CameraMotion` estimates each step: pan, tilt, zoom, roll), and when the scene starts again.
///
/// The tracker works in *scene* coordinates, where a person standing still stays put while the
/// camera pans, pushes in or rolls: a point seen at p in a frame is at `travel.toScene(p)` in the
/// scene. After a long zoom or roll the scene would sit at a scale or angle where face sizes in
/// scene pixels stop meaning much, so it is *rebased*: the latest frame's pixels become the scene
/// again, and whoever holds scene coordinates carries them along by the transform `advance`
/// returns.
///
/// Pure value logic; the planner owns it (under the stage's lock).
struct SceneMotion {
    /// A frame's pixels → the scene.
    struct Travel: Equatable {
        var frameToScene = Similarity.identity
        func toScene(_ r: FaceRect) -> FaceRect { frameToScene.apply(r) }
        func toFrame(_ r: FaceRect) -> FaceRect { frameToScene.inverse.apply(r) }
        /// This travel in a scene rebased by `sceneToNew`.
        func rebased(by sceneToNew: Similarity) -> Travel { Travel(frameToScene: sceneToNew.after(frameToScene)) }
    }

    /// The latest frame's travel.
    private(set) var travel = Travel()
    /// How far the picture moved into the latest frame, on average over it, in scene pixels.
    private(set) var cameraSpeed = 0.0
    /// Scenes started so far (a search planned in an earlier one is brought into this one).
    private(set) var epoch = 0
    /// The last rebase's transform from the scene before.
    private var lastRebase = Similarity.identity

    /// A zoom past this factor, or a roll past `maxAngle` radians, since the scene's reference
    /// frame starts a new scene.
    static let maxScale = 2.0, maxAngle = 0.5

    /// The next frame, `cameraMotion` taking a point of the previous frame to where it is in this
    /// one (frames of `width`×`height`). Returns the transform from the old scene to the new one
    /// when the scene was rebased on it.
    mutating func advance(by cameraMotion: Similarity, width: Int, height: Int) -> Similarity? {
        travel.frameToScene = travel.frameToScene.after(cameraMotion.inverse)
        // The centre's shift, and what zoom and roll add at a typical distance from it.
        let centre = cameraMotion.displacement(ofX: Double(width) / 2, y: Double(height) / 2)
        let zoomAndRoll = (abs(cameraMotion.scale - 1) + abs(cameraMotion.angle)) * Double(width + height) / 4
        cameraSpeed = ((centre.dx * centre.dx + centre.dy * centre.dy).squareRoot() + zoomAndRoll) * travel.frameToScene.scale
        guard abs(log(travel.frameToScene.scale)) > log(Self.maxScale) || abs(travel.frameToScene.angle) > Self.maxAngle else { return nil }
        let sceneToNew = travel.frameToScene.inverse
        cameraSpeed *= sceneToNew.scale
        travel = Travel()
        epoch += 1
        lastRebase = sceneToNew
        return sceneToNew
    }

    /// A travel read in scene `epoch`, in the current scene: nil when it is older than the last
    /// rebase (the caller then has nothing to go by but what it still holds of that frame).
    func current(_ then: Travel, readIn epoch: Int) -> Travel? {
        if epoch == self.epoch { return then }
        if epoch == self.epoch - 1 { return then.rebased(by: lastRebase) }
        return nil
    }
}
