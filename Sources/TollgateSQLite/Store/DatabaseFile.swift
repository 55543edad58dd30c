import Foundation
import TollgateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks on the database file made before SQLite opens it.
enum DatabaseFile {
    /// The 16 bytes every SQLite 3 database file starts with.
    static let sqliteHeader = Array("SQLite format 3\0".utf8)

    /// Creates an empty file readable and writable by its owner only, unless one exists.
    /// SQLite gives the -wal and -shm files the same permissions.
    ///
    /// A dangling symbolic link is followed to the file it names, which is created with the same
    /// mode: `O_EXCL` refuses to follow links, and SQLite would otherwise create the target itself,
    /// with the umask's mode (0644, readable by every user).
    static func createIfMissing(path: String) throws {
        let descriptor = open(danglingLinkTarget(of: path) ?? path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
        } else if errno != EEXIST {
            let code = errno
            throw DatabaseError(
                extendedResultCode: 14, // SQLITE_CANTOPEN
                message: "cannot create \(path): \(String(cString: strerror(code)))",
                systemErrorCode: code
            )
        }
    }

    /// The file a chain of symbolic links ends at, when that file does not exist yet; nil when
    /// `path` is no link, or its target exists (opening the path then opens that target).
    static func danglingLinkTarget(of path: String) -> String? {
        var current = path
        for _ in 0..<40 {
            var status = stat()
            guard lstat(current, &status) == 0 else { return current == path ? nil : current }
            guard status.st_mode & S_IFMT == S_IFLNK,
                  let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: current)
            else { return nil }
            current = destination.hasPrefix("/")
                ? destination : (current as NSString).deletingLastPathComponent + "/" + destination
        }
        return nil
    }

    /// Refuses what cannot hold a ledger before SQLite opens it: SQLite's own special names
    /// (`:memory:`, the empty path: a private database gone at exit) and anything at the path that
    /// is not a regular file (a device such as `/dev/null`, a FIFO, a socket), beside which SQLite
    /// would create `-journal` or `-wal` files.
    static func requireFilePath(_ path: String) throws {
        if path.isEmpty || path == ":memory:" || path.hasPrefix("file:") {
            throw StoreRefusal.invalidArgument(
                "\(path.isEmpty ? "an empty path" : "'\(path)'") is SQLite's name for a database that is not a file at "
                    + "that path; the ledger must live in a file that every process can open"
                    + (path.isEmpty ? "" : " (write ./\(path) for a file of that name)") + ". Nothing was created."
            )
        }
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: throw StoreError.isDirectory(path: path)
        default: throw StoreError.notARegularFile(path: path)
        }
    }

    /// The device and inode the path names now; nil when nothing is there.
    static func identity(path: String) -> FileIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// Whether the file's write-ahead log is absent or holds nothing: every committed page is then
    /// in the main file, and reading it alone (immutable) misses nothing.
    static func hasEmptyLog(path: String) -> Bool {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path + "-wal")
        return ((attributes?[.size] as? NSNumber)?.intValue ?? 0) == 0
    }

    /// Refuses a path that names a directory: SQLite would only say "unable to open database file".
    static func requireNotDirectory(path: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StoreError.isDirectory(path: path)
        }
    }

    /// Refuses a non-empty file that does not start with SQLite's header, before SQLite can touch
    /// it. An empty file is a new database.
    static func requireSQLiteHeader(path: String) throws {
        guard !OpenedFile.isOpenInThisProcess(path: path), let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        let prefix = (try? handle.read(upToCount: sqliteHeader.count)) ?? Data()
        if !prefix.isEmpty && Array(prefix) != sqliteHeader {
            throw StoreError.notADatabase(path: path)
        }
    }

    /// Refuses a file shorter than the page count its header records, before SQLite opens it: the
    /// missing pages would otherwise surface later, as corruption, in the middle of some request.
    ///
    /// The check is skipped while a `-wal` or `-journal` file exists: after a crash the newest
    /// pages may live there until they are checkpointed. It reads 100 bytes, whatever the size.
    static func requireCompleteFile(path: String) throws {
        let fileManager = FileManager.default
        guard !fileManager.fileExists(atPath: path + "-wal"), !fileManager.fileExists(atPath: path + "-journal"),
              !OpenedFile.isOpenInThisProcess(path: path), let handle = FileHandle(forReadingAtPath: path)
        else { return }
        defer { try? handle.close() }
        let header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
        let actualBytes = Int64((try? handle.seekToEnd()).map { Int64($0) } ?? 0)
        guard !header.isEmpty else { return }
        guard header.count == 100 else {
            throw StoreError.truncated(path: path, expectedBytes: 100, actualBytes: actualBytes)
        }
        func bigEndian(_ offset: Int, _ count: Int) -> UInt64 {
            header[offset..<(offset + count)].reduce(0) { $0 << 8 | UInt64($1) }
        }
        let rawPageSize = bigEndian(16, 2)
        let pageSize: UInt64 = rawPageSize == 1 ? 65_536 : rawPageSize
        let pageCount = bigEndian(28, 4)
        // A page size that SQLite could not have written means garbage, which SQLite itself refuses
        // as "not a database"; the recorded page count is only valid when the change counter
        // matches "version valid for".
        guard (512...65_536).contains(pageSize), pageSize & (pageSize - 1) == 0, pageCount > 0,
              bigEndian(24, 4) == bigEndian(92, 4)
        else { return }
        let expectedBytes = Int64(pageCount * pageSize)
        if expectedBytes > actualBytes {
            throw StoreError.truncated(path: path, expectedBytes: expectedBytes, actualBytes: actualBytes)
        }
    }
}
