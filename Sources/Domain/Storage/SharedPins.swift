import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Pins that every process using the storage folder sees, so that
/// `allspark-recorder upload` run beside the service keeps the service's
/// retention off the chunks it is sending.
///
/// Layout of `<storage>/.pins/` (created on the first pin, only through
/// `OpenedFolder`: no link followed, nothing outside it touched):
/// - `<owner>.lock`: one per process (per catalog) holding pins, `flock`ed
///   by it for as long as it holds any. `<owner>` is `<pid>-<random>`, new
///   for each registration, so a name is never reused.
/// - `<owner>.<chunk file name>`: an empty file per pinned chunk.
/// - `.<owner>.lock.tmp-<random>`: a lock file being created (it is locked
///   before it gets its name, so a live owner's lock is never seen unlocked).
///
/// A process that dies without unpinning loses its `flock` with its last
/// descriptor: its entries then count for nothing, and retention (which
/// holds the folder lock exclusively) removes them. Entries are created
/// after the lock file and removed before it, so an entry whose lock can
/// be taken, or is missing, is always stale.
///
/// Pinning holds the folder lock shared and retention holds it exclusively
/// while it reads the pins and deletes, so a chunk is either pinned before
/// retention looks or deleted before the pin is made, never in between.
///
/// Thread-safety: not thread-safe; the owning `ChunkCatalog` calls it under its lock.
final class SharedPins {
    private let storage: StorageFolder
    private let logger: Logger
    private var folder: OpenedFolder?
    private var registration: (owner: String, lock: LockedFile)?
    /// Pins this process made that have a file; the rest (the pins folder
    /// could not be used) protect only within this process.
    private var written: Set<String> = []
    private var warned = false

    init(storage: StorageFolder, logger: Logger) {
        self.storage = storage
        self.logger = logger
    }

    deinit { unregister() }

    // MARK: This process's pins

    /// Makes the first pin of `file` visible to other processes.
    func added(_ file: String) {
        guard Self.isPinnable(file), let folder = openFolder(create: true) else { return }
        folder.withFolderLock(exclusive: false) {
            do {
                let owner = try register(in: folder)
                try folder.createNew(Self.entryName(owner: owner, file: file))
                written.insert(file)
            } catch let error as StorageError where error.code == EEXIST {
                written.insert(file)
            } catch {
                warnOnce("cannot share the pin of \(file) with other processes (\(error)); it holds in this process only")
            }
        }
    }

    /// The last pin of `file` in this process went.
    func removed(_ file: String) {
        guard written.remove(file) != nil, let folder, let owner = registration?.owner else { return }
        do {
            try folder.remove(Self.entryName(owner: owner, file: file))
        } catch {
            logger.error("cannot remove the pin of \(file): \(error)")
        }
        if written.isEmpty { unregister() }
    }

    private func register(in folder: OpenedFolder) throws -> String {
        if let registration { return registration.owner }
        let owner = "\(getpid())-\(StorageFolder.randomSuffix())"
        let lockName = Self.lockName(owner: owner)
        let lock = try folder.createLocked(lockName) { ".\(lockName)\(StorageFolder.temporaryMarker)\($0)" }
        registration = (owner, lock)
        return owner
    }

    /// Entries first, then the lock file, then the lock itself.
    private func unregister() {
        guard let (owner, lock) = registration, let folder else { return }
        for file in written { try? folder.remove(Self.entryName(owner: owner, file: file)) }
        written.removeAll()
        try? folder.remove(Self.lockName(owner: owner))
        lock.release()
        registration = nil
    }

    // MARK: Everybody's pins

    /// The chunks pinned by other live processes (and other catalogs of
    /// this one). With `removingStale`, entries of owners that died are
    /// deleted; only call it that way inside `withExclusiveLock`.
    func othersPinned(removingStale: Bool) -> Set<String> {
        guard let folder = openFolder(create: false) else { return [] }
        var byOwner: [String: [String]] = [:]
        var locks: Set<String> = []
        for name in folder.names() {
            guard let (owner, rest) = Self.split(name), owner != registration?.owner else { continue }
            if rest == "lock" {
                locks.insert(owner)
            } else if Self.isPinnable(rest) {
                byOwner[owner, default: []].append(rest)
            }
        }
        var pinned: Set<String> = []
        for owner in locks.union(byOwner.keys) {
            let files = byOwner[owner] ?? []
            switch folder.isLockHeld(Self.lockName(owner: owner)) {
            case true?:
                pinned.formUnion(files)
            case nil:
                // Not a plain file we can open: not ours to judge; honour its pins.
                pinned.formUnion(files)
            case false?:
                guard removingStale else { continue }
                for file in files { try? folder.remove(Self.entryName(owner: owner, file: file)) }
                try? folder.remove(Self.lockName(owner: owner))
                logger.info("removed \(files.count) pin(s) left by process \(owner.prefix { $0 != "-" }), which ended without unpinning")
            }
        }
        return pinned
    }

    /// Runs `body` while no process can add a pin.
    func withExclusiveLock<T>(_ body: () throws -> T) rethrows -> T {
        guard let folder = openFolder(create: false) else { return try body() }
        return try folder.withFolderLock(exclusive: true, body)
    }

    // MARK: Names

    static func isPinnable(_ file: String) -> Bool {
        guard let parsed = ChunkName.parse(file) else { return false }
        return !parsed.isPartial
    }

    static func lockName(owner: String) -> String { "\(owner).lock" }
    static func entryName(owner: String, file: String) -> String { "\(owner).\(file)" }

    /// `<owner>.<rest>` with an owner of digits, a dash and letters or digits.
    static func split(_ name: String) -> (owner: String, rest: String)? {
        guard let dot = name.firstIndex(of: ".") else { return nil }
        let owner = String(name[..<dot])
        let parts = owner.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        return (owner, String(name[name.index(after: dot)...]))
    }

    private func openFolder(create: Bool) -> OpenedFolder? {
        if let folder { return folder }
        if !create, storage.entry(StorageLayout.pinsFolderName) == .missing { return nil }
        do {
            folder = try storage.openFolder(StorageLayout.pinsFolderName, create: create)
        } catch {
            warnOnce("the shared pins folder cannot be used (\(error)); pins hold in this process only")
        }
        return folder
    }

    private func warnOnce(_ message: String) {
        guard !warned else { return }
        warned = true
        logger.warning("\(message)")
    }
}
