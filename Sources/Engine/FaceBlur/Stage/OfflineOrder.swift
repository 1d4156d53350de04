/// Offline, the order in which searches are planned, run and applied, so that a file is blurred
/// the same way every time whichever detection thread finishes first: the streaming thread plans
/// each search (numbered in the order planned), the detection threads take them in that order
/// and deliver what they found, and the streaming thread applies the outcomes strictly in the
/// order planned, at points fixed by the file (`FaceBlurStage.planAhead`).
///
/// Pure bookkeeping; the stage keeps it under its lock.
struct OfflineOrder<Job, Outcome> {
    /// Planned and not yet taken by a detection thread.
    private var waiting: [(number: Int, job: Job)] = []
    /// Delivered and not yet applied, by number.
    private var delivered: [Int: Outcome] = [:]
    /// Planned and not yet applied, oldest first, with the frame taken in when each was planned.
    private(set) var unapplied: [(number: Int, frame: Int)] = []
    private var nextNumber = 0

    /// A search planned when frame `frame` was the latest taken in.
    mutating func plan(_ job: Job, frame: Int) {
        waiting.append((nextNumber, job))
        unapplied.append((nextNumber, frame))
        nextNumber += 1
    }

    /// The oldest search planned and not yet taken, for a detection thread.
    mutating func take() -> (number: Int, job: Job)? {
        waiting.isEmpty ? nil : waiting.removeFirst()
    }

    /// What search `number` found.
    mutating func deliver(_ outcome: Outcome, for number: Int) { delivered[number] = outcome }

    /// The frame taken in when the oldest unapplied search was planned, if any.
    var oldestUnappliedFrame: Int? { unapplied.first?.frame }

    /// Whether the oldest unapplied search has been delivered (`nil`: nothing to apply).
    var isNextDelivered: Bool? { unapplied.first.map { delivered[$0.number] != nil } }

    /// The oldest unapplied search's outcome, once delivered; it is then applied.
    mutating func takeNext() -> Outcome? {
        guard let number = unapplied.first?.number, let outcome = delivered.removeValue(forKey: number) else { return nil }
        unapplied.removeFirst()
        return outcome
    }
}
