import Foundation

/// The throttle's SQL, on a ``Database`` inside a transaction the caller opened.
///
/// Each `SQLiteStore` operation runs one of these in its own transaction; the gate's admission
/// composes ``admit(_:endpoint:limit:at:)`` with the circuit's and the quota's functions in one
/// `BEGIN IMMEDIATE` transaction. Every statement works on one endpoint through the
/// `throttle_requests_window (endpoint, at_ms)` index, and the endpoint keeps at most its limit's
/// worth of rows: requests are only recorded while the window has room, and the ones that left
/// the window are deleted at the next admission.
enum ThrottleTable {
    /// Admits and records, or refuses. See ``ThrottleStorage/admitRequest(endpoint:limit:at:)``.
    static func admit(_ db: Database, endpoint: String, limit: ThrottleLimit, at: Date) throws -> ThrottleAdmission {
        guard limit.isValid else {
            throw StoreError.invalidArgument("invalid throttle limit for \(endpoint): \(limit)")
        }
        let nowMs = at.throttleMilliseconds
        let windowMs = limit.windowMilliseconds
        try db.execute("""
            INSERT INTO throttle_limits (endpoint, request_limit, window_ms, updated_at_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (endpoint) DO UPDATE SET request_limit = excluded.request_limit,
                window_ms = excluded.window_ms, updated_at_ms = excluded.updated_at_ms
            WHERE request_limit <> excluded.request_limit OR window_ms <> excluded.window_ms
            """, [.text(endpoint), .int(limit.requests), .integer(windowMs), .integer(nowMs)])
        // Stamped in the future: the wall clock was set back. They happened no later than now.
        try db.execute(
            "UPDATE throttle_requests SET at_ms = ? WHERE endpoint = ? AND at_ms > ?",
            [.integer(nowMs), .text(endpoint), .integer(nowMs)]
        )
        try db.execute(
            "DELETE FROM throttle_requests WHERE endpoint = ? AND at_ms <= ?",
            [.text(endpoint), .integer(nowMs - windowMs)]
        )
        let count = try db.fetchValue(
            "SELECT COUNT(*) FROM throttle_requests WHERE endpoint = ?", [.text(endpoint)]
        ).int ?? 0
        guard count < limit.requests else {
            let retryAfter = try timeUntilRoom(db, endpoint: endpoint, count: count, limit: limit, nowMs: nowMs)
            return ThrottleAdmission(allowed: false, count: count, limit: limit.requests, retryAfter: retryAfter)
        }
        try db.execute("INSERT INTO throttle_requests (endpoint, at_ms) VALUES (?, ?)", [.text(endpoint), .integer(nowMs)])
        return ThrottleAdmission(allowed: true, count: count + 1, limit: limit.requests, retryAfter: nil)
    }

    /// The window as it stands, read only. See ``ThrottleStorage/throttleWindow(endpoint:limit:at:)``.
    static func window(_ db: Database, endpoint: String, limit: ThrottleLimit, at: Date) throws -> ThrottleWindow {
        let nowMs = at.throttleMilliseconds
        // Rows stamped after now count, as admission counts them (as made now).
        let count = try db.fetchValue(
            "SELECT COUNT(*) FROM throttle_requests WHERE endpoint = ? AND at_ms > ?",
            [.text(endpoint), .integer(nowMs - limit.windowMilliseconds)]
        ).int ?? 0
        let retryAfter = count < limit.requests
            ? 0 : try timeUntilRoom(db, endpoint: endpoint, count: count, limit: limit, nowMs: nowMs)
        return ThrottleWindow(endpoint: endpoint, count: count, limit: limit.requests, retryAfter: retryAfter)
    }

    /// Forgets recorded requests and records the reset. See ``ThrottleStorage/resetThrottle(endpoint:at:)``.
    static func reset(_ db: Database, endpoint: String?, at: Date) throws -> Int {
        if let endpoint {
            try db.execute("DELETE FROM throttle_requests WHERE endpoint = ?", [.text(endpoint)])
        } else {
            try db.execute("DELETE FROM throttle_requests")
        }
        let removed = db.changesCount
        try db.execute(
            "INSERT INTO admin_events (at_ms, subject, target, action, detail) VALUES (?, 'throttle', ?, 'reset', ?)",
            [.integer(at.throttleMilliseconds), .optionalText(endpoint),
             .text("forgot \(removed) recorded \(removed == 1 ? "request" : "requests")")]
        )
        return removed
    }

    /// Seconds until the window has room for one more request: until the request whose expiry
    /// brings the count below the limit leaves the window (the oldest one, when the window holds
    /// exactly the limit). A limit of zero never has room: one window.
    private static func timeUntilRoom(
        _ db: Database, endpoint: String, count: Int, limit: ThrottleLimit, nowMs: Int64
    ) throws -> TimeInterval {
        let windowMs = limit.windowMilliseconds
        guard limit.requests > 0, let expiring = try db.fetchValue("""
            SELECT MIN(at_ms, ?) FROM throttle_requests WHERE endpoint = ? AND at_ms > ?
            ORDER BY at_ms LIMIT 1 OFFSET ?
            """, [.integer(nowMs), .text(endpoint), .integer(nowMs - windowMs), .int(count - limit.requests)]).int64
        else {
            return TimeInterval(windowMs) / 1000
        }
        return TimeInterval(max(expiring + windowMs - nowMs, 0)) / 1000
    }
}

extension Date {
    /// Milliseconds since 1970, as the throttle tables store times.
    fileprivate var throttleMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
