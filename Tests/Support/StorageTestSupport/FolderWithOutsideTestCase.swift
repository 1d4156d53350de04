import Foundation
import XCTest

/// A storage folder and a folder outside it, for tests proving that nothing
/// outside the storage folder is read, written or deleted: decoy files
/// outside, links planted inside that point at them.
open class FolderWithOutsideTestCase: XCTestCase {
    public var root: URL!
    /// The storage folder.
    public var folder: URL!
    /// Where the user's own files live.
    public var outside: URL!
    public let fm = FileManager.default

    open override func setUpWithError() throws {
        root = fm.temporaryDirectory.appendingPathComponent("storage-\(UUID().uuidString.prefix(8))")
        folder = root.appendingPathComponent("storage")
        outside = root.appendingPathComponent("outside")
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        try fm.createDirectory(at: outside, withIntermediateDirectories: true)
    }

    open override func tearDown() { try? fm.removeItem(at: root) }

    /// A file outside the storage folder that must survive byte-identical.
    public func decoy(_ name: String, _ text: String = "a user's own file, not a chunk") throws -> (url: URL, bytes: Data) {
        let url = outside.appendingPathComponent(name)
        let bytes = Data(text.utf8)
        try bytes.write(to: url)
        return (url, bytes)
    }

    public func assertIntact(_ decoy: (url: URL, bytes: Data), file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try? Data(contentsOf: decoy.url), decoy.bytes, "\(decoy.url.lastPathComponent) outside the folder is untouched", file: file, line: line)
    }

    /// Plants a symbolic link named `name` in the storage folder.
    public func link(_ name: String, to target: URL) throws {
        try fm.createSymbolicLink(atPath: folder.appendingPathComponent(name).path, withDestinationPath: target.path)
    }

    public func isLink(_ name: String) -> Bool {
        (try? fm.destinationOfSymbolicLink(atPath: folder.appendingPathComponent(name).path)) != nil
    }
}
