/// Matches the server's `{"status":…}` replies to what they answer, and
/// notices when they no longer can be.
///
/// Replies carry no ids; servers answer in order. So every message the
/// recorder sends that earns a reply is written down here, in sending order,
/// and each reply goes to the oldest entry still owed one:
///
/// - `chunkSaved` earns exactly one reply: an error from old servers
///   ("Unknown message type"), a success from new ones;
/// - an upload earns, for its metadata, nothing on success or one error
///   (the server could not open the file), and for its binary message one
///   reply: a success, an error, or after a refused metadata a second error
///   ("Metadata not received yet"). So the only reply sequences that fit
///   an upload are [success], [error] and [error, error].
///
/// An upload is only settled when nothing more can belong to it: after
/// [error, error], or once the file is sent and a *barrier* came back
/// (the pong to a ping sent after the file: a server that answers in order,
/// as AllSpark servers do, has sent every reply to the upload before it).
/// Until then a success is only noted, never reported as received.
///
/// A reply that fits nothing — one that comes when none is owed, a success
/// to an upload whose sequence already holds a reply, a success after an
/// error — means the ledger has lost count: every later attribution could
/// be wrong. It reports `.untrusted`; the connection must then be dropped
/// and whatever was not confirmed sent again on a fresh one.
///
/// A `chunkSaved` is written down with its text: when a connection ends,
/// `unansweredAnnouncements` are the ones the server may never have read (a
/// server shutting down stops reading), to announce again on the next one.
///
/// Pure value type; the connection owns one per socket and starts a fresh
/// one on reconnect (a new connection owes no old replies).
public struct ReplyLedger<Upload: Equatable>: Equatable {
    public enum Entry: Equatable {
        /// A `chunkSaved`, with its text (to send again if it gets no reply).
        case chunkSaved(String)
        case upload(Upload)
    }

    /// What a reply (or a barrier) means.
    public enum Attribution: Equatable {
        case chunkSaved(success: Bool)
        /// The upload's outcome, final: received (success) or refused.
        case upload(Upload, success: Bool, message: String?)
        /// A reply noted for the upload in flight; what follows settles it.
        case noted(Upload)
        /// The second error of an upload that was already settled as refused.
        case tailOfFailedUpload(Upload)
        /// Nothing to settle yet (a barrier before the upload's reply).
        case nothing
        /// The replies no longer fit what was sent (why, for the log).
        case untrusted(String)
    }

    struct Reply: Equatable {
        var success: Bool
        var message: String?
    }

    enum Owed: Equatable {
        case chunkSaved(String)
        /// An upload: the replies it got so far, and whether its file is sent and the barrier after it came back.
        case upload(Upload, replies: [Reply], barrier: Bool)
    }

    private var owed: [Owed] = []
    private var settledRefusal: Upload?

    public init() {}

    public var awaiting: [Entry] {
        owed.map {
            switch $0 {
            case .chunkSaved(let text): return .chunkSaved(text)
            case .upload(let u, _, _): return .upload(u)
            }
        }
    }

    /// The `chunkSaved` texts still owed a reply, oldest first.
    public var unansweredAnnouncements: [String] {
        owed.compactMap { if case .chunkSaved(let text) = $0 { return text } else { return nil } }
    }

    public mutating func sent(_ entry: Entry) {
        switch entry {
        case .chunkSaved(let text): owed.append(.chunkSaved(text))
        case .upload(let u): owed.append(.upload(u, replies: [], barrier: false))
        }
    }

    /// An upload is owed its replies (nothing that earns a reply may be sent alongside it).
    public var isWaitingForUpload: Bool {
        owed.contains { if case .upload = $0 { return true } else { return false } }
    }

    public mutating func received(success: Bool, message: String?) -> Attribution {
        if let tail = settledRefusal {
            settledRefusal = nil
            if !success, message?.lowercased().contains("metadata") == true { return .tailOfFailedUpload(tail) }
        }
        guard let head = owed.first else {
            return .untrusted("a \(success ? "success" : "error") reply came when none was owed")
        }
        switch head {
        case .chunkSaved:
            owed.removeFirst()
            return .chunkSaved(success: success)
        case .upload(let upload, var replies, let barrier):
            replies.append(Reply(success: success, message: message))
            switch replies.map(\.success) {
            case [true], [false]:
                guard barrier else {
                    owed[0] = .upload(upload, replies: replies, barrier: false)
                    return .noted(upload)
                }
                return settle(upload, replies)
            case [false, false]:
                return settle(upload, replies)
            default:
                owed.removeFirst()
                let sequence = replies.map { $0.success ? "success" : "error" }.joined(separator: ", ")
                return .untrusted("the upload got the replies [\(sequence)], which fit no upload (a success comes alone, an error at most twice)")
            }
        }
    }

    /// The pong to the ping sent after `upload`'s file: every reply to it has come, if the server answers in order.
    public mutating func barrier(after upload: Upload) -> Attribution {
        guard let index = owed.firstIndex(where: { if case .upload(let u, _, _) = $0 { return u == upload } else { return false } }),
              case .upload(_, let replies, _) = owed[index] else { return .nothing }
        // Replies to what came before are still owed (a server whose pongs overtake its replies): wait for them.
        guard index == 0, !replies.isEmpty else {
            owed[index] = .upload(upload, replies: replies, barrier: true)
            return .nothing
        }
        return settle(upload, replies)
    }

    private mutating func settle(_ upload: Upload, _ replies: [Reply]) -> Attribution {
        owed.removeFirst()
        let success = replies == [Reply(success: true, message: replies.first?.message)]
        // A refused upload whose second error is still to come (its metadata was refused) may send it later.
        if !success, replies.count == 1 { settledRefusal = upload }
        return .upload(upload, success: success, message: replies.first?.message)
    }
}
