import CSQLite
import TollgateCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error that SQLite returned.
///
/// It carries SQLite's extended result code, SQLite's message and the SQL that failed. It never
/// carries the values bound to that SQL: they can hold API keys, tokens or response bodies.
public struct DatabaseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code, such as `SQLITE_BUSY_SNAPSHOT` (517) or `SQLITE_CONSTRAINT_UNIQUE` (2067).
    public let extendedResultCode: Int32
    /// SQLite's own message for the failure.
    public let message: String
    /// The SQL statement that failed, if the failure belongs to one.
    public let sql: String?
    /// The operating system's error number behind an I/O or open failure (`errno`, such as
    /// `ENOSPC` or `EROFS`), or 0 when there is none.
    public let systemErrorCode: Int32

    /// The primary result code, such as `SQLITE_BUSY` (5), the low byte of ``extendedResultCode``.
    public var resultCode: Int32 { extendedResultCode & 0xFF }

    /// Whether SQLite gave up waiting for a lock that another connection holds.
    public var isBusy: Bool { resultCode == SQLITE_BUSY || resultCode == SQLITE_LOCKED }

    /// Whether the statement was refused or stopped because the store is suspended
    /// (``SQLiteStore/suspend()``): `SQLITE_INTERRUPT`, which nothing else in the library causes.
    public var isSuspension: Bool { resultCode == SQLITE_INTERRUPT }

    /// The refusal of a statement that would take a lock on a suspended connection.
    static func suspended(sql: String) -> DatabaseError {
        DatabaseError(extendedResultCode: SQLITE_INTERRUPT,
                      message: "the store is suspended: no lock may be taken until it is resumed", sql: sql)
    }

    /// Whether the file is not an SQLite database (`SQLITE_NOTADB`) or is damaged (`SQLITE_CORRUPT`).
    public var isNotADatabase: Bool { resultCode == SQLITE_NOTADB || resultCode == SQLITE_CORRUPT }

    /// Whether the disk or the database's page budget is full (`SQLITE_FULL`).
    public var isFull: Bool { resultCode == SQLITE_FULL }

    /// Whether the file or its directory cannot be written (`SQLITE_READONLY`, `SQLITE_CANTOPEN`, `SQLITE_PERM`).
    public var isReadOnly: Bool {
        resultCode == SQLITE_READONLY || resultCode == SQLITE_CANTOPEN || resultCode == SQLITE_PERM
    }

    /// Whether a read failed because SQLite could not create, open or size the file's
    /// shared-memory index (`-shm`): a read-only directory or file system, or a full disk.
    var cannotUseSharedMemory: Bool {
        resultCode == SQLITE_CANTOPEN || resultCode == SQLITE_READONLY || resultCode == SQLITE_IOERR
    }

    /// Creates an error from its parts.
    /// - Parameters:
    ///   - extendedResultCode: SQLite's extended result code.
    ///   - message: SQLite's message, or a description of the failure.
    ///   - sql: The statement that failed, without its bound values.
    ///   - systemErrorCode: The `errno` behind the failure, or 0.
    public init(extendedResultCode: Int32, message: String, sql: String? = nil, systemErrorCode: Int32 = 0) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
        self.systemErrorCode = systemErrorCode
    }

    /// Reads the last error of a connection.
    init(connection: OpaquePointer?, resultCode: Int32, sql: String? = nil) {
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? resultCode
        // The connection's error can be stale when the failing call was not its last one.
        let code = (extended & 0xFF) == (resultCode & 0xFF) ? extended : resultCode
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(resultCode))
        let systemErrorCode = connection.map { sqlite3_system_errno($0) } ?? 0
        self.init(extendedResultCode: code, message: message, sql: sql, systemErrorCode: systemErrorCode)
    }

    /// SQLite's code and message, and the system's reason when there is one, without the SQL: for
    /// messages shown to people.
    public var summary: String {
        var text = "SQLite error \(extendedResultCode): \(message)"
        // ENOENT is mostly SQLite's last try at a -shm file that could not be created: noise here.
        if systemErrorCode != 0, systemErrorCode != ENOENT, let reason = strerror(systemErrorCode).map({ String(cString: $0) }),
           !message.contains(reason) {
            text += "; \(reason)"
        }
        return text
    }

    public var description: String {
        var text = "SQLite error \(extendedResultCode): \(message)"
        if let sql { text += " — while executing `\(sql)`" }
        return text
    }
}
