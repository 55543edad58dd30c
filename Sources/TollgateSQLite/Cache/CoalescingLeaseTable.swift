import Foundation
import TollgateCore

/// The `cache_leases` table's operations.
enum CoalescingLeaseTable {
    /// Takes the lease on `resourceKey` unless a lease of another holder is still running (the
    /// holder's own is renewed); returns the lease in force afterwards (`lease` itself when taken).
    static func acquire(_ db: Database, resourceKey: String, lease: CoalescingLease) throws -> CoalescingLease {
        // The row comes back when this holder inserted it or took it over: the common case, one
        // statement. Another holder's running lease is left as it is and returns nothing; it is read.
        let taken = try db.cachedStatement(sql: """
            INSERT INTO cache_leases (resource_key, holder, started_ms, expires_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (resource_key) DO UPDATE SET
                holder = excluded.holder, started_ms = excluded.started_ms, expires_ms = excluded.expires_ms
            WHERE cache_leases.expires_ms <= excluded.started_ms OR cache_leases.holder = excluded.holder
            RETURNING holder, started_ms, expires_ms
            """).fetchOne(arguments: [resourceKey, lease.holder, lease.startedMs, lease.expiresMs])
        if let taken { return try Self.lease(taken) }
        return try current(db, resourceKey: resourceKey) ?? lease
    }

    /// The lease on `resourceKey`, running or lapsed, if any.
    static func current(_ db: Database, resourceKey: String) throws -> CoalescingLease? {
        try db.cachedStatement(sql: "SELECT holder, started_ms, expires_ms FROM cache_leases WHERE resource_key = ?")
            .fetchOne(arguments: [resourceKey]).map(Self.lease)
    }

    private static func lease(_ row: Row) throws -> CoalescingLease {
        CoalescingLease(holder: try row.decode(String.self, forColumn: "holder"),
                        startedMs: try row.decode(Int64.self, forColumn: "started_ms"),
                        expiresMs: try row.decode(Int64.self, forColumn: "expires_ms"))
    }

    /// Gives the lease back, if `holder` still holds it.
    static func release(_ db: Database, resourceKey: String, holder: String) throws {
        try db.cachedStatement(sql: "DELETE FROM cache_leases WHERE resource_key = ? AND holder = ?").execute(arguments: [resourceKey, holder])
    }
}
