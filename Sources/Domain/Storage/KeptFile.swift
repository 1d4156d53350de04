import Foundation

/// A small JSON file the recorder keeps in the storage folder (the server's
/// settings, the console's choices, the console password's hash).
///
/// Read only when it is a plain file (a damaged or planted file reads as
/// none: the config file applies). Written to an exclusively created
/// temporary file and renamed, so a crash leaves the old or the new file,
/// never half of one, and a link planted under either name is replaced,
/// never written through.
public struct KeptFile<Value: Codable> {
    public let folder: StorageFolder
    public let name: String

    public init(storageDirectory: String, name: String) {
        folder = StorageFolder(URL(fileURLWithPath: storageDirectory))
        self.name = name
    }

    public var url: URL { folder.directory.appendingPathComponent(name) }

    /// The kept value; nil when none was kept or the file cannot be read as one.
    public func load() -> Value? {
        guard let data = try? folder.read(name) else { return nil }
        return try? JSONDecoder().decode(Value.self, from: data)
    }

    /// `permissions`: 0o600 for a secret (the password's hash); the folder's other files are 0o644.
    public func save(_ value: Value, permissions: mode_t = 0o644) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(value)
        try FileManager.default.createDirectory(at: folder.directory, withIntermediateDirectories: true)
        try folder.writeAtomically(data, as: name, permissions: permissions)
    }
}
