import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A file name or file in the storage folder that cannot be used, with the reason.
public struct StorageError: Error, CustomStringConvertible, Equatable {
    public var description: String
    /// The system's error number when a system call failed, so callers can
    /// tell a taken name (`EEXIST`) from a full (`ENOSPC`) or read-only disk.
    public var code: Int32?
    public init(_ description: String, code: Int32? = nil) {
        self.description = description
        self.code = code
    }
}

/// A file opened for reading after it was checked to be a plain file (not
/// a link, a device or a pipe). Whatever happens to its name afterwards,
/// reads go to the file that was checked. Closed when released.
public final class OpenedFile: @unchecked Sendable {
    public let name: String
    public let size: Int64
    public let descriptor: Int32

    init(name: String, size: Int64, descriptor: Int32) {
        self.name = name
        self.size = size
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// A path that reaches this open file (Linux's `/proc/self/fd`), for C
    /// libraries that only take a path: opening it opens the checked file,
    /// never whatever the name in the folder points at by then. Valid while
    /// this object lives.
    public var reopenablePath: String { "/proc/self/fd/\(descriptor)" }

    public func readAll() throws -> Data {
        var data = Data(count: Int(size))
        var done = 0
        while done < data.count {
            let n = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw StorageError("cannot read \(StorageFolder.printable(name)): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            done += n
        }
        return data.prefix(done)
    }
}

/// The storage folder, and the only way the recorder touches files in it.
///
/// Every name must be a single plain component (no `/`, not `.` or `..`),
/// so nothing outside the folder is ever reached; files are read, renamed
/// and deleted only when they are plain regular files (a symbolic link,
/// even one into the folder, a directory, a pipe or a device is left
/// alone); files are opened with `O_NOFOLLOW`; temporary files are created
/// exclusively (`O_EXCL`) under a random hidden name and renamed into place.
///
/// Thread-safety: stateless; each call is one or a few system calls.
public struct StorageFolder: Sendable {
    public let directory: URL

    public init(_ directory: URL) { self.directory = directory }

    /// What a name in the folder holds, looked at without following a link.
    public enum Entry: Equatable, Sendable {
        case file(size: Int64)
        case missing
        /// Something other than a plain file ("a symbolic link", "a directory", …).
        case notAPlainFile(String)
    }

    /// A single file name: not empty, no `/` or NUL, not `.` or `..`.
    public static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }

    func path(_ name: String) throws -> String {
        guard Self.isPlainName(name) else {
            throw StorageError("\(Self.printable(name)) is not a file name inside the storage folder \(directory.path)")
        }
        return directory.appendingPathComponent(name).path
    }

    /// The names in the folder (no `.`/`..`), unsorted; empty if it cannot be listed.
    public func names() -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    }

    public func entry(_ name: String) -> Entry {
        guard let path = try? path(name) else { return .notAPlainFile("not a plain file name") }
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT ? .missing : .notAPlainFile(String(cString: strerror(errno))) }
        return Self.kind(of: info).map { .notAPlainFile($0) } ?? .file(size: Int64(info.st_size))
    }

    /// nil for a regular file, otherwise what it is, for messages.
    static func kind(of info: stat) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFLNK: return "a symbolic link"
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a pipe"
        case S_IFSOCK: return "a socket"
        case S_IFCHR, S_IFBLK: return "a device"
        default: return "not a plain file"
        }
    }

    /// Opens a plain file for reading, refusing links and anything not a regular file.
    public func open(_ name: String) throws -> OpenedFile {
        let path = try path(name)
        // O_NONBLOCK: opening a planted pipe must not hang; it is refused below.
        let fd = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "a symbolic link, not a plain file" : String(cString: strerror(errno))
            throw StorageError("\(Self.printable(name)) in \(directory.path): \(reason)")
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw StorageError("\(Self.printable(name)) in \(directory.path): \(reason)")
        }
        if let kind = Self.kind(of: info) {
            close(fd)
            throw StorageError("\(Self.printable(name)) in \(directory.path) is \(kind), not a plain file")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return OpenedFile(name: name, size: Int64(info.st_size), descriptor: fd)
    }

    /// A small file's content (the index, the server settings).
    public func read(_ name: String) throws -> Data { try open(name).readAll() }

    /// Replaces `name` with `data` all at once: written to a temporary file
    /// created exclusively beside it, flushed, then renamed over `name` (which
    /// replaces a link planted there rather than writing through it).
    /// `permissions`: the file's mode (0o600 for a secret), set before a byte is written.
    public func writeAtomically(_ data: Data, as name: String, permissions: mode_t = 0o644) throws {
        let target = try path(name)
        // Registered before the temporary exists, so that no clean-up sees it unregistered.
        Self.beingWritten.insert(target)
        defer { Self.beingWritten.remove(target) }
        let (fd, temporary) = try Self.createExclusive(in: directory.path, permissions: permissions) { Self.temporaryName(for: name, random: $0) }
        var ok = false
        defer {
            close(fd)
            if !ok { unlink(temporary) }
        }
        var done = 0
        while done < data.count {
            let n = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw StorageError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
            done += n
        }
        guard fsync(fd) == 0 else { throw StorageError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        guard Glibc.rename(temporary, target) == 0 else {
            throw StorageError("cannot rename \(temporary) to \(target): \(String(cString: strerror(errno)))")
        }
        ok = true
    }

    /// Deletes a plain file; refuses (and leaves alone) anything else.
    public func remove(_ name: String) throws {
        let path = try path(name)
        switch entry(name) {
        case .missing: return
        case .notAPlainFile(let kind): throw StorageError("\(Self.printable(name)) in \(directory.path) is \(kind); left alone")
        case .file: break
        }
        guard unlink(path) == 0 || errno == ENOENT else {
            throw StorageError("cannot delete \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Renames a plain file to a name that must not exist yet.
    public func rename(_ name: String, to newName: String) throws {
        let from = try path(name), to = try path(newName)
        if case .notAPlainFile(let kind) = entry(name) {
            throw StorageError("\(Self.printable(name)) in \(directory.path) is \(kind); left alone")
        }
        guard entry(newName) == .missing else { throw StorageError("\(to) already exists") }
        guard Glibc.rename(from, to) == 0 else {
            throw StorageError("cannot rename \(from) to \(to): \(String(cString: strerror(errno)))")
        }
    }

    /// Creates an empty file under a name that must be free (`O_EXCL`: an
    /// existing file or a link of that name is never opened or followed).
    public func createNew(_ name: String) throws {
        let path = try path(name)
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            let reason = code == EEXIST ? "something of that name is already there" : String(cString: strerror(code))
            throw StorageError("cannot create \(Self.printable(name)) in \(directory.path): \(reason)", code: code)
        }
        close(fd)
    }

    // MARK: Temporary files

    static let temporaryMarker = ".tmp-"

    /// `.<name>.tmp-<random>`: hidden, and never a name anything else uses.
    static func temporaryName(for name: String, random: String) -> String { "." + name + temporaryMarker + random }

    /// Deletes temporary files of ours for `targets` left by an interrupted
    /// write (plain files only). Call only while no write can be under way:
    /// at start, before anything else uses the folder.
    @discardableResult
    public func removeStaleTemporaries(of targets: [String]) -> [String] {
        var removed: [String] = []
        for name in names() {
            guard let target = targets.first(where: { Self.isTemporary(name, of: $0) }), !isBeingWritten(target) else { continue }
            guard case .file = entry(name), (try? remove(name)) != nil else { continue }
            removed.append(name)
        }
        return removed.sorted()
    }

    /// Deletes temporary files of ours whose target name `isTarget` accepts
    /// (names not known in advance, such as a chunk's companions). Same rules
    /// as `removeStaleTemporaries(of:)`.
    @discardableResult
    public func removeStaleTemporaries(where isTarget: (String) -> Bool) -> [String] {
        var removed: [String] = []
        for name in names() where name.hasPrefix(".") {
            guard let marker = name.range(of: Self.temporaryMarker, options: .backwards) else { continue }
            let target = String(name[name.index(after: name.startIndex)..<marker.lowerBound])
            guard isTarget(target), Self.isTemporary(name, of: target), !isBeingWritten(target),
                  case .file = entry(name), (try? remove(name)) != nil else { continue }
            removed.append(name)
        }
        return removed.sorted()
    }

    /// Creates an empty hidden temporary file for `name`, exclusively, and
    /// returns its name: for a writer that takes only a path (a GStreamer
    /// file sink). Rename it into place once complete, or remove it.
    public func createTemporary(for name: String) throws -> String {
        _ = try path(name)
        let (fd, path) = try Self.createExclusive(in: directory.path) { Self.temporaryName(for: name, random: $0) }
        close(fd)
        return (path as NSString).lastPathComponent
    }

    /// Files this process is writing atomically now (full target paths): a
    /// clean-up of stale temporaries (a catalog reconcile at the recorder's
    /// start) must not pull a temporary from under its writer, as it once did
    /// to the server's settings arriving at that moment (the rename then
    /// failed and the settings were not kept for the next start).
    private static let beingWritten = PathCounts()

    /// Whether `target` (a name in this folder) is being written atomically by this process.
    private func isBeingWritten(_ target: String) -> Bool {
        Self.beingWritten.contains((try? path(target)) ?? "")
    }

    /// Paths shared by every thread, counted (two writers of one file at once).
    private final class PathCounts: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [String: Int] = [:]
        func insert(_ path: String) { lock.withLock { counts[path, default: 0] += 1 } }
        func remove(_ path: String) { lock.withLock { counts[path] = (counts[path] ?? 1) > 1 ? counts[path]! - 1 : nil } }
        func contains(_ path: String) -> Bool { lock.withLock { counts[path] != nil } }
    }

    static func isTemporary(_ name: String, of target: String) -> Bool {
        let prefix = "." + target + temporaryMarker
        guard name.hasPrefix(prefix) else { return false }
        let random = name.dropFirst(prefix.count)
        return random.count == randomLength && random.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    static let randomLength = 8

    static func randomSuffix() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<randomLength).map { _ in alphabet.randomElement()! })
    }

    /// Creates a new file in `directory` named by `name(random)`, exclusively
    /// (`O_EXCL`: an existing file or link of that name is never opened),
    /// trying a few random suffixes. Returns the open descriptor and the path.
    public static func createExclusive(in directory: String, permissions: mode_t = 0o644,
                                       named name: (String) -> String) throws -> (Int32, String) {
        var lastError: Int32 = 0
        for _ in 0..<8 {
            let path = URL(fileURLWithPath: directory).appendingPathComponent(name(randomSuffix())).path
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            // Set at creation, before a byte is written (the umask can only narrow it).
            if fd >= 0 { return (fd, path) }
            lastError = errno
            if lastError != EEXIST { break }
        }
        throw StorageError("cannot create a temporary file in \(directory): \(String(cString: strerror(lastError)))")
    }

    // MARK: Logging

    /// A name or text from outside (a file name in the folder, an index
    /// entry) made safe for one log line: control and bidirectional-format
    /// characters escaped, the length bounded.
    public static func printable(_ text: String, limit: Int = 200) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if out.count >= limit { out += "…"; break }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator:
                out += String(format: "\\u{%X}", scalar.value)
            default:
                if scalar == "\\" { out += "\\\\" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return "\"" + out + "\""
    }
}
