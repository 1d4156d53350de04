import Foundation
import Logging

/// Every log line a logger writes, as its handler received it (one line per message), for tests that
/// check what is logged (the server link's, the service's).
public final class LogCapture {
    private let lock = NSLock()
    private var stored: [String] = []
    public private(set) var logger: Logger!

    public init() {
        logger = Logger(label: "allspark.server") { [unowned self] _ in Handler(capture: self) }
        logger.logLevel = .trace
    }

    fileprivate func append(_ line: String) { lock.withLock { stored.append(line) } }
    public var lines: [String] { lock.withLock { stored } }
    public var text: String { lines.joined(separator: "\n") }
    public func contains(_ fragment: String) -> Bool { lines.contains { $0.contains(fragment) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            capture.append("\(level) \(message)")
        }
    }
}

