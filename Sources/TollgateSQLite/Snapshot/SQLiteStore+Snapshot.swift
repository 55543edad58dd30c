import Foundation
import TollgateCore

extension SQLiteStore: DashboardSnapshotStorage {
    /// Reads a ``DashboardSnapshot`` as of `now`, in one read transaction.
    /// - Parameters:
    ///   - now: The instant that decides today's Pacific date, open circuits and throttle windows.
    ///   - recentEvents: How many ledger events and circuit transitions to include.
    /// - Returns: The snapshot.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func dashboardSnapshot(at now: Date, recentEvents: Int = 8) async throws -> DashboardSnapshot {
        try await read { db in try SnapshotQueries.snapshot(db, now: now, recentEvents: recentEvents) }
    }

    /// Reads a ``DashboardSnapshot`` as of `now`, blocking the calling thread.
    /// - Parameters:
    ///   - now: The instant that decides today's Pacific date, open circuits and throttle windows.
    ///   - recentEvents: How many ledger events and circuit transitions to include.
    /// - Returns: The snapshot.
    /// - Throws: ``DatabaseError`` when SQLite fails.
    public func dashboardSnapshot(at now: Date, recentEvents: Int = 8) throws -> DashboardSnapshot {
        try read { db in try SnapshotQueries.snapshot(db, now: now, recentEvents: recentEvents) }
    }
}

/// The snapshot's SQL: the same rules as the public views, but for an explicit `now`.
enum SnapshotQueries {
    static func snapshot(_ db: Database, now: Date, recentEvents: Int) throws -> DashboardSnapshot {
        let day = PacificDay(containing: now)
        let nowMs = SaturatingConversion.int64((now.timeIntervalSince1970 * 1000).rounded())
        let usage = try db.fetchAll(sql: """
            SELECT bucket, endpoint, units, calls FROM quota_usage
            WHERE pacific_date = ? ORDER BY bucket, units DESC, endpoint
            """, arguments: [day.key])
        let buckets = try db.fetchAll(sql: """
            SELECT bucket, daily_limit, exhausted_until_ms, window_spec, announced_key, announced_reset_ms
            FROM quota_buckets ORDER BY bucket
            """).map { row -> DashboardSnapshot.Bucket in
                let name = try row.decode(String.self, forColumn: "bucket")
                let (window, period) = DashboardSnapshot.Bucket.shownWindow(
                    windowSpecification: try row.decode(String.self, forColumn: "window_spec"),
                    announcedKey: try row.decode(String?.self, forColumn: "announced_key"),
                    announcedResetMs: try row.decode(Int64?.self, forColumn: "announced_reset_ms"), now: now
                )
                // Today's rows serve a daily bucket; another window's are summed over its keys.
                let rows = period.key == day.key && !period.spansSeveralKeys
                    ? try usage.filter { try $0.decode(String.self, forColumn: "bucket") == name }
                    : try db.fetchAll(sql: """
                        SELECT endpoint, SUM(units) AS units, SUM(calls) AS calls FROM quota_usage
                        WHERE pacific_date BETWEEN ? AND ? AND bucket = ?
                        GROUP BY endpoint ORDER BY units DESC, endpoint
                        """, arguments: [period.firstKey, period.key, name])
                let endpoints = try rows.map {
                    DashboardSnapshot.EndpointUsage(endpoint: try $0.decode(String.self, forColumn: "endpoint"),
                                                    units: try $0.decode(Int.self, forColumn: "units"),
                                                    calls: try $0.decode(Int.self, forColumn: "calls"))
                }
                return DashboardSnapshot.Bucket(
                    bucket: name, limit: try row.decode(Int.self, forColumn: "daily_limit"),
                    exhaustedUntilMs: try row.decode(Int64?.self, forColumn: "exhausted_until_ms"),
                    window: window, period: period, nowMs: nowMs, endpoints: endpoints
                )
            }
        let circuits = try db.fetchAll(sql: """
            SELECT endpoint, state, consecutive_failures, failure_threshold, open_until_ms, open_duration_ms, trips
            FROM circuits ORDER BY endpoint
            """).map { row -> DashboardSnapshot.Circuit in
            var state = try row.decode(String.self, forColumn: "state")
            var retryIn = 0
            if state == "open", let openUntil = try row.decode(Int64?.self, forColumn: "open_until_ms") {
                if openUntil <= nowMs {
                    state = "half_open"
                } else {
                    // A wall clock set back never shows more than the open duration.
                    let remaining = openUntil - nowMs
                    let capped = try row.decode(Int64?.self, forColumn: "open_duration_ms").map { min(remaining, $0) } ?? remaining
                    retryIn = Int((capped + 999) / 1000)
                }
            }
            return DashboardSnapshot.Circuit(
                endpoint: try row.decode(String.self, forColumn: "endpoint"), state: state,
                consecutiveFailures: try row.decode(Int.self, forColumn: "consecutive_failures"),
                failureThreshold: try row.decode(Int.self, forColumn: "failure_threshold"), retryInSeconds: retryIn,
                trips: try row.decode(Int.self, forColumn: "trips")
            )
        }
        let throttles = try db.fetchAll(sql: """
            SELECT limits.endpoint, limits.request_limit, limits.window_ms,
                   (SELECT COUNT(*) FROM json_each(limits.admitted_at_ms) AS admitted
                     WHERE admitted.value > ? - limits.window_ms) AS current_count
            FROM throttle_limits AS limits ORDER BY limits.endpoint
            """, arguments: [nowMs]).map { row -> DashboardSnapshot.Throttle in
            let limit = try row.decode(Int.self, forColumn: "request_limit")
            let count = try row.decode(Int.self, forColumn: "current_count")
            return DashboardSnapshot.Throttle(
                endpoint: try row.decode(String.self, forColumn: "endpoint"), limit: limit,
                windowSeconds: Double(try row.decode(Int64.self, forColumn: "window_ms")) / 1000,
                count: count, remaining: max(0, limit - count)
            )
        }
        let cache = try db.fetchAll(sql: """
            SELECT endpoint, hits, revalidations, misses, stale, bytes_saved FROM cache_stats_daily
            WHERE pacific_date = ? ORDER BY endpoint
            """, arguments: [day.key]).map { row -> DashboardSnapshot.CacheDay in
            let hits = try row.decode(Int.self, forColumn: "hits")
            let revalidations = try row.decode(Int.self, forColumn: "revalidations")
            let misses = try row.decode(Int.self, forColumn: "misses")
            let total = hits + revalidations + misses
            return DashboardSnapshot.CacheDay(
                endpoint: try row.decode(String.self, forColumn: "endpoint"), hits: hits, revalidations: revalidations,
                misses: misses, stale: try row.decode(Int.self, forColumn: "stale"),
                bytesSaved: try row.decode(Int.self, forColumn: "bytes_saved"),
                hitRate: total == 0 ? nil : Double(hits + revalidations) / Double(total)
            )
        }
        let totals = try db.fetchOne(sql: "SELECT entries, body_bytes FROM cache_totals WHERE id = 1")
        let ledger = try db.fetchAll(sql: """
            SELECT at_ms, bucket, endpoint, kind, units FROM quota_events ORDER BY id DESC LIMIT ?
            """, arguments: [recentEvents]).map {
            DashboardSnapshot.LedgerEvent(
                at: date(ms: try $0.decode(Int64.self, forColumn: "at_ms")), bucket: try $0.decode(String.self, forColumn: "bucket"),
                endpoint: try $0.decode(String.self, forColumn: "endpoint"), kind: try $0.decode(String.self, forColumn: "kind"),
                units: try $0.decode(Int.self, forColumn: "units")
            )
        }
        let transitions = try db.fetchAll(sql: """
            SELECT at_ms, endpoint, from_state, to_state, reason FROM circuit_transitions ORDER BY id DESC LIMIT ?
            """, arguments: [recentEvents]).map {
            DashboardSnapshot.CircuitTransition(
                at: date(ms: try $0.decode(Int64.self, forColumn: "at_ms")), endpoint: try $0.decode(String.self, forColumn: "endpoint"),
                from: try $0.decode(String.self, forColumn: "from_state"), to: try $0.decode(String.self, forColumn: "to_state"),
                reason: try $0.decode(String.self, forColumn: "reason")
            )
        }
        return DashboardSnapshot(
            takenAt: now, pacificDate: day.key, resetsAt: day.nextReset, buckets: buckets, circuits: circuits,
            throttles: throttles, cache: cache, cacheEntries: try totals?.decode(Int.self, forColumn: "entries") ?? 0,
            cacheBodyBytes: try totals?.decode(Int.self, forColumn: "body_bytes") ?? 0,
            recentLedgerEvents: ledger, recentCircuitTransitions: transitions
        )
    }

    private static func date(ms: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }
}
