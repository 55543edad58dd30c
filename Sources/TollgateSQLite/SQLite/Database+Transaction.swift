import CSQLite
import TollgateCore

extension Database {
    /// How a transaction takes its locks.
    public enum TransactionKind: String, Sendable {
        /// Takes the write lock at `BEGIN`, so it never fails later with `SQLITE_BUSY_SNAPSHOT`:
        /// every write transaction uses this.
        case immediate = "IMMEDIATE"
        /// Takes a read snapshot at the first read: for consistent multi-statement reads.
        case deferred = "DEFERRED"
    }

    /// Runs `body` inside a transaction: commits when it returns, rolls back when it throws.
    ///
    /// The first error wins: when `body` throws and the rollback fails too, `body`'s error is the
    /// one rethrown.
    /// - Parameters:
    ///   - kind: ``TransactionKind/immediate`` for writes, ``TransactionKind/deferred`` for reads.
    ///   - body: The work to do inside the transaction.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``DatabaseError`` when `BEGIN` or `COMMIT` fails.
    public func inTransaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        precondition(!isInsideTransaction, "transactions do not nest")
        // Literal texts: one interpolated per transaction would be hashed and compared in full by
        // the statement cache.
        try cachedStatement(sql: kind == .immediate ? "BEGIN IMMEDIATE TRANSACTION" : "BEGIN DEFERRED TRANSACTION").execute()
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        do {
            try cachedStatement(sql: "COMMIT TRANSACTION").execute()
        } catch {
            // A failed COMMIT (SQLITE_FULL, I/O) can leave the transaction open.
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    private func rollbackIgnoringErrors() {
        // SQLite may already have rolled back on its own (SQLITE_FULL, SQLITE_IOERR, …).
        if isInsideTransaction {
            try? cachedStatement(sql: "ROLLBACK TRANSACTION").execute()
        }
    }
}
