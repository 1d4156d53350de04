/// The searches for one tracked face, at both ends of its sightings: ahead (a follow on each
/// later frame, until it misses too often) and behind (a trace back through the frames still
/// held, from its first sighting, until it misses too often or reaches the oldest frame).
///
/// Each change is a named transition with a table test (`FollowTests`); the planner decides
/// when a search runs and what it found, this decides what that means for the face. The
/// tracker keeps it with the face's sightings (`FaceTracker`), so a track's state has one owner.
struct Follow: Equatable {
    enum Ahead: Equatable {
        /// Followed; `misses` in a row since the network or its template last found it.
        case following(misses: Int)
        /// Missed too often: no longer followed (a whole-frame or tile search may find it again).
        case lost
    }
    enum Behind: Equatable {
        /// Traced back: `frontier` is the earliest frame searched, `misses` in a row there.
        case tracing(frontier: Int, misses: Int)
        /// No trace (over, or nothing held before the first sighting).
        case done
    }

    /// The frame the face was first found on by this track.
    var born: Int
    /// The latest frame on which the face was searched for ahead (found or not).
    var checkedThrough: Int
    var ahead = Ahead.following(misses: 0)
    var behind: Behind
    /// Follows answered by the face's template since the network last found it.
    var templateStreak = 0
    /// The box that started the track reached beyond the frame's edge, into the mirrored
    /// margin of the search that found it.
    var foundReachingBeyondEdge = false

    /// A face found on frame `index`, traced back from there when older frames are held.
    init(foundOn index: Int, traceBack: Bool) {
        born = index
        checkedThrough = index
        behind = traceBack ? .tracing(frontier: index, misses: 0) : .done
    }

    var isLost: Bool { ahead == .lost }
    var missesAhead: Int { if case .following(let misses) = ahead { return misses } else { return 0 } }
    var frontier: Int? { if case .tracing(let frontier, _) = behind { return frontier } else { return nil } }
    var missesBehind: Int { if case .tracing(_, let misses) = behind { return misses } else { return 0 } }

    /// Whether a search has still to look for the face on frame `index`: its follow has not
    /// reached it yet, or its trace back is still heading for it.
    func isPending(on index: Int) -> Bool {
        (born <= index && !isLost && checkedThrough < index) || (frontier ?? Int.min) > index
    }

    /// Found ahead, on or after the latest frame searched ahead (an older sighting says nothing
    /// of where the face is now: the misses after it stand).
    mutating func found(aheadOn frame: Int) {
        if frame >= checkedThrough { ahead = .following(misses: 0) }
        checkedThrough = max(checkedThrough, frame)
    }

    /// Not found ahead on `frame`; true when that made it lost (after `giveUpAfter` misses).
    mutating func missed(aheadOn frame: Int, giveUpAfter: Int) -> Bool {
        checkedThrough = max(checkedThrough, frame)
        guard case .following(let misses) = ahead else { return false }
        ahead = misses + 1 >= giveUpAfter ? .lost : .following(misses: misses + 1)
        return isLost
    }

    /// Found behind on `frame`: the trace goes on from there. Merged with a track that knew the
    /// earlier frames, that track's trace (if any) goes on instead.
    mutating func found(behindOn frame: Int, merged: Bool) {
        if merged {
            if case .tracing(let frontier, _) = behind { behind = .tracing(frontier: frontier, misses: 0) }
        } else {
            behind = .tracing(frontier: frame, misses: 0)
        }
    }

    /// Not found behind on `frame`; true when that ended the trace (after `giveUpAfter` misses).
    /// A search that comes back after its trace ended changes nothing.
    mutating func missed(behindOn frame: Int, giveUpAfter: Int) -> Bool {
        guard case .tracing(_, let misses) = behind else { return false }
        behind = misses + 1 >= giveUpAfter ? .done : .tracing(frontier: frame, misses: misses + 1)
        return behind == .done
    }

    /// Frames up to `oldest` left the delay line: a trace cannot go below the oldest frame held.
    mutating func framesLeft(through oldest: Int) {
        if let frontier, frontier <= oldest { behind = .done }
    }

    /// Takes in `other`, a track found to be the same face. Followed ahead while either is;
    /// behind, the one that knew the earlier frames traces on (`otherIsEarlier`), else the
    /// trace that reached further back.
    mutating func absorb(_ other: Follow, otherIsEarlier: Bool, giveUpAfter: Int) {
        born = min(born, other.born)
        checkedThrough = max(checkedThrough, other.checkedThrough)
        if isLost, !other.isLost { ahead = .following(misses: giveUpAfter) }
        if otherIsEarlier {
            behind = other.frontier.map { .tracing(frontier: $0, misses: missesBehind) } ?? .done
        } else if let theirs = other.frontier {
            behind = .tracing(frontier: min(frontier ?? theirs, theirs), misses: missesBehind)
        }
    }
}
