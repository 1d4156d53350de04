import Foundation
import Storage

// storage-pin-holder <storage folder> <chunk file>...
// Pins the chunks through a ChunkCatalog, says "pinned" on stdout, holds
// the pins until stdin ends, then unpins, says "unpinned" and exits. The
// tests kill it (SIGKILL) to leave pins behind as a crashed process would.
let arguments = CommandLine.arguments.dropFirst()
guard let storage = arguments.first else {
    FileHandle.standardError.write(Data("usage: storage-pin-holder <storage folder> <chunk file>...\n".utf8))
    exit(2)
}
let files = Array(arguments.dropFirst())
let catalog: ChunkCatalog
do {
    catalog = try ChunkCatalog(directory: URL(fileURLWithPath: storage))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
for file in files { catalog.pin(file) }
FileHandle.standardOutput.write(Data("pinned\n".utf8))
while readLine() != nil {}
for file in files { catalog.unpin(file) }
FileHandle.standardOutput.write(Data("unpinned\n".utf8))
