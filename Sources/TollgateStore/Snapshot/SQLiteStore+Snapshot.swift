import Foundation

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
        let nowMs = Int64((now.timeIntervalSince1970 * 1000).rounded())
        let usage = try db.fetchAll("""
            SELECT bucket, endpoint, units, calls FROM quota_usage
            WHERE pacific_date = ? ORDER BY bucket, units DESC, endpoint
            """, [.text(day.key)])
        let buckets = try db.fetchAll("SELECT bucket, daily_limit, exhausted_until_ms FROM quota_buckets ORDER BY bucket")
            .map { row -> DashboardSnapshot.Bucket in
                let name = row[0].string ?? ""
                let endpoints = usage.filter { $0[0].string == name }.map {
                    DashboardSnapshot.EndpointUsage(endpoint: $0[1].string ?? "", units: $0[2].int ?? 0, calls: $0[3].int ?? 0)
                }
                let limit = row[1].int ?? 0
                let used = endpoints.reduce(0) { QuotaLimits.saturatingSum($0, $1.units) }
                let exhaustedUntil = row[2].int64.flatMap { $0 > nowMs ? date(ms: $0) : nil }
                return DashboardSnapshot.Bucket(
                    bucket: name, limit: limit, used: used,
                    remaining: exhaustedUntil == nil ? QuotaLimits.remaining(limit: limit, used: used) : 0,
                    exhaustedUntil: exhaustedUntil, endpoints: endpoints
                )
            }
        let circuits = try db.fetchAll("""
            SELECT endpoint, state, consecutive_failures, failure_threshold, open_until_ms, open_duration_ms, trips
            FROM circuits ORDER BY endpoint
            """).map { row -> DashboardSnapshot.Circuit in
            var state = row[1].string ?? "closed"
            var retryIn = 0
            if state == "open", let openUntil = row[4].int64 {
                if openUntil <= nowMs {
                    state = "half_open"
                } else {
                    // A wall clock set back never shows more than the open duration.
                    let remaining = openUntil - nowMs
                    let capped = row[5].int64.map { min(remaining, $0) } ?? remaining
                    retryIn = Int((capped + 999) / 1000)
                }
            }
            return DashboardSnapshot.Circuit(
                endpoint: row[0].string ?? "", state: state, consecutiveFailures: row[2].int ?? 0,
                failureThreshold: row[3].int ?? 0, retryInSeconds: retryIn, trips: row[6].int ?? 0
            )
        }
        let throttles = try db.fetchAll("""
            SELECT limits.endpoint, limits.request_limit, limits.window_ms,
                   (SELECT COUNT(*) FROM json_each(limits.admitted_at_ms) AS admitted
                     WHERE admitted.value > ? - limits.window_ms)
            FROM throttle_limits AS limits ORDER BY limits.endpoint
            """, [.integer(nowMs)]).map { row -> DashboardSnapshot.Throttle in
            let limit = row[1].int ?? 0
            let count = row[3].int ?? 0
            return DashboardSnapshot.Throttle(
                endpoint: row[0].string ?? "", limit: limit, windowSeconds: Double(row[2].int64 ?? 0) / 1000,
                count: count, remaining: max(0, limit - count)
            )
        }
        let cache = try db.fetchAll("""
            SELECT endpoint, hits, revalidations, misses, stale, bytes_saved FROM cache_stats_daily
            WHERE pacific_date = ? ORDER BY endpoint
            """, [.text(day.key)]).map { row -> DashboardSnapshot.CacheDay in
            let hits = row[1].int ?? 0, revalidations = row[2].int ?? 0, misses = row[3].int ?? 0
            let total = hits + revalidations + misses
            return DashboardSnapshot.CacheDay(
                endpoint: row[0].string ?? "", hits: hits, revalidations: revalidations, misses: misses,
                stale: row[4].int ?? 0, bytesSaved: row[5].int ?? 0,
                hitRate: total == 0 ? nil : Double(hits + revalidations) / Double(total)
            )
        }
        let totals = try db.fetchOne("SELECT entries, body_bytes FROM cache_totals WHERE id = 1")
        let ledger = try db.fetchAll("""
            SELECT at_ms, bucket, endpoint, kind, units FROM quota_events ORDER BY id DESC LIMIT ?
            """, [.int(recentEvents)]).map {
            DashboardSnapshot.LedgerEvent(
                at: date(ms: $0[0].int64 ?? 0), bucket: $0[1].string ?? "", endpoint: $0[2].string ?? "",
                kind: $0[3].string ?? "", units: $0[4].int ?? 0
            )
        }
        let transitions = try db.fetchAll("""
            SELECT at_ms, endpoint, from_state, to_state, reason FROM circuit_transitions ORDER BY id DESC LIMIT ?
            """, [.int(recentEvents)]).map {
            DashboardSnapshot.CircuitTransition(
                at: date(ms: $0[0].int64 ?? 0), endpoint: $0[1].string ?? "", from: $0[2].string ?? "",
                to: $0[3].string ?? "", reason: $0[4].string ?? ""
            )
        }
        return DashboardSnapshot(
            takenAt: now, pacificDate: day.key, resetsAt: day.nextReset, buckets: buckets, circuits: circuits,
            throttles: throttles, cache: cache, cacheEntries: totals?[0].int ?? 0, cacheBodyBytes: totals?[1].int ?? 0,
            recentLedgerEvents: ledger, recentCircuitTransitions: transitions
        )
    }

    private static func date(ms: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(ms) / 1000)
    }
}
