import CSQLite
import CSQLiteBatchedWAL
import Foundation
import TollgateCore

/// One SQLite connection.
///
/// A `Database` is not `Sendable`: it is used by one thread at a time, and
/// `SerializedDatabase` is the `Sendable` entry point that guarantees it.
///
/// Its API reads like GRDB's: `execute(sql:arguments:)`, `fetchAll(sql:arguments:)` and records'
/// `fetchAll(_:sql:arguments:)` prepare their statement, run it and finalise it. Only a hot path
/// keeps its statements, by asking for them by name: ``cachedStatement(sql:)`` prepares a text once
/// and keeps it for the connection's life, so interpolated SQL never grows a cache.
public final class Database {
    /// How a connection opens its file.
    public enum Mode: Sendable {
        /// Reads and writes; creates the file when it is missing.
        case readWrite
        /// Reads only: SQLite refuses every write.
        case readOnly
        /// Reads only, as a file that nothing changes while it is open (SQLite's `immutable=1`):
        /// no locks and no `-shm` file, so it works in a read-only directory or file system. Only
        /// for a file whose write-ahead log is empty, since that log is not read.
        case immutable
    }

    /// The path of the file, or `":memory:"`.
    public let path: String
    /// How the connection opened its file.
    public let mode: Mode
    let handle: OpaquePointer
    private var statementCache: [StatementCacheKey: Statement] = [:]
    /// Whether the store suspended this connection; its statements check it before each step.
    let suspension = DatabaseSuspension()
    /// The request path's state rows as this connection left them (see ``RememberedRows``); only
    /// the store's write transactions keep them.
    var rememberedRows = RememberedRows()
    /// Runs of statements that can write a quota bucket's row or its usage: a remembered bucket
    /// stands while it has not moved (see ``RememberedRows``).
    let quotaBucketWrites = TableWriteCounter(watching: RememberedRows.quotaBucketTables)

    /// How long a statement waits for another connection's lock before it fails with `SQLITE_BUSY`.
    public var busyTimeout: Duration {
        didSet { sqlite3_busy_timeout(handle, Self.milliseconds(busyTimeout)) }
    }

    /// Opens a connection.
    /// - Parameters:
    ///   - path: A file path, or `":memory:"` for a private in-memory database.
    ///   - mode: Whether the connection may write.
    ///   - busyTimeout: How long a statement waits for another connection's lock before it fails
    ///     with `SQLITE_BUSY`.
    /// - Throws: ``DatabaseError`` when SQLite cannot open the file.
    public init(path: String, mode: Mode = .readWrite, busyTimeout: Duration = .seconds(5)) throws(DatabaseError) {
        var handle: OpaquePointer?
        let flags = switch mode {
        case .readWrite: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        case .readOnly: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        case .immutable: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        }
        let name = mode == .immutable ? Self.immutableURI(path) : path
        // Each transaction's log frames go to the file in one write (see CSQLiteBatchedWAL); without
        // that VFS, the default one.
        let code = sqlite3_open_v2(name, &handle, flags, tollgate_batched_wal_vfs())
        guard code == SQLITE_OK, let handle else {
            let error = DatabaseError(connection: handle, resultCode: code)
            sqlite3_close_v2(handle)
            throw error
        }
        self.path = path
        self.mode = mode
        self.handle = handle
        self.busyTimeout = busyTimeout
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.milliseconds(busyTimeout))
        quotaBucketWrites.install(on: handle)
    }

    /// `file:/absolute/path?immutable=1`, with the characters a URI gives meaning to escaped.
    private static func immutableURI(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let escaped = absolute.replacingOccurrences(of: "%", with: "%25")
            .replacingOccurrences(of: "?", with: "%3F").replacingOccurrences(of: "#", with: "%23")
        return "file:\(escaped)?immutable=1"
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    deinit {
        // Statements must be finalised before the connection can close.
        statementCache.removeAll()
        TableWriteCounter.uninstall(from: handle)
        sqlite3_close_v2(handle)
    }

    /// Runs one or more SQL statements separated by semicolons, without arguments.
    /// - Parameter sql: The statements.
    /// - Throws: ``DatabaseError`` for the first statement that fails.
    public func executeScript(_ sql: String) throws(DatabaseError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        guard code == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_free(errorMessage)
            throw DatabaseError(extendedResultCode: sqlite3_extended_errcode(handle), message: message, sql: sql,
                                systemErrorCode: sqlite3_system_errno(handle))
        }
    }

    /// Prepares a statement that is not cached: finalised when released.
    /// - Parameter sql: One SQL statement with `?` placeholders.
    /// - Returns: The statement.
    /// - Throws: ``DatabaseError`` when SQLite cannot prepare it.
    public func makeStatement(sql: String) throws(DatabaseError) -> Statement {
        try Statement(connection: handle, sql: sql, suspension: suspension, writeCounter: quotaBucketWrites)
    }

    /// Runs one statement with arguments, preparing it for this call only.
    /// - Parameters:
    ///   - sql: One SQL statement with `?` placeholders.
    ///   - arguments: One value per placeholder, as plain Swift values.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func execute(sql: String, arguments: StatementArguments = []) throws(DatabaseError) {
        try makeStatement(sql: sql).execute(arguments: arguments)
    }

    /// Runs a query, preparing it for this call only, and returns every row.
    /// - Parameters:
    ///   - sql: One SQL query with `?` placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The rows.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchAll(sql: String, arguments: StatementArguments = []) throws(DatabaseError) -> [Row] {
        try makeStatement(sql: sql).fetchAll(arguments: arguments)
    }

    /// Runs a query, preparing it for this call only, and returns its first row.
    /// - Parameters:
    ///   - sql: One SQL query with `?` placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The first row, or nil when there is none.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchOne(sql: String, arguments: StatementArguments = []) throws(DatabaseError) -> Row? {
        try makeStatement(sql: sql).fetchOne(arguments: arguments)
    }

    /// Runs a query, preparing it for this call only, and returns the first column of its first row.
    /// - Parameters:
    ///   - sql: One SQL query with `?` placeholders.
    ///   - arguments: One value per placeholder.
    /// - Returns: The value, or `.null` when there is no row.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func fetchValue(sql: String, arguments: StatementArguments = []) throws(DatabaseError) -> DatabaseValue {
        try fetchOne(sql: sql, arguments: arguments)?[0] ?? .null
    }

    /// SQLite's counter of commits by other connections (`PRAGMA data_version`): it changes
    /// exactly when another connection — another process, or another store on the same file —
    /// committed since this connection last looked, never for this connection's own commits.
    /// - Returns: The counter; compare it with an earlier value, its size means nothing.
    /// - Throws: ``DatabaseError`` when SQLite cannot read the file's header.
    public func dataVersion() throws(DatabaseError) -> Int64 {
        try cachedStatement(sql: "PRAGMA data_version").fetchInt64() ?? 0
    }

    /// The prepared statement for `sql`, prepared on first use and kept for the connection's life:
    /// for the SQL of a hot path, a fixed text (never one with interpolated values, which would
    /// grow the cache without bound).
    /// - Parameter sql: One SQL statement.
    /// - Returns: The cached statement, reset and ready to bind.
    /// - Throws: ``DatabaseError`` when SQLite cannot prepare it.
    public func cachedStatement(sql: String) throws(DatabaseError) -> Statement {
        let key = StatementCacheKey(sql)
        if let statement = statementCache[key] {
            return statement
        }
        let statement = try makeStatement(sql: sql)
        statementCache[key] = statement
        return statement
    }

    /// Stops the statement running now, from any thread (`sqlite3_interrupt`): it fails with
    /// `SQLITE_INTERRUPT` and its transaction rolls back, releasing its lock.
    func interrupt() { sqlite3_interrupt(handle) }

    /// How many statements the cache holds; each SQL text is prepared once.
    public var cachedStatementCount: Int { statementCache.count }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changesCount: Int { Int(sqlite3_changes64(handle)) }

    /// Rows inserted, updated or deleted on this connection since it opened, triggers included.
    public var totalChangesCount: Int64 { sqlite3_total_changes64(handle) }

    /// The rowid of the last successful INSERT.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether SQLite opened the main file read-only, as it silently does for a read-write open
    /// of a file this process cannot write (permissions, a read-only file system).
    public var isFileReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// Whether a transaction is open on this connection.
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }
}

/// A statement cache's key: the SQL text, hashed from its length and 24 of its bytes.
///
/// Hashing the whole text, as `String` does, was about a microsecond of every admission (seven
/// statements of a few hundred bytes, each looked up once). The texts the library caches differ in
/// length or in their opening, middle or closing bytes, and two that collide are still told apart by
/// `==`, which costs nothing for the same literal (equal storage) and a `memcmp` otherwise.
private struct StatementCacheKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            guard bytes.count >= 16 else { return hasher.combine(bytes: UnsafeRawBufferPointer(bytes)) }
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count / 2 - 4, as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
        }
    }

    static func == (lhs: StatementCacheKey, rhs: StatementCacheKey) -> Bool { lhs.sql == rhs.sql }
}
