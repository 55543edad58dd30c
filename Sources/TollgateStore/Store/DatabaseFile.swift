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
            let reason = String(cString: strerror(errno))
            throw DatabaseError(
                extendedResultCode: 14, // SQLITE_CANTOPEN
                message: "cannot create \(path): \(reason)"
            )
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
}
