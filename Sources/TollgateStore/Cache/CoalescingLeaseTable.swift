import Foundation

/// The `cache_leases` table's operations.
enum CoalescingLeaseTable {
    /// Takes the lease on `resourceKey` unless a lease of another holder is still running (the
    /// holder's own is renewed); returns the lease in force afterwards (`lease` itself when taken).
    static func acquire(_ db: Database, resourceKey: String, lease: CoalescingLease) throws -> CoalescingLease {
        try db.execute(
            """
            INSERT INTO cache_leases (resource_key, holder, started_ms, expires_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (resource_key) DO UPDATE SET
                holder = excluded.holder, started_ms = excluded.started_ms, expires_ms = excluded.expires_ms
            WHERE cache_leases.expires_ms <= excluded.started_ms OR cache_leases.holder = excluded.holder
            """,
            [.text(resourceKey), .text(lease.holder), .integer(lease.startedMs), .integer(lease.expiresMs)]
        )
        return try current(db, resourceKey: resourceKey) ?? lease
    }

    /// The lease on `resourceKey`, running or lapsed, if any.
    static func current(_ db: Database, resourceKey: String) throws -> CoalescingLease? {
        try db.fetchAll(
            "SELECT holder, started_ms, expires_ms FROM cache_leases WHERE resource_key = ?", [.text(resourceKey)]
        ).first.map { row in
            CoalescingLease(holder: row[0].string ?? "", startedMs: row[1].int64 ?? 0, expiresMs: row[2].int64 ?? 0)
        }
    }

    /// Gives the lease back, if `holder` still holds it.
    static func release(_ db: Database, resourceKey: String, holder: String) throws {
        try db.execute("DELETE FROM cache_leases WHERE resource_key = ? AND holder = ?", [.text(resourceKey), .text(holder)])
    }
}
