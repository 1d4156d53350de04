import Foundation
import Logging
import RecorderCore

/// What a server command may touch: the recorder, the upload queue, the
/// box's bounds on what a server may ask, and the one settings path its
/// clientConfig goes through. Built by the link when a command arrives.
///
/// Threading: main-loop thread only (see ServerLink.swift).
struct CommandContext {
    weak var recorder: RecorderControl?
    let uploads: UploadQueue?
    let bounds: ServerBounds
    let settings: SettingsKeeper?
    /// False: the server's autoUpload requests are declined (`server.accept_auto_uploads`).
    let acceptAutomaticUploads: Bool
    /// The server's address as logs and the settings store name it.
    let server: String
    let clock: LinkClock
    let logger: Logger
}

/// Seconds as the link's log lines write them.
func seconds(_ value: Double) -> String { String(format: "%.3f", value) }
