/// Files that travel with a chunk, named after it (`<kind>_<ms>.<ext>`, the
/// iOS app's layout that servers and agents expect): uploaded right after
/// their chunk, each as its own two-phase upload, in `Companion.Kind` order,
/// and deleted with it. The size limit counts video files only.
public struct Companion: Hashable, Sendable {
    public enum Kind: String, CaseIterable, Sendable {
        /// One line per frame of the chunk, `<frame index> : <epoch ms>`.
        case timestamps
        case audio
        case pose
    }

    public var kind: Kind
    /// The file name inside the storage folder, e.g. `timestamps_1700000000000.txt`.
    public var file: String
    public var mimeType: String

    /// The companions a chunk may have, in upload order; which of them exist
    /// is for the caller to check (through `StorageFolder`).
    public static func candidates(forChunkStartingAt startMs: Int64) -> [Companion] {
        [Companion(kind: .timestamps, file: "timestamps_\(startMs).txt", mimeType: "text/plain")]
            + AudioFormat.recorded.map { Companion(kind: .audio, file: "audio_\(startMs).\($0.fileExtension)", mimeType: $0.mimeType) }
            + [Companion(kind: .pose, file: "pose_\(startMs).json", mimeType: "application/json")]
    }

    /// The companions a chunk file name may have (none for a name that is not a chunk's).
    public static func candidates(forChunk chunkFile: String) -> [Companion] {
        guard let parsed = ChunkName.parse(chunkFile), !parsed.isPartial else { return [] }
        return candidates(forChunkStartingAt: parsed.startMs)
    }

    /// The chunk start (epoch ms) a companion's name belongs to, or nil when
    /// `name` is not a companion's name as we write it.
    public static func chunkStart(ofCompanion name: String) -> Int64? {
        guard let underscore = name.firstIndex(of: "_"), let dot = name.lastIndex(of: "."), underscore < dot else { return nil }
        let digits = name[name.index(after: underscore)..<dot]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let ms = Int64(digits) else { return nil }
        return candidates(forChunkStartingAt: ms).contains { $0.file == name } ? ms : nil
    }
}

/// The audio companion's encoding (`audioFormat` in the server's clientConfig,
/// `recording.audio_format` in the config).
public enum AudioFormat: String, Codable, CaseIterable, Sendable {
    case none
    /// PCM 16-bit mono 44.1 kHz.
    case wav
    /// AAC in an MPEG-4 audio file.
    case m4a

    /// The formats that produce a file.
    public static let recorded: [AudioFormat] = [.wav, .m4a]
    public var fileExtension: String { rawValue }
    public var mimeType: String { self == .m4a ? "audio/mp4" : "audio/wav" }
}

/// Whether a chunk gets a `timestamps_<ms>.txt` (`timestampFormat`).
public enum TimestampFormat: String, Codable, CaseIterable, Sendable {
    case none, txt
}
