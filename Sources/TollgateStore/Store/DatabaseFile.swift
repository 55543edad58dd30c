import Foundation

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
    static func createIfMissing(path: String) throws {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
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
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
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
              let handle = FileHandle(forReadingAtPath: path)
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
