import Synchronization
import TollgateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file a store opened, and whether its path still names it: asked before every write
/// transaction, so that nothing is written into a file that was deleted, replaced or moved away
/// (no other process would see the write, and it would be lost with this one).
///
/// The path's `stat` walks the path each time (1.25 µs on the machine of `Benchmarks/README.md`,
/// 1.6 µs inside an admission). On Linux the store also holds an `O_PATH` descriptor of the file,
/// whose `fstat` is 0.4 µs: a file deleted or renamed over has no link left, which says so at
/// once; any other change to the file's name (a rename away, a swap, another link) changes its
/// inode's change time, and only then is the path walked again. SQLite's own writes change that
/// time too, so the path is walked after each checkpoint. Closing an `O_PATH` descriptor releases
/// none of the process's POSIX locks on the file, which SQLite's locking relies on.
final class OpenedFile: Sendable {
    let path: String
    let identity: FileIdentity
    /// An `O_PATH` descriptor of the file, or -1 (another system, or the descriptor named
    /// another file by the time it was opened).
    private let descriptor: Int32
    /// The change time of the file when the path last named it, in seconds and nanoseconds.
    private let confirmedChange = Mutex<(seconds: Int, nanoseconds: Int)?>(nil)
    /// The files this process's stores have open, with how many stores each.
    private static let openInThisProcess = Mutex<[FileIdentity: Int]>([:])

    /// Whether one of this process's stores has the file `path` names open.
    ///
    /// The checks made before SQLite opens a file read its first bytes through a descriptor of
    /// their own, and closing any descriptor of a file releases every POSIX lock the process holds
    /// on it: those of a store in the middle of a transaction included, which let another process
    /// take the file out of WAL mode under it. A file a store of this process has open was checked
    /// when that store opened it, so the checks skip it.
    static func isOpenInThisProcess(path: String) -> Bool {
        guard let identity = DatabaseFile.identity(path: path) else { return false }
        return openInThisProcess.withLock { $0[identity] != nil }
    }

    /// The file `path` names now; nil when it names nothing.
    init?(path: String) {
        guard let identity = DatabaseFile.identity(path: path) else { return nil }
        self.path = path
        self.identity = identity
        Self.openInThisProcess.withLock { $0[identity, default: 0] += 1 }
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        let descriptor = open(path, Self.pathOnly | O_CLOEXEC)
        var status = stat()
        if descriptor >= 0, fstat(descriptor, &status) != 0
            || FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) != identity {
            close(descriptor)
            self.descriptor = -1
        } else {
            self.descriptor = descriptor
        }
        #else
        self.descriptor = -1
        #endif
    }

    #if os(Linux) && (arch(x86_64) || arch(arm64))
    /// `O_PATH`, which Glibc's module leaves out (it is behind `_GNU_SOURCE`): the same value on
    /// x86-64 and ARM64.
    private static let pathOnly: Int32 = 0o10000000
    #endif

    deinit {
        if descriptor >= 0 { close(descriptor) }
        Self.openInThisProcess.withLock { open in
            if let count = open[identity], count > 1 { open[identity] = count - 1 } else { open[identity] = nil }
        }
    }

    /// Whether the path still names the file the store opened.
    var isAtPath: Bool {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        if descriptor >= 0 {
            var status = stat()
            if fstat(descriptor, &status) == 0 {
                if status.st_nlink == 0 { return false }
                let change = (seconds: Int(status.st_ctim.tv_sec), nanoseconds: Int(status.st_ctim.tv_nsec))
                if confirmedChange.withLock({ $0.map { $0 == change } ?? false }) { return true }
                // Read after the change time, so a change after that read moves the time again.
                guard DatabaseFile.identity(path: path) == identity else { return false }
                confirmedChange.withLock { $0 = change }
                return true
            }
        }
        #endif
        return DatabaseFile.identity(path: path) == identity
    }
}
