import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension StorageFolder {
    /// Opens (and with `create`, first makes) a folder directly inside the
    /// storage folder, refusing a symbolic link or anything not a directory.
    public func openFolder(_ name: String, create: Bool) throws -> OpenedFolder {
        let path = try path(name)
        if create, mkdir(path, 0o755) != 0, errno != EEXIST {
            throw StorageError("cannot create \(Self.printable(name)) in \(directory.path): \(String(cString: strerror(errno)))", code: errno)
        }
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let reason: String
            switch code {
            case ELOOP: reason = "a symbolic link, not a folder"
            case ENOTDIR: reason = "not a folder"
            default: reason = String(cString: strerror(code))
            }
            throw StorageError("\(Self.printable(name)) in \(directory.path): \(reason)", code: code)
        }
        return OpenedFolder(name: name, path: path, descriptor: fd)
    }
}

/// A folder inside the storage folder, held open: every call works relative
/// to its descriptor (`openat`, `unlinkat`, …) with plain names only and
/// never follows a link, so whatever later happens to its name, nothing
/// outside it is reached. Used for the shared pins (`SharedPins`).
///
/// Thread-safety: the descriptor is immutable; each call is one or a few
/// system calls. The advisory lock on the folder (`lockFolder`) belongs to
/// this open descriptor: two `OpenedFolder`s exclude each other even in one process.
public final class OpenedFolder: @unchecked Sendable {
    public let name: String
    /// For messages only.
    public let path: String
    let descriptor: Int32

    init(name: String, path: String, descriptor: Int32) {
        self.name = name
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    private func check(_ name: String) throws {
        guard StorageFolder.isPlainName(name) else {
            throw StorageError("\(StorageFolder.printable(name)) is not a file name inside \(path)")
        }
    }

    private func failure(_ what: String, _ name: String) -> StorageError {
        let code = errno
        return StorageError("cannot \(what) \(StorageFolder.printable(name)) in \(path): \(String(cString: strerror(code)))", code: code)
    }

    /// The names in the folder (no `.`/`..`); empty if it cannot be listed.
    public func names() -> [String] {
        let copy = dup(descriptor)
        guard copy >= 0, let dir = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(dir) }
        rewinddir(dir)   // the duplicate shares its position with earlier listings
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// What a name holds, looked at without following a link.
    public func entry(_ name: String) -> StorageFolder.Entry {
        guard StorageFolder.isPlainName(name) else { return .notAPlainFile("not a plain file name") }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            return errno == ENOENT ? .missing : .notAPlainFile(String(cString: strerror(errno)))
        }
        return StorageFolder.kind(of: info).map { .notAPlainFile($0) } ?? .file(size: Int64(info.st_size))
    }

    /// Creates an empty file under a free name (`O_EXCL`, never through a link).
    public func createNew(_ name: String) throws {
        try check(name)
        let fd = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("create", name) }
        close(fd)
    }

    /// Deletes a plain file; refuses (and leaves alone) anything else.
    public func remove(_ name: String) throws {
        try check(name)
        if case .notAPlainFile(let kind) = entry(name) {
            throw StorageError("\(StorageFolder.printable(name)) in \(path) is \(kind); left alone")
        }
        guard unlinkat(descriptor, name, 0) == 0 || errno == ENOENT else { throw failure("delete", name) }
    }

    /// Creates a file under a random hidden name made by `temporary`, takes
    /// an exclusive `flock` on it and only then renames it to `name`: the
    /// file never appears under `name` unlocked. The lock lasts while the
    /// returned file is open (it ends with the process, however it ends).
    public func createLocked(_ name: String, temporary: (String) -> String) throws -> LockedFile {
        try check(name)
        for _ in 0..<8 {
            let hidden = temporary(StorageFolder.randomSuffix())
            try check(hidden)
            let fd = openat(descriptor, hidden, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if fd < 0, errno == EEXIST { continue }
            guard fd >= 0 else { throw failure("create", hidden) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let error = failure("lock", hidden)
                close(fd)
                unlinkat(descriptor, hidden, 0)
                throw error
            }
            guard renameat(descriptor, hidden, descriptor, name) == 0 else {
                let error = failure("rename \(StorageFolder.printable(hidden)) to", name)
                close(fd)
                unlinkat(descriptor, hidden, 0)
                throw error
            }
            return LockedFile(descriptor: fd)
        }
        throw StorageError("cannot create a temporary file in \(path): every name tried was taken")
    }

    /// Whether some open file (in any process) holds the `flock` of the
    /// plain file `name`: true while it is held, false when the lock could
    /// be taken (nobody holds it) or the file is missing; nil when it is not
    /// a plain file or cannot be opened.
    public func isLockHeld(_ name: String) -> Bool? {
        guard StorageFolder.isPlainName(name) else { return nil }
        let fd = openat(descriptor, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? false : nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, StorageFolder.kind(of: info) == nil else { return nil }
        if flock(fd, LOCK_EX | LOCK_NB) == 0 { return false }
        return errno == EWOULDBLOCK ? true : nil
    }

    /// Runs `body` holding this folder's advisory lock: shared (many at
    /// once) or exclusive (alone). Blocks while another holds it the other way.
    public func withFolderLock<T>(exclusive: Bool, _ body: () throws -> T) rethrows -> T {
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0, errno == EINTR {}
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }
}

/// A file whose `flock` this process holds until `release()` or deinit
/// (or its death: the kernel drops the lock with the last descriptor).
public final class LockedFile: @unchecked Sendable {
    private var descriptor: Int32

    init(descriptor: Int32) { self.descriptor = descriptor }

    public func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }

    deinit { release() }
}
