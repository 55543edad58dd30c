/// The lease a request holds while it leads a coalesced fetch of one resource, so that identical
/// requests from other processes wait for its answer instead of sending their own.
public struct CoalescingLease: Sendable, Hashable {
    /// Who holds it: a token unique to the leading request.
    public var holder: String
    /// When the leader took it, in milliseconds since 1970: an answer stored since then is its.
    public var startedMs: Int64
    /// When it lapses, in milliseconds since 1970, if the leader has not released it.
    public var expiresMs: Int64

    /// Creates a lease.
    /// - Parameters:
    ///   - holder: The leading request's token.
    ///   - startedMs: When it was taken.
    ///   - expiresMs: When it lapses.
    public init(holder: String, startedMs: Int64, expiresMs: Int64) {
        self.holder = holder
        self.startedMs = startedMs
        self.expiresMs = expiresMs
    }
}

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
