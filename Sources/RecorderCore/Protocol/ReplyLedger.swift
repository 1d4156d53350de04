/// Matches the server's `{"status":…}` replies to what they answer.
///
/// Replies carry no ids; servers answer in order. So every message the
/// recorder sends that earns a reply is written down here, in sending order,
/// and each reply is attributed to the oldest entry:
///
/// - `chunkSaved` earns exactly one reply from old servers (an error,
///   "Unknown message type") and new ones (success) alike;
/// - an upload's binary message earns one reply (success or error);
/// - an upload's metadata earns none on success, but an error when the
///   server cannot open the file, and then the binary that follows earns a
///   second error ("Metadata not received yet"). That one case is the only
///   place a count alone is not enough: after an upload's first reply was an
///   error, one following error that mentions metadata is taken as the tail
///   of that failed upload instead of being attributed to the next entry.
///
/// Pure value type; the connection owns one per socket and starts a fresh
/// one on reconnect (a new connection owes no old replies).
public struct ReplyLedger<Upload: Equatable>: Equatable {
    public enum Entry: Equatable {
        case chunkSaved
        case upload(Upload)
    }

    /// What a reply answered.
    public enum Attribution: Equatable {
        case chunkSaved(success: Bool)
        case upload(Upload, success: Bool, message: String?)
        /// The second error of an upload whose metadata was refused.
        case tailOfFailedUpload(Upload)
        /// A reply nothing is waiting for (logged; it changes nothing).
        case unexpected(success: Bool, message: String?)
    }

    public private(set) var awaiting: [Entry] = []
    private var failedUploadMayOweError: Upload?

    public init() {}

    public mutating func sent(_ entry: Entry) { awaiting.append(entry) }

    public var isWaitingForUpload: Bool {
        awaiting.contains { if case .upload = $0 { return true } else { return false } }
    }

    public mutating func received(success: Bool, message: String?) -> Attribution {
        if let failed = failedUploadMayOweError {
            failedUploadMayOweError = nil
            if !success, message?.lowercased().contains("metadata") == true {
                return .tailOfFailedUpload(failed)
            }
        }
        guard !awaiting.isEmpty else { return .unexpected(success: success, message: message) }
        switch awaiting.removeFirst() {
        case .chunkSaved:
            return .chunkSaved(success: success)
        case .upload(let upload):
            if !success { failedUploadMayOweError = upload }
            return .upload(upload, success: success, message: message)
        }
    }
}
