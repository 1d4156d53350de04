import XCTest
import RecorderTestSupport
import Storage
@testable import Recorder

/// After the wall clock was set back, a new chunk's time can be one an older
/// chunk already carries: it is named a millisecond later, never over the older one.
final class ChunkNamingTests: XCTestCase {
    func testATimeAnOlderChunkOrItsCompanionsCarryIsNotFree() throws {
        let storage = TemporaryDirectory()
        for name in ["chunk_1000.mp4", "timestamps_1001.txt", "chunk_1003.mov", "audio_1004.wav"] {
            try Data("x".utf8).write(to: storage.file(name))
        }
        let folder = StorageFolder(storage.url)
        XCTAssertEqual((1000...1005).map { ChunkSink.nameIsFree($0, in: folder) }, [false, false, true, false, false, true])
    }
}
