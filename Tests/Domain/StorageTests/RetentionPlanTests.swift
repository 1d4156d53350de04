import XCTest
import Storage

/// The retention rules alone: no files, a table of cases.
final class RetentionPlanTests: XCTestCase {
    /// `c0` is the oldest; sizes in bytes.
    func chunks(_ sizes: [Int64]) -> [ChunkRecord] {
        sizes.enumerated().map { i, size in
            ChunkRecord(file: "c\(i)", start: Double(i) * 2, end: Double(i) * 2 + 2, size: size, format: .mp4)
        }
    }

    struct Case {
        var name: String
        var sizes: [Int64]
        var maxBytes: Int64
        var freeBytes: Int64?
        var pinned: Set<String> = []
        /// Deleted files and the first letter of each reason: s(ize), f(ree space).
        var expected: [String]
    }

    func testTheRules() {
        let cases: [Case] = [
            Case(name: "nothing to delete", sizes: [10, 10, 10], maxBytes: 30, freeBytes: 1000, expected: []),
            Case(name: "no chunks", sizes: [], maxBytes: 0, freeBytes: 0, expected: []),
            Case(name: "over the limit: oldest first", sizes: [10, 10, 10, 10], maxBytes: 20, freeBytes: nil,
                 expected: ["c0 s", "c1 s"]),
            Case(name: "over the limit by one byte", sizes: [10, 10, 11], maxBytes: 30, freeBytes: nil, expected: ["c0 s"]),
            Case(name: "the newest is never deleted, even alone over the limit", sizes: [10, 10, 50], maxBytes: 20, freeBytes: nil,
                 expected: ["c0 s", "c1 s"]),
            Case(name: "a single chunk stays", sizes: [50], maxBytes: 0, freeBytes: 0, expected: []),
            Case(name: "pins are skipped", sizes: [10, 10, 10, 10], maxBytes: 20, freeBytes: nil, pinned: ["c0"],
                 expected: ["c1 s", "c2 s"]),
            Case(name: "everything pinned", sizes: [10, 10, 10], maxBytes: 0, freeBytes: 0, pinned: ["c0", "c1", "c2"], expected: []),
            Case(name: "pinned but the newest: still kept", sizes: [10, 10, 10], maxBytes: 0, freeBytes: nil, pinned: ["c0", "c1"],
                 expected: []),
            // Reserve = 2 × largest = 40; 15 free: deleting c0 (10) gives 25, c1 (10) gives 35, c2 (20) gives 55.
            Case(name: "free space below the reserve", sizes: [10, 10, 20, 10], maxBytes: 1000, freeBytes: 15,
                 expected: ["c0 f", "c1 f", "c2 f"]),
            Case(name: "free space at the reserve", sizes: [10, 10, 20, 10], maxBytes: 1000, freeBytes: 40, expected: []),
            Case(name: "unknown free space: no reserve", sizes: [10, 10, 20, 10], maxBytes: 1000, freeBytes: nil, expected: []),
            Case(name: "reserve: pins skipped, newest kept", sizes: [10, 10, 10], maxBytes: 1000, freeBytes: 0, pinned: ["c0"],
                 expected: ["c1 f"]),
            // Size limit first (c0 freeing 30 → 35), then the reserve of what is left (2 × 20 = 40): c1.
            Case(name: "over the limit, then the reserve of what is left", sizes: [30, 10, 20, 10], maxBytes: 45, freeBytes: 5,
                 expected: ["c0 s", "c1 f"]),
        ]
        for c in cases {
            let plan = RetentionPlan.deletions(chunks: chunks(c.sizes).shuffled(), maxBytes: c.maxBytes, freeBytes: c.freeBytes, pinned: c.pinned)
            let described = plan.map { deletion -> String in
                switch deletion.reason {
                case .overSizeLimit(let max): XCTAssertEqual(max, c.maxBytes, c.name); return "\(deletion.chunk.file) s"
                case .lowFreeSpace: return "\(deletion.chunk.file) f"
                case .diskFull: return "\(deletion.chunk.file) d"
                }
            }
            XCTAssertEqual(described, c.expected, c.name)
        }
    }

    func testReasonsSayWhy() {
        XCTAssertEqual("\(RetentionReason.overSizeLimit(maxBytes: 2 << 20))", "the buffer exceeds 2 MiB")
        XCTAssertEqual("\(RetentionReason.lowFreeSpace(reserve: 8 << 20))", "less than 8.0 MiB is free on the disk")
        XCTAssertEqual("\(RetentionReason.lowFreeSpace(reserve: 3 << 19))", "less than 1.5 MiB is free on the disk")
        let plan = RetentionPlan.deletions(chunks: chunks([10, 20, 10]), maxBytes: 1000, freeBytes: 0, pinned: [])
        XCTAssertEqual(plan.map(\.reason), [.lowFreeSpace(reserve: 40), .lowFreeSpace(reserve: 40)])
    }

    func testFullDiskTakesTheOldestUnpinnedEvenTheNewest() {
        XCTAssertEqual(RetentionPlan.roomOnFullDisk(chunks: chunks([10, 10]).reversed(), pinned: [])?.chunk.file, "c0")
        XCTAssertEqual(RetentionPlan.roomOnFullDisk(chunks: chunks([10, 10]), pinned: ["c0"])?.chunk.file, "c1")
        XCTAssertNil(RetentionPlan.roomOnFullDisk(chunks: chunks([10, 10]), pinned: ["c0", "c1"]))
        XCTAssertNil(RetentionPlan.roomOnFullDisk(chunks: [], pinned: []))
        XCTAssertEqual(RetentionPlan.roomOnFullDisk(chunks: chunks([10]), pinned: [])?.reason, .diskFull)
    }
}
