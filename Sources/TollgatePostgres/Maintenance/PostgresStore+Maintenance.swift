import Foundation
import PostgresNIO
import TollgateCore

/// Maintenance over PostgreSQL.
///
/// ``vacuum(at:)`` runs a plain `VACUUM (ANALYZE)` of Tollgate's tables, which marks the space of
/// deleted rows for reuse without locking out the fleet's other machines. It is not
/// `VACUUM FULL`: that rewrites tables under an exclusive lock, which an operator should choose
/// knowingly (with `psql`), not a `tollgate` command run on one machine of a fleet.
extension PostgresStore: MaintenanceStorage {
    /// Tollgate's tables, vacuumed by ``vacuum(at:)`` and measured before and after.
    static let tables = [
        "quota_buckets", "quota_bucket_days", "quota_usage", "quota_events", "throttle_limits",
        "circuits", "circuit_transitions", "cache_entries", "cache_bodies", "cache_leases",
        "cache_stats_daily", "admin_events",
    ]

    /// Vacuums and analyzes Tollgate's tables, and records an `admin_events` row (subject
    /// `database`, action `vacuum`).
    ///
    /// The sizes are the tables' total sizes (`pg_total_relation_size`, indexes and TOAST
    /// included). `VacuumResult`'s SQLite fields (free pages, the write-ahead log checkpoint) have
    /// no PostgreSQL counterpart and are zero; the server checkpoints its own log.
    /// - Parameter at: Not used: the database's clock stamps the event.
    /// - Returns: The tables' sizes before and after.
    /// - Throws: ``PostgresStoreError`` when the server fails, such as when this user does not own
    ///   the tables.
    public func vacuum(at: Date) async throws -> VacuumResult {
        let sizeQuery = PostgresQuery(unsafeSQL: "SELECT COALESCE(SUM(pg_total_relation_size(name::regclass)), 0)::bigint "
            + "FROM unnest(ARRAY['\(Self.tables.joined(separator: "','"))']) AS name")
        return try await withConnection("vacuuming the database") { [self] connection in
            let before = try await connection.firstRow(sizeQuery, logger: logger)?.decode(Int.self) ?? 0
            // Outside any transaction: PostgreSQL refuses VACUUM inside one.
            try await connection.run(
                PostgresQuery(unsafeSQL: "VACUUM (ANALYZE) " + Self.tables.joined(separator: ", ")), logger: logger
            )
            let after = try await connection.firstRow(sizeQuery, logger: logger)?.decode(Int.self) ?? 0
            let result = VacuumResult(
                bytesBefore: Int64(before), bytesAfter: Int64(after), freePagesBefore: 0, checkpointBusy: false,
                walFrames: 0, checkpointedFrames: 0
            )
            try await connection.run("""
                INSERT INTO admin_events (at_ms, subject, target, action, detail)
                VALUES (tollgate_ms(now()), 'database', NULL, 'vacuum',
                        \("VACUUM (ANALYZE) of Tollgate's tables: \(before) → \(after) bytes"))
                """, logger: logger)
            return result
        }
    }

    /// The latest administrative events, newest first.
    /// - Parameters:
    ///   - subject: Only events about `throttle`, `cache` or `database`; nil for every subject.
    ///   - limit: The most events to return.
    /// - Returns: The events.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func adminEvents(subject: String?, limit: Int) async throws -> [AdminEvent] {
        let limit = max(limit, 0)
        return try await withConnection("reading the administrative events") { [self] connection in
            try await connection.rows("""
                SELECT id, at_ms, subject, target, action, detail FROM admin_events
                WHERE \(subject)::text IS NULL OR subject = \(subject)
                ORDER BY id DESC LIMIT \(limit)
                """, logger: logger).map { row in
                let (id, atMs, subject, target, action, detail) = try row.decode(
                    (Int, Int, String, String?, String, String?).self
                )
                return AdminEvent(
                    id: Int64(id), at: Self.date(milliseconds: atMs), subject: subject, target: target, action: action,
                    detail: detail
                )
            }
        }
    }
}
