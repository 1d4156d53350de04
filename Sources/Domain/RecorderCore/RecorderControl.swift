/// What a server link may see and do on the recorder: read and pin its
/// chunks, know whether one is being written, restart a waiting capture.
/// Settings are not changed through it: they go through `SettingsKeeper`
/// like every other source's. Here, below both, so that the recorder (Engine)
/// conforms where it is defined and the link (Service) and its tests need
/// neither each other's target nor the service.
///
/// Threading: main-loop thread only.
public protocol RecorderControl: AnyObject {
    var currentTuning: RecordingTuning { get }
    /// The recorded chunks (uploads read and pin them).
    var catalog: ChunkCatalog { get }
    /// True while a pipeline runs, so a chunk is being written now.
    var isCapturing: Bool { get }
    /// Restarts capture now if it is waiting to retry; true if it did.
    @discardableResult func resumeIfWaiting() -> Bool
}
