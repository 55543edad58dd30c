import CSQLite
import CSQLiteBatchedWAL

extension Database {
    /// How this connection's write-ahead log was written, since it was opened: the write calls SQLite
    /// made (`received`, two per frame) and the calls that reached the file (`issued`, about one per
    /// transaction). Nil while the log is not open through the batching VFS (not in WAL mode yet, or
    /// SQLite had no default VFS to wrap). For tests and measurements.
    var logWrites: (received: Int, issued: Int)? {
        var received: sqlite3_int64 = 0
        var issued: sqlite3_int64 = 0
        guard tollgate_batched_wal_counts(handle, &received, &issued) != 0 else { return nil }
        return (Int(received), Int(issued))
    }

    /// For tests: the next write-out of what the connection's log holds fails with `code` (a full
    /// disk, say) instead of writing. False while the log is not open through the batching VFS.
    func failNextLogWriteOut(with code: Int32) -> Bool {
        tollgate_batched_wal_fail_next_write_out(handle, code) != 0
    }
}
