import Foundation
import PostgresNIO
import TollgateCore

/// The throttle over PostgreSQL: each endpoint's `throttle_limits` row keeps the times of the
/// requests admitted in its window (`admitted_at_ms`, ascending, by the database's clock), so
/// every machine shares one sliding window per endpoint.
///
/// An admission holds the endpoint's `throttle_limits` row (its upsert locks it) while it prunes,
/// counts and records, so admissions of one endpoint from every machine happen one after the
/// other and the window never holds more than its limit. The `at:` parameters are not used.
extension PostgresStore: ThrottleStorage {
    /// Admits the request when the endpoint's window has room, and records it.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - limit: Its limit, written to `throttle_limits` for the `throttle_status` view.
    ///   - at: Not used: the database's clock times the request.
    /// - Returns: Admitted, or refused with the time until the window has room.
    /// - Throws: `StoreRefusal.invalidArgument` for an invalid limit; ``PostgresStoreError`` when
    ///   the server fails.
    public func admitRequest(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleAdmission {
        try limit.validate(endpoint: endpoint)
        return try await inTransaction("admitting a request to \(endpoint)") { [self] connection in
            try await admitThrottled(connection, endpoint: endpoint, limit: limit)
        }
    }

    /// Reads an endpoint's window without admitting anything.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - limit: Its limit.
    ///   - at: Not used: the database's clock decides the window.
    /// - Returns: The requests in the window and the time until it has room.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func throttleWindow(endpoint: String, limit: ThrottleLimit, at: Date) async throws -> ThrottleWindow {
        let windowMs = Int(limit.windowMilliseconds)
        return try await withConnection("reading the window of \(endpoint)") { [self] connection in
            guard let row = try await connection.firstRow("""
                WITH clock AS (SELECT tollgate_ms(clock_timestamp()) AS now_ms)
                SELECT clock.now_ms, COALESCE(tollgate_window(l.admitted_at_ms, clock.now_ms - \(windowMs)), '{}')
                FROM clock LEFT JOIN throttle_limits AS l ON l.endpoint = \(endpoint)
                """, logger: logger) else {
                throw StoreRefusal.invalidArgument("the window of \(endpoint) returned no row")
            }
            let (nowMs, window) = try row.decode((Int64, [Int64]).self)
            let count = window.count
            let retryAfter = count < limit.requests
                ? 0
                : limit.timeUntilRoom(admittedMs: window, nowMs: nowMs)
            return ThrottleWindow(endpoint: endpoint, count: count, limit: limit.requests, retryAfter: retryAfter)
        }
    }

    /// Forgets the recorded requests of one endpoint, or of all, and records the reset in
    /// `admin_events`.
    /// - Parameters:
    ///   - endpoint: The endpoint, or nil for every endpoint.
    ///   - at: Not used: the database's clock stamps the event.
    /// - Returns: How many recorded requests were forgotten.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    @discardableResult
    public func resetThrottle(endpoint: String?, at: Date) async throws -> Int {
        try await inTransaction("resetting the throttle") { [self] connection in
            let removed = try await connection.firstRow("""
                WITH recorded AS (
                    SELECT endpoint, cardinality(admitted_at_ms) AS n FROM throttle_limits
                    WHERE \(endpoint)::text IS NULL OR endpoint = \(endpoint) FOR UPDATE
                ), emptied AS (
                    UPDATE throttle_limits AS l SET admitted_at_ms = '{}' FROM recorded
                    WHERE l.endpoint = recorded.endpoint AND recorded.n > 0
                )
                SELECT COALESCE(sum(n), 0)::bigint FROM recorded
                """, logger: logger)?.decode(Int.self) ?? 0
            try await connection.run("""
                INSERT INTO admin_events (at_ms, subject, target, action, detail)
                VALUES (tollgate_ms(now()), 'throttle', \(endpoint), 'reset',
                        \("forgot \(removed) recorded \(removed == 1 ? "request" : "requests")"))
                """, logger: logger)
            return removed
        }
    }

    /// Admits and records, or refuses, inside the caller's transaction.
    func admitThrottled(_ connection: PostgresConnection, endpoint: String, limit: ThrottleLimit) async throws -> ThrottleAdmission {
        let windowMs = Int(limit.windowMilliseconds)
        // The upsert locks the endpoint's limits row even when it changes nothing: the lock that
        // orders this endpoint's admissions across machines until the transaction ends.
        try await connection.run("""
            INSERT INTO throttle_limits AS l (endpoint, request_limit, window_ms, updated_at_ms)
            VALUES (\(endpoint), \(limit.requests), \(windowMs), tollgate_ms(now()))
            ON CONFLICT (endpoint) DO UPDATE SET request_limit = excluded.request_limit,
                window_ms = excluded.window_ms, updated_at_ms = excluded.updated_at_ms
            WHERE l.request_limit <> excluded.request_limit OR l.window_ms <> excluded.window_ms
            """, logger: logger)
        // A new snapshot, taken under the lock: every admission committed before it is counted.
        guard let row = try await connection.firstRow("""
            WITH clock AS (
                SELECT tollgate_ms(clock_timestamp()) AS now_ms
            ), current AS (
                SELECT tollgate_window(l.admitted_at_ms, clock.now_ms - \(windowMs)) AS times
                FROM throttle_limits AS l, clock WHERE l.endpoint = \(endpoint)
            ), recorded AS (
                UPDATE throttle_limits AS l
                SET admitted_at_ms = CASE WHEN cardinality(current.times) < \(limit.requests)
                                          THEN current.times || clock.now_ms ELSE current.times END
                FROM current, clock WHERE l.endpoint = \(endpoint)
            )
            SELECT clock.now_ms, current.times FROM clock, current
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the admission to \(endpoint) returned no row")
        }
        let (nowMs, window) = try row.decode((Int64, [Int64]).self)
        if window.count < limit.requests {
            return ThrottleAdmission(allowed: true, count: window.count + 1, limit: limit.requests, retryAfter: nil)
        }
        let retryAfter = limit.timeUntilRoom(admittedMs: window, nowMs: nowMs)
        return ThrottleAdmission(allowed: false, count: window.count, limit: limit.requests, retryAfter: retryAfter)
    }
}
