import Foundation
import Storage
#if canImport(Glibc)
import Glibc
#endif

/// A result file (the `blur` command's output) written under a hidden
/// temporary name beside its final name and moved there only when complete,
/// so the final name never holds half a file and the input is never opened
/// for writing.
///
/// - The output may not be the input (same device and inode, so hard links
///   and symbolic links to the input are caught too), even with `force`.
/// - An existing output is replaced only with `force`.
/// - The temporary file `.<name>.partial-<random>` is created exclusively
///   (`O_EXCL`) in the output's folder, so the rename stays on one file system.
/// - Until `commit`, `discard` (or release) removes it; `discardAllPending`
///   does so for every one still open, for signal handlers.
///
/// Thread-safety: one owner; `discardAllPending` may run on any thread.
public final class OutputFile {
    public let finalPath: String
    public let temporaryPath: String
    private let force: Bool
    private var settled = false

    private static let lock = NSLock()
    private static var pending: [ObjectIdentifier: String] = [:]

    public init(writing output: String, from input: String, force: Bool) throws {
        var inputInfo = stat()
        guard stat(input, &inputInfo) == 0 else {
            throw StorageError("\(input): \(String(cString: strerror(errno)))")
        }
        var outputInfo = stat()
        if stat(output, &outputInfo) == 0 {
            if outputInfo.st_dev == inputInfo.st_dev && outputInfo.st_ino == inputInfo.st_ino {
                throw StorageError("\(output) is the same file as the input \(input); choose another output name (the input is never overwritten)")
            }
            if outputInfo.st_mode & S_IFMT == S_IFDIR {
                throw StorageError("\(output) is a folder; give a file name for the output")
            }
        }
        var linkInfo = stat()
        if lstat(output, &linkInfo) == 0, !force {
            throw StorageError("\(output) already exists; use --force to replace it")
        }
        let url = URL(fileURLWithPath: output)
        let folder = url.deletingLastPathComponent().path
        let name = url.lastPathComponent
        let fd: Int32, temporary: String
        do {
            (fd, temporary) = try StorageFolder.createExclusive(in: folder) { ".\(name).partial-\($0)" }
        } catch {
            throw StorageError("cannot write \(output): \(error)")
        }
        close(fd)
        finalPath = output
        temporaryPath = temporary
        self.force = force
        Self.lock.withLock { Self.pending[ObjectIdentifier(self)] = temporary }
    }

    deinit { discard() }

    /// Whether two paths name the same existing file (same device and inode: hard and symbolic links too).
    public static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        return stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// Flushes the finished temporary file and moves it to the final name:
    /// over an existing file only with `force`, otherwise never replacing
    /// one that appeared meanwhile.
    public func commit() throws {
        guard !settled else { return }
        let fd = open(temporaryPath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 { _ = fsync(fd); close(fd) }
        if force {
            guard rename(temporaryPath, finalPath) == 0 else {
                throw StorageError("cannot rename \(temporaryPath) to \(finalPath): \(String(cString: strerror(errno)))")
            }
        } else if link(temporaryPath, finalPath) == 0 {
            // A hard link is created only if the name is free: no window in which another file is replaced.
            unlink(temporaryPath)
        } else if errno == EEXIST {
            settle()   // the finished result stays where the message says
            throw StorageError("\(finalPath) appeared while blurring; use --force to replace it (the result is left in \(temporaryPath))")
        } else {
            // A file system without hard links: check, then rename.
            var info = stat()
            guard lstat(finalPath, &info) != 0 else {
                settle()
                throw StorageError("\(finalPath) appeared while blurring; use --force to replace it (the result is left in \(temporaryPath))")
            }
            guard rename(temporaryPath, finalPath) == 0 else {
                throw StorageError("cannot rename \(temporaryPath) to \(finalPath): \(String(cString: strerror(errno)))")
            }
        }
        settle()
    }

    /// Removes the temporary file (unless committed).
    public func discard() {
        guard !settled else { return }
        unlink(temporaryPath)
        settle()
    }

    private func settle() {
        settled = true
        Self.lock.withLock { _ = Self.pending.removeValue(forKey: ObjectIdentifier(self)) }
    }

    /// Removes every temporary file not yet committed; returns their paths.
    /// For a signal handler running on the main loop (not in signal context).
    @discardableResult
    public static func discardAllPending() -> [String] {
        let paths = lock.withLock { () -> [String] in
            let paths = Array(pending.values)
            pending.removeAll()
            return paths
        }
        for path in paths { unlink(path) }
        return paths
    }
}
