/// A chunk's companions (`Companion`) as the catalog sees them: only plain
/// files in the folder beside a catalogued chunk, never through a link.
extension ChunkCatalog {
    /// The companions of `record` that are on disk, in upload order.
    public func companions(of record: ChunkRecord) -> [Companion] {
        Companion.candidates(forChunk: record.file).filter {
            if case .file = folder.entry($0.file) { return true }
            return false
        }
    }

    /// The companion named `name` and the catalogued chunk it belongs to;
    /// nil for any other name, or when its chunk is not in the catalog.
    public func companion(named name: String) -> (companion: Companion, chunk: ChunkRecord)? {
        guard let startMs = Companion.chunkStart(ofCompanion: name),
              let chunk = all.first(where: { ChunkName.parse($0.file)?.startMs == startMs }),
              let companion = companions(of: chunk).first(where: { $0.file == name }) else { return nil }
        return (companion, chunk)
    }
}
