/// The container a chunk is written in; its file extension is part of the
/// chunk's name (`chunk_<ms>.mp4|mov`).
public enum VideoFormat: String, Codable, CaseIterable, Sendable {
    case mp4, mov

    public var fileExtension: String { rawValue }
    public var mimeType: String { self == .mp4 ? "video/mp4" : "video/quicktime" }
}
