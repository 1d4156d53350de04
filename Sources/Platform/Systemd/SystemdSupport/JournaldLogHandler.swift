#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging

/// How log lines are written to stderr.
public enum LogFormat: String, CaseIterable, Sendable {
    /// `journald` when stderr is systemd's journal stream, `plain` otherwise.
    case auto
    /// `<N>` priority prefixes (sd-daemon(3)) that journald turns into the
    /// entry's priority, so `journalctl -p warning` shows exactly the warnings; no timestamp (journald adds it).
    case journald
    /// swift-log's stream format with timestamps, for a terminal or a file.
    case plain

    /// `auto` decided: journald when `JOURNAL_STREAM` names the device and
    /// inode of stderr, which is how systemd says stderr goes to the journal
    /// (a child whose stderr was redirected elsewhere inherits the variable but not the stream).
    public func resolved(environment: [String: String] = ProcessInfo.processInfo.environment,
                         standardError: Int32 = STDERR_FILENO) -> LogFormat {
        guard self == .auto else { return self }
        guard let stream = environment["JOURNAL_STREAM"] else { return .plain }
        var status = stat()
        guard fstat(standardError, &status) == 0 else { return .plain }
        return stream == "\(status.st_dev):\(status.st_ino)" ? .journald : .plain
    }
}

/// Writes each log line to stderr with its syslog priority as a `<N>` prefix.
/// One write(2) per line, so lines from different threads never interleave;
/// every line of a multi-line message carries the prefix (journald makes one entry per line).
public struct JournaldLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata = Logger.Metadata()
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    public init(label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The syslog priority of `level` (syslog(3): 2 critical … 7 debug).
    public static func priority(of level: Logger.Level) -> Int {
        switch level {
        case .critical: return 2
        case .error: return 3
        case .warning: return 4
        case .notice: return 5
        case .info: return 6
        case .debug, .trace: return 7
        }
    }

    /// `text` with the `<N>` prefix of `level` on each of its lines.
    public static func prefixed(_ text: String, level: Logger.Level) -> String {
        let prefix = "<\(priority(of: level))>"
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { prefix + $0 }.joined(separator: "\n") + "\n"
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let explicit = event.metadata { all.merge(explicit) { $1 } }
        if let error = event.error { all["error.message"] = "\(error)" }
        let pretty = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        Self.write(Self.prefixed("\(label):\(pretty) \(event.message)", level: event.level))
    }

    static func write(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 { if errno == EINTR { continue }; return }
            bytes = bytes.dropFirst(written)
        }
    }
}
