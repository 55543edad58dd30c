import Foundation
import PostgresNIO
import TollgateCore

/// The dashboard's snapshot over PostgreSQL, read in one REPEATABLE READ transaction so every part
/// describes the same instant of the fleet's state.
extension PostgresStore: DashboardSnapshotStorage {
    /// Reads a `DashboardSnapshot` as of the database's clock.
    /// - Parameters:
    ///   - now: Not used: the database's clock decides today's Pacific date, open circuits and
    ///     throttle windows, as it decides them for every machine.
    ///   - recentEvents: How many ledger events and circuit transitions to include.
    /// - Returns: The snapshot.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func dashboardSnapshot(at now: Date, recentEvents: Int = 8) async throws -> DashboardSnapshot {
        let recent = max(recentEvents, 0)
        return try await withConnection("reading the dashboard snapshot") { [self] connection in
            try await connection.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                let snapshot = try await readSnapshot(connection, recentEvents: recent)
                try await connection.run("COMMIT", logger: logger)
                return snapshot
            } catch {
                _ = try? await connection.run("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    private func readSnapshot(_ connection: PostgresConnection, recentEvents: Int) async throws -> DashboardSnapshot {
        guard let clock = try await connection.firstRow("""
            SELECT tollgate_pacific_date(now()), tollgate_ms(now()), tollgate_next_reset_ms(now())
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the database's clock returned no row")
        }
        let (dayKey, nowMs, resetMs) = try clock.decode((String, Int, Int).self)

        var usage: [String: [DashboardSnapshot.EndpointUsage]] = [:]
        for row in try await connection.rows("""
            SELECT bucket, endpoint, units, calls FROM quota_usage
            WHERE pacific_date = \(dayKey) ORDER BY bucket, units DESC, endpoint
            """, logger: logger) {
            let (bucket, endpoint, units, calls) = try row.decode((String, String, Int, Int).self)
            usage[bucket, default: []].append(DashboardSnapshot.EndpointUsage(endpoint: endpoint, units: units, calls: calls))
        }
        var buckets: [DashboardSnapshot.Bucket] = []
        let now = Self.date(milliseconds: nowMs)
        for row in try await connection.rows("""
            SELECT bucket, daily_limit, exhausted_until_ms, window_spec, announced_key, announced_reset_ms
            FROM quota_buckets ORDER BY bucket
            """, logger: logger) {
            let (name, limit, exhaustedUntilMs, specification, announcedKey, announcedResetMs) = try row.decode(
                (String, Int, Int?, String, String?, Int?).self
            )
            let (window, period) = DashboardSnapshot.Bucket.shownWindow(
                windowSpecification: specification, announcedKey: announcedKey,
                announcedResetMs: announcedResetMs.map(Int64.init), now: now
            )
            // Today's rows serve a daily bucket; another window's are summed over its keys, compared
            // byte by byte as SQLite compares them.
            var endpoints = usage[name] ?? []
            if period.key != dayKey || period.spansSeveralKeys {
                endpoints = []
                for usageRow in try await connection.rows("""
                    SELECT endpoint, SUM(units)::bigint, SUM(calls)::bigint FROM quota_usage
                    WHERE bucket = \(name)
                      AND pacific_date >= \(period.firstKey) COLLATE "C" AND pacific_date <= \(period.key) COLLATE "C"
                    GROUP BY endpoint ORDER BY 2 DESC, endpoint
                    """, logger: logger) {
                    let (endpoint, units, calls) = try usageRow.decode((String, Int, Int).self)
                    endpoints.append(DashboardSnapshot.EndpointUsage(endpoint: endpoint, units: units, calls: calls))
                }
            }
            buckets.append(DashboardSnapshot.Bucket(
                bucket: name, limit: limit, exhaustedUntilMs: exhaustedUntilMs.map(Int64.init), window: window,
                period: period, nowMs: Int64(nowMs), endpoints: endpoints
            ))
        }
        let circuits = try await connection.rows("""
            SELECT endpoint, state, consecutive_failures, failure_threshold, open_until_ms, open_duration_ms, trips
            FROM circuits ORDER BY endpoint
            """, logger: logger).map { row in
            let (endpoint, stored, failures, threshold, openUntil, openDuration, trips) = try row.decode(
                (String, String, Int, Int, Int?, Int?, Int).self
            )
            var state = stored
            var retryIn = 0
            if state == "open", let openUntil {
                if openUntil <= nowMs {
                    state = "half_open"
                } else {
                    let remaining = openUntil - nowMs
                    retryIn = ((openDuration.map { min(remaining, $0) } ?? remaining) + 999) / 1000
                }
            }
            return DashboardSnapshot.Circuit(
                endpoint: endpoint, state: state, consecutiveFailures: failures, failureThreshold: threshold,
                retryInSeconds: retryIn, trips: trips
            )
        }
        let throttles = try await connection.rows("""
            SELECT limits.endpoint, limits.request_limit, limits.window_ms,
                   cardinality(tollgate_window(limits.admitted_at_ms, \(nowMs) - limits.window_ms))::bigint
            FROM throttle_limits AS limits ORDER BY limits.endpoint
            """, logger: logger).map { row in
            let (endpoint, limit, windowMs, count) = try row.decode((String, Int, Int, Int).self)
            return DashboardSnapshot.Throttle(
                endpoint: endpoint, limit: limit, windowSeconds: Double(windowMs) / 1000, count: count,
                remaining: max(0, limit - count)
            )
        }
        let cache = try await connection.rows("""
            SELECT endpoint, hits, revalidations, misses, stale, bytes_saved FROM cache_stats_daily
            WHERE pacific_date = \(dayKey) ORDER BY endpoint
            """, logger: logger).map { row in
            let (endpoint, hits, revalidations, misses, stale, bytesSaved) = try row.decode(
                (String, Int, Int, Int, Int, Int).self
            )
            let total = hits + revalidations + misses
            return DashboardSnapshot.CacheDay(
                endpoint: endpoint, hits: hits, revalidations: revalidations, misses: misses, stale: stale,
                bytesSaved: bytesSaved, hitRate: total == 0 ? nil : Double(hits + revalidations) / Double(total)
            )
        }
        let totals = try await cacheTotals(connection)
        let ledger = try await connection.rows("""
            SELECT at_ms, bucket, endpoint, kind, units FROM quota_events ORDER BY id DESC LIMIT \(recentEvents)
            """, logger: logger).map { row in
            let (atMs, bucket, endpoint, kind, units) = try row.decode((Int, String, String, String, Int).self)
            return DashboardSnapshot.LedgerEvent(
                at: Self.date(milliseconds: atMs), bucket: bucket, endpoint: endpoint, kind: kind, units: units
            )
        }
        let transitions = try await connection.rows("""
            SELECT at_ms, endpoint, from_state, to_state, reason FROM circuit_transitions
            ORDER BY id DESC LIMIT \(recentEvents)
            """, logger: logger).map { row in
            let (atMs, endpoint, from, to, reason) = try row.decode((Int, String, String, String, String).self)
            return DashboardSnapshot.CircuitTransition(
                at: Self.date(milliseconds: atMs), endpoint: endpoint, from: from, to: to, reason: reason
            )
        }
        return DashboardSnapshot(
            takenAt: Self.date(milliseconds: nowMs), pacificDate: dayKey, resetsAt: Self.date(milliseconds: resetMs),
            buckets: buckets, circuits: circuits, throttles: throttles, cache: cache, cacheEntries: totals.entries,
            cacheBodyBytes: Int(totals.bodyBytes), recentLedgerEvents: ledger, recentCircuitTransitions: transitions
        )
    }
}
