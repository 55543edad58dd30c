import Foundation
import TollgateCore

extension SQLiteStore: MaintenanceStorage {
    public func vacuum(at: Date) async throws -> VacuumResult {
        try requireWritable()
        try requireFileInPlace()
        try requireNotSuspended()
        let sizes = try await translatingErrors { try await writer.writeRerunningAfterBusy { db -> (before: Int64, after: Int64, free: Int, checkpoint: Row?) in
            // Outside any transaction, on the writer connection: SQLite refuses VACUUM in a transaction.
            guard !db.isInsideTransaction else {
                throw StoreRefusal.invalidArgument("VACUUM cannot run inside a transaction")
            }
            db.rememberedRows.forgetAll()
            let before = try MaintenanceQueries.fileBytes(db)
            let free = try db.fetchValue(sql: "PRAGMA freelist_count").int ?? 0
            try db.execute(sql: "VACUUM")
            let after = try MaintenanceQueries.fileBytes(db)
            let checkpoint = try db.fetchOne(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            return (before, after, free, checkpoint)
        } }
        // `PRAGMA wal_checkpoint` answers one row (busy, log, checkpointed); -1 frames outside WAL mode.
        let checkpoint = sizes.checkpoint
        let result = VacuumResult(
            bytesBefore: sizes.before, bytesAfter: sizes.after, freePagesBefore: sizes.free,
            checkpointBusy: try checkpoint?.decode(Bool.self, forColumn: "busy") ?? false,
            walFrames: max(try checkpoint?.decode(Int.self, forColumn: "log") ?? 0, 0),
            checkpointedFrames: max(try checkpoint?.decode(Int.self, forColumn: "checkpointed") ?? 0, 0)
        )
        try await writeKeepingRecentEntries { db in
            _ = try AdminEventTable.record(
                db, at: at, subject: "database", target: nil, action: "vacuum",
                detail: "\(result.bytesBefore) → \(result.bytesAfter) bytes (\(result.freePagesBefore) free pages); "
                    + "WAL checkpoint \(result.checkpointBusy ? "busy" : "complete"): "
                    + "\(result.checkpointedFrames)/\(result.walFrames) frames"
            )
        }
        return result
    }

    public func adminEvents(subject: String?, limit: Int) async throws -> [AdminEvent] {
        try await read { db in try AdminEventTable.recent(db, subject: subject, limit: limit) }
    }
}

/// The file-level reads the maintenance operations need.
enum MaintenanceQueries {
    /// Bytes in the database's pages.
    static func fileBytes(_ db: Database) throws -> Int64 {
        let pages = try db.fetchValue(sql: "PRAGMA page_count").int64 ?? 0
        let size = try db.fetchValue(sql: "PRAGMA page_size").int64 ?? 0
        return pages * size
    }
}
