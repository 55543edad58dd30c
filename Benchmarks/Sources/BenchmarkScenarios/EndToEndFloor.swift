import CSQLiteFloor
import Foundation

/// The least SQLite work a gate that answers a `304` must do on its path, done with the bare C API
/// right before the end-to-end harness's bare request: one read of a stored 10 KiB body (the cache's
/// lookup) and one write transaction of one row (DESIGN.md's one write on the path, the admission).
///
/// Timed in situ — between loopback exchanges, with their threads and cold caches — it says what
/// the `≤ +10 %` goal leaves for everything else the gate does.
public final class EndToEndFloor {
    private var db: OpaquePointer?
    private var read: OpaquePointer?
    private var begin: OpaquePointer?
    private var update: OpaquePointer?
    private var commit: OpaquePointer?
    private var copy = [UInt8](repeating: 0, count: 10 * 1024)

    /// Creates the file at `path` with Tollgate's settings (WAL, `synchronous=NORMAL`): one row to
    /// update and one 10 KiB body to read.
    /// - Parameter path: The database file; replaced.
    /// - Throws: `BenchmarkFailure` when SQLite refuses a step.
    public init(path: String) throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchmarkFailure("cannot open \(path)") }
        try execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0);
            CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
            INSERT INTO bodies VALUES (1, randomblob(10240));
            """)
        read = try prepare("SELECT body FROM bodies WHERE id = 1")
        begin = try prepare("BEGIN IMMEDIATE")
        update = try prepare("UPDATE counter SET n = n + 1 WHERE id = 1")
        commit = try prepare("COMMIT")
    }

    deinit {
        for statement in [read, begin, update, commit] { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    /// The body read and copied out, then the one-row write transaction.
    /// - Throws: `BenchmarkFailure` when a step fails.
    public func pathWork() throws {
        guard sqlite3_step(read) == SQLITE_ROW, let body = sqlite3_column_blob(read, 0) else {
            throw BenchmarkFailure("the floor's body is missing")
        }
        let length = Int(sqlite3_column_bytes(read, 0))
        copy.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: body, count: min(length, $0.count))) }
        sqlite3_reset(read)
        for statement in [begin, update, commit] {
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchmarkFailure("the floor's write failed") }
            sqlite3_reset(statement)
        }
    }

    private func execute(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
            throw BenchmarkFailure("floor: \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else {
            throw BenchmarkFailure("floor: \(String(cString: sqlite3_errmsg(db)))")
        }
        return statement
    }
}
