import Crypto
import _CryptoExtras
import Foundation
import RecorderCore
import Storage

/// The console's one password (user `admin`), kept as a salted PBKDF2-SHA256
/// hash in the storage folder (`console-password.json`, written atomically
/// through `StorageFolder`, never through a link). The password itself is
/// never stored or logged, except a generated one, shown once at first start.
///
/// The RTSP stream has a password of its own, kept the same way
/// (`ConsolePassword.stream`, `stream-password.json`, user `viewer`): an NVR
/// keeps its camera URLs with their passwords in plain text, and RTSP without
/// TLS sends Basic credentials in the clear, so what it holds must open only
/// the anonymised picture, never the console (which can turn the privacy
/// stage off).
public struct ConsolePassword {
    public static let fileName = StorageLayout.consolePasswordFileName
    public static let user = "admin"
    /// The RTSP stream's user (its password: `stream(storageDirectory:)`).
    public static let streamUser = "viewer"

    struct Record: Codable, Equatable {
        var algorithm: String
        var iterations: Int
        var salt: String
        var hash: String
    }

    /// OWASP's floor for PBKDF2-SHA256, and what swift-crypto accepts.
    static let iterations = 210_000
    private let file: KeptFile<Record>

    /// What the password opens, for messages: "console" or "stream".
    public let purpose: String

    public init(storageDirectory: String) {
        file = KeptFile(storageDirectory: storageDirectory, name: Self.fileName)
        purpose = "console"
    }

    private init(storageDirectory: String, fileName: String, purpose: String) {
        file = KeptFile(storageDirectory: storageDirectory, name: fileName)
        self.purpose = purpose
    }

    /// The RTSP stream's own password (user `viewer`), kept beside the console's.
    public static func stream(storageDirectory: String) -> ConsolePassword {
        ConsolePassword(storageDirectory: storageDirectory, fileName: StorageLayout.streamPasswordFileName, purpose: "stream")
    }

    public var path: String { file.url.path }

    public var isSet: Bool { (try? load()) != nil }

    /// Stores a new password (replacing the old one).
    public func set(_ password: String) throws {
        guard password.count >= 8 else {
            throw ConfigError("the \(purpose) password must have at least 8 characters")
        }
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in salt.indices { salt[i] = generator.next() }
        let record = Record(algorithm: "pbkdf2-sha256", iterations: Self.iterations,
                            salt: Data(salt).base64EncodedString(),
                            hash: try Self.derive(password, salt: Data(salt), iterations: Self.iterations).base64EncodedString())
        // Only the service's user may read even the salted hash.
        try file.save(record, permissions: 0o600)
    }

    /// Generates, stores and returns a password when none is set; nil when one is.
    public func generateIfMissing() throws -> String? {
        guard !isSet else { return nil }
        let password = Self.generate()
        try set(password)
        return password
    }

    /// True when `password` is the stored one (constant time in the hash comparison).
    /// Costs one PBKDF2 derivation: callers cache what they verified.
    public func verify(_ password: String) -> Bool {
        guard let record = try? load(), let salt = Data(base64Encoded: record.salt),
              let expected = Data(base64Encoded: record.hash),
              let actual = try? Self.derive(password, salt: salt, iterations: record.iterations),
              actual.count == expected.count else { return false }
        return zip(actual, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    func load() throws -> Record {
        guard let record = file.load() else { throw ConfigError("\(path): no \(purpose) password is set") }
        guard record.algorithm == "pbkdf2-sha256", record.iterations >= Self.iterations else {
            throw ConfigError("\(path): unknown password hash \(record.algorithm)")
        }
        return record
    }

    static func derive(_ password: String, salt: Data, iterations: Int) throws -> Data {
        let key = try KDF.Insecure.PBKDF2.deriveKey(from: Data(password.utf8), salt: salt, using: .sha256,
                                                     outputByteCount: 32, rounds: iterations)
        return key.withUnsafeBytes { Data($0) }
    }

    /// Four groups of five letters and digits (no look-alikes), about 100 bits.
    static func generate() -> String {
        let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        let groups = (0..<4).map { _ in String((0..<5).map { _ in alphabet.randomElement(using: &generator)! }) }
        return groups.joined(separator: "-")
    }
}

/// A random token (session cookies, CSRF tokens): 32 bytes, URL-safe base64.
func randomToken() -> String {
    var generator = SystemRandomNumberGenerator()
    let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    return Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}
