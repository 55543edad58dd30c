import Foundation
import PostgresNIO
import TollgateCore

/// The quota ledger over PostgreSQL. Each operation is one transaction that reads the bucket's rows
/// under its row lock, asks ``QuotaStateMachine`` (the rules SQLiteStore applies too) and writes
/// what it says (see ``decideInWindow(_:bucket:endpoint:cost:configuredLimit:window:pacing:warningPercents:)``).
///
/// The database's clock decides the window charged, the exhausted mark's end and every event's
/// time: the `at` of ``QuotaReservationRequest`` and of the other operations is not used for them,
/// so a fleet whose clocks disagree charges one window. ``quotaBucketStatus(bucket:configuredLimit:at:)``
/// describes the database's current window for the same reason.
extension PostgresStore: QuotaStorage {
    /// Checks and charges the request's buckets, all or nothing, each in its window at the
    /// database's now.
    /// - Parameter request: The bucket, endpoint, cost, configured limit, window and pacing; its
    ///   `at` is not used (the database's clock decides the window).
    /// - Returns: The charge, or the refusal (nothing written).
    /// - Throws: `StoreRefusal.invalidArgument` for a cost or a limit out of range or an invalid
    ///   endpoint name; ``PostgresStoreError`` when the server fails.
    public func reserveQuota(_ request: QuotaReservationRequest) async throws -> QuotaReservationOutcome {
        do {
            return try await inTransaction("reserving quota in \(request.bucket)") { [self] connection in
                try await reserve(connection, request)
            }
        } catch let refused as RefusedReservation {
            return .refused(refused.refusal)
        }
    }

    /// Gives a charge's units back to the window it was charged in, once, whichever machine asks:
    /// its actual cost when it was settled.
    /// - Parameters:
    ///   - reservationID: The charge's id.
    ///   - at: Not used: the event is stamped with the database's clock.
    ///   - reason: Why, kept in the event's detail.
    /// - Returns: What was refunded, or `alreadyRefunded`.
    /// - Throws: `StoreRefusal.invalidArgument` when no charge has that id; ``PostgresStoreError``
    ///   when the server fails.
    public func refundQuota(reservationID: Int64, at: Date, reason: String?) async throws -> QuotaRefundOutcome {
        try await inTransaction("refunding reservation \(reservationID)") { [self] connection in
            try await refundCharge(connection, reservationID: reservationID, reason: reason)
        }
    }

    /// Closes a bucket until the end of its window (the database's next Pacific midnight for the
    /// Pacific day), with an `exhausted` event.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: Its configured limit, for a bucket not seen yet.
    ///   - endpoint: The endpoint whose answer said so, if any.
    ///   - at: Not used: the database's clock decides the window.
    /// - Returns: The mark and whether this call set it.
    /// - Throws: `StoreRefusal.invalidArgument` for a limit out of range; ``PostgresStoreError``
    ///   when the server fails.
    public func markQuotaExhausted(
        bucket: String, configuredLimit: Int, endpoint: String?, at: Date
    ) async throws -> QuotaExhaustion {
        try await inTransaction("marking \(bucket) exhausted") { [self] connection in
            try await markExhausted(connection, bucket: bucket, configuredLimit: configuredLimit, endpoint: endpoint)
        }
    }

    /// Every endpoint's usage on a Pacific day, ordered by bucket and endpoint.
    /// - Parameter day: The day.
    /// - Returns: The rows of `quota_usage` for that day.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaUsage(on day: PacificDay) async throws -> [QuotaUsage] {
        try await withConnection("reading the usage of \(day.key)") { [self] connection in
            try await connection.rows("""
                SELECT bucket, endpoint, units, calls FROM quota_usage WHERE pacific_date = \(day.key)
                ORDER BY bucket, endpoint
                """, logger: logger).map { row in
                let (bucket, endpoint, units, calls) = try row.decode((String, String, Int, Int).self)
                return QuotaUsage(day: day, bucket: bucket, endpoint: endpoint, units: units, calls: calls)
            }
        }
    }

    /// Every endpoint's calls on a Pacific day that carried a batch, and the IDs they carried.
    /// - Parameter day: The day.
    /// - Returns: One row per bucket and endpoint that carried batches, ordered by both.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaBatchUsage(on day: PacificDay) async throws -> [QuotaBatchUsage] {
        try await withConnection("reading the batches of \(day.key)") { [self] connection in
            let charges = try await connection.rows("""
                SELECT bucket, endpoint, detail, count(*)::bigint
                FROM quota_events WHERE pacific_date = \(day.key) AND kind = 'charge'
                AND detail LIKE \(QuotaRules.batchDetailPattern)
                GROUP BY bucket, endpoint, detail
                """, logger: logger).map { row in
                let (bucket, endpoint, detail, count) = try row.decode((String, String, String, Int).self)
                return (bucket: bucket, endpoint: endpoint, detail: detail, count: count)
            }
            return QuotaBatchUsage.tally(on: day, charges)
        }
    }

    /// A bucket's limit, usage and exhaustion in the window stored with it (the Pacific day for a
    /// bucket never charged), at the database's now.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: The configured limit, in force unless an operator set one.
    ///   - at: Not used: the database's clock decides the window.
    /// - Returns: The status; a bucket never charged shows the configured limit and no usage.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaBucketStatus(bucket: String, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus {
        try await withConnection("reading the status of \(bucket)") { [self] connection in
            try await bucketStatus(connection, bucket: bucket, configuredLimit: configuredLimit)
        }
    }

    /// A bucket's limit, usage and exhaustion in `window` at the database's now.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - configuredLimit: The configured limit, in force unless an operator set one.
    ///   - window: The bucket's window.
    ///   - at: Not used: the database's clock decides the window.
    /// - Returns: The status; a bucket never charged shows the configured limit and no usage.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaBucketStatus(
        bucket: String, configuredLimit: Int, window: QuotaWindow, at: Date
    ) async throws -> QuotaBucketStatus {
        try await withConnection("reading the status of \(bucket)") { [self] connection in
            try await bucketStatus(connection, bucket: bucket, configuredLimit: configuredLimit, window: window)
        }
    }

    /// Every bucket the database knows, each in the window stored with it, at the database's now.
    /// - Parameter at: Not used: the database's clock decides the windows.
    /// - Returns: One status per bucket, ordered by bucket (byte order, as SQLite orders them).
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaWindows(at: Date) async throws -> [QuotaBucketStatus] {
        try await inTransaction("reading the quota windows") { [self] connection in
            // One transaction: every status reads the same "now" and the same rows.
            var statuses: [QuotaBucketStatus] = []
            for row in try await connection.rows(
                #"SELECT bucket, daily_limit FROM quota_buckets ORDER BY bucket COLLATE "C""#, logger: logger
            ) {
                let (bucket, stored) = try row.decode((String, Int).self)
                statuses.append(try await bucketStatus(connection, bucket: bucket, configuredLimit: QuotaLimits.clamped(stored)))
            }
            return statuses
        }
    }

    /// Follows what the server announced about a bucket, in one transaction under the bucket's row
    /// lock: an `announced` event when it says fewer units are left than the ledger counts in the
    /// window (never the other way), and the window's end moved to an announced reset.
    /// - Parameter announcement: The bucket, what the server said; its `at` is not used (the
    ///   database's clock decides the window).
    /// - Returns: What the ledger did.
    /// - Throws: `StoreRefusal.invalidArgument` for a negative remaining count or an invalid limit;
    ///   ``PostgresStoreError`` when the server fails.
    public func recordQuotaAnnouncement(_ announcement: QuotaAnnouncement) async throws -> QuotaAnnouncementOutcome {
        try await inTransaction("recording what the server announced about \(announcement.bucket)") { [self] connection in
            try await announce(connection, announcement)
        }
    }

    /// Settles a charge at its actual cost with a `settle` event for the difference from the
    /// estimate, in the charge's window; the actual cost may take the window past its limit, and
    /// the bucket then refuses until the window has room again.
    /// - Parameters:
    ///   - reservationID: The reservation.
    ///   - bucket: The bucket whose charge of that reservation is settled.
    ///   - actualUnits: The actual cost, zero or more.
    ///   - at: Not used: the event is stamped with the database's clock.
    ///   - detail: Where the cost was read, kept in the event's detail.
    /// - Returns: What was settled, or ``QuotaCostSettlement/alreadySettled``.
    /// - Throws: `StoreRefusal.invalidArgument` when the reservation has no charge in that bucket or
    ///   the cost is out of range; ``PostgresStoreError`` when the server fails.
    public func settleQuotaCost(
        reservationID: Int64, bucket: String, actualUnits: Int, at: Date, detail: String?
    ) async throws -> QuotaCostSettlement {
        try await inTransaction("settling reservation \(reservationID) in \(bucket)") { [self] connection in
            try await settleCost(connection, reservationID: reservationID, bucket: bucket, actualUnits: actualUnits,
                                 detail: detail)
        }
    }

    /// Sets a bucket's daily limit as an operator, or hands it back to the configuration, with a
    /// `limit` event.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - limit: The operator's limit; nil to follow the configuration again.
    ///   - configuredLimit: The configured limit.
    ///   - at: Not used: the event is stamped with the database's clock.
    /// - Returns: The bucket's status afterwards.
    /// - Throws: `StoreRefusal.invalidArgument` for a limit out of range; ``PostgresStoreError``
    ///   when the server fails.
    public func setQuotaLimit(bucket: String, limit: Int?, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus {
        let newLimit = limit ?? configuredLimit
        try QuotaRules.validateNewLimit(newLimit)
        let source: QuotaBucketStatus.LimitSource = limit == nil ? .configuration : .admin
        return try await inTransaction("setting the limit of \(bucket)") { [self] connection in
            let previous = try await connection.firstRow("""
                SELECT daily_limit, limit_source FROM quota_buckets WHERE bucket = \(bucket) FOR UPDATE
                """, logger: logger).map { row in try row.decode((Int, String).self) }
            let from = previous.map { stored, sourceText in
                let wasAdmin = sourceText == QuotaBucketStatus.LimitSource.admin.rawValue
                return "\(wasAdmin ? QuotaLimits.clamped(stored) : configuredLimit) (\(sourceText))"
            } ?? "none"
            try await connection.run("""
                WITH changed AS (
                    INSERT INTO quota_buckets AS b (bucket, daily_limit, limit_source, updated_at_ms)
                    VALUES (\(bucket), \(newLimit), \(source.rawValue), tollgate_ms(now()))
                    ON CONFLICT (bucket) DO UPDATE SET daily_limit = excluded.daily_limit,
                        limit_source = excluded.limit_source, updated_at_ms = excluded.updated_at_ms
                )
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                VALUES (tollgate_ms(now()), tollgate_pacific_date(now()), \(bucket), '*', 'limit', 0,
                        \("daily limit \(from) → \(newLimit) (\(source.rawValue))"))
                """, logger: logger)
            return try await bucketStatus(connection, bucket: bucket, configuredLimit: configuredLimit)
        }
    }

    /// Gives back all the units a bucket used on a day, with one `reset` event per endpoint (and
    /// key). Resetting the database's current day also lifts the server's exhausted mark. A bucket
    /// counted over another window than the Pacific day has its current window reset when `day`
    /// is today, as SQLiteStore does.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket.
    ///   - at: Not used: the database's clock decides which day is today.
    /// - Returns: What was cleared.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func resetQuotaDay(_ day: PacificDay, bucket: String, at: Date) async throws -> QuotaDayReset {
        try await inTransaction("resetting \(bucket) on \(day.key)") { [self] connection in
            let (now, row) = try await bucketRowAndNow(connection, bucket: bucket, configuredLimit: 0)
            let nowMs = now.millisecondsSince1970
            let isToday = day == PacificDay(containing: now)
            let window = row?.storedWindow ?? .pacificDay
            let period = if isToday, !window.isPacificDay, let row { row.period(in: window, at: now) } else { QuotaPeriod(day) }
            // The keys' day rows first (the lock every charge and refund of them takes), then their usage.
            try await connection.run("""
                SELECT 1 FROM quota_bucket_days
                WHERE pacific_date >= \(period.firstKey) AND pacific_date <= \(period.key) AND bucket = \(bucket)
                FOR UPDATE
                """, logger: logger)
            var cleared: [String: Int] = [:]
            for usage in try await connection.rows("""
                WITH old AS (
                    SELECT pacific_date, endpoint, units FROM quota_usage
                    WHERE pacific_date >= \(period.firstKey) AND pacific_date <= \(period.key) AND bucket = \(bucket)
                      AND units <> 0
                ), events AS (
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                    SELECT \(nowMs), old.pacific_date, \(bucket), old.endpoint, 'reset', -old.units,
                           'day reset by an operator'
                    FROM old
                ), zeroed AS (
                    UPDATE quota_usage AS u SET units = 0 FROM old
                    WHERE u.pacific_date = old.pacific_date AND u.bucket = \(bucket) AND u.endpoint = old.endpoint
                )
                SELECT endpoint, units FROM old
                """, logger: logger) {
                let (endpoint, units) = try usage.decode((String, Int).self)
                cleared[endpoint] = QuotaLimits.saturatingSum(cleared[endpoint] ?? 0, units)
            }
            try await connection.run("""
                UPDATE quota_bucket_days SET units = 0, warned_percent = 0
                WHERE pacific_date >= \(period.firstKey) AND pacific_date <= \(period.key) AND bucket = \(bucket)
                """, logger: logger)
            let clearsMark = isToday && row?.isExhausted(in: period, nowMs: Int64(nowMs)) == true
            if row != nil {
                try await connection.run("""
                    UPDATE quota_buckets
                    SET exhausted_until_ms = CASE WHEN \(clearsMark) THEN NULL ELSE exhausted_until_ms END,
                        updated_at_ms = \(nowMs)
                    WHERE bucket = \(bucket)
                    """, logger: logger)
            }
            if cleared.isEmpty || clearsMark {
                // The operator's action is on record even when it changed no total.
                let detail = clearsMark
                    ? "day reset by an operator; exhausted mark lifted" : "day reset by an operator; nothing to clear"
                try await connection.run("""
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                    VALUES (\(nowMs), \(period.key), \(bucket), '*', 'reset', 0, \(detail))
                    """, logger: logger)
            }
            return QuotaDayReset(day: day, bucket: bucket, unitsCleared: cleared, clearedExhaustedMark: clearsMark)
        }
    }

    /// Compares every total with the sum of its events, and every bucket's day total with the sum
    /// of its endpoints' totals (reported with the endpoint `(bucket total)`).
    /// - Returns: The keys whose total differs; empty when the ledger is sound.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaLedgerDiscrepancies() async throws -> [QuotaLedgerDiscrepancy] {
        try await withConnection("auditing the quota ledger") { [self] connection in
            try await connection.rows("""
                WITH sums AS (
                    SELECT pacific_date, bucket, endpoint, SUM(units)::bigint AS units
                    FROM quota_events GROUP BY pacific_date, bucket, endpoint
                ), bucket_sums AS (
                    SELECT pacific_date, bucket, SUM(units)::bigint AS units FROM quota_usage GROUP BY pacific_date, bucket
                )
                SELECT sums.pacific_date, sums.bucket, sums.endpoint, sums.units, COALESCE(usage.units, 0)
                FROM sums LEFT JOIN quota_usage AS usage
                  ON usage.pacific_date = sums.pacific_date AND usage.bucket = sums.bucket
                 AND usage.endpoint = sums.endpoint
                WHERE sums.units <> COALESCE(usage.units, 0)
                UNION ALL
                SELECT usage.pacific_date, usage.bucket, usage.endpoint, 0, usage.units
                FROM quota_usage AS usage
                WHERE usage.units <> 0 AND NOT EXISTS (
                    SELECT 1 FROM quota_events AS event
                    WHERE event.pacific_date = usage.pacific_date AND event.bucket = usage.bucket
                      AND event.endpoint = usage.endpoint)
                UNION ALL
                SELECT COALESCE(d.pacific_date, s.pacific_date), COALESCE(d.bucket, s.bucket), '(bucket total)',
                       COALESCE(s.units, 0), COALESCE(d.units, 0)
                FROM quota_bucket_days AS d
                FULL JOIN bucket_sums AS s ON s.pacific_date = d.pacific_date AND s.bucket = d.bucket
                WHERE COALESCE(s.units, 0) <> COALESCE(d.units, 0)
                ORDER BY 1, 2, 3
                """, logger: logger).map { row in
                let (date, bucket, endpoint, eventUnits, usageUnits) = try row.decode((String, String, String, Int, Int).self)
                return QuotaLedgerDiscrepancy(
                    pacificDate: date, bucket: bucket, endpoint: endpoint, eventUnits: eventUnits, usageUnits: usageUnits
                )
            }
        }
    }

    /// Sets a bucket's count for a day to the provider's, with one event on the endpoint `*` for
    /// the difference.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - used: The units the provider says were used.
    ///   - configuredLimit: The bucket's configured limit, for a bucket not seen yet.
    ///   - day: The Pacific day.
    ///   - at: Not used: the event is stamped with the database's clock.
    /// - Returns: What changed.
    /// - Throws: `StoreRefusal.invalidArgument` for a count out of range; ``PostgresStoreError``
    ///   when the server fails.
    public func reconcileQuota(
        bucket: String, used: Int, configuredLimit: Int, day: PacificDay, at: Date
    ) async throws -> QuotaReconciliation {
        try QuotaRules.validateReconciledCount(used)
        return try await inTransaction("reconciling \(bucket) on \(day.key)") { [self] connection in
            // The bucket keeps its window: the count is the provider's for a Pacific day.
            _ = try await lockedBucket(connection, bucket: bucket, configuredLimit: configuredLimit, window: nil)
            try await connection.run("""
                INSERT INTO quota_bucket_days (pacific_date, bucket, units, ceiling) VALUES (\(day.key), \(bucket), 0, 0)
                ON CONFLICT (pacific_date, bucket) DO NOTHING
                """, logger: logger)
            let before = try await connection.firstRow("""
                SELECT units FROM quota_bucket_days WHERE pacific_date = \(day.key) AND bucket = \(bucket) FOR UPDATE
                """, logger: logger)?.decode(Int.self) ?? 0
            let adjustment = used - before
            try await connection.run("""
                WITH event AS (
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                    VALUES (tollgate_ms(now()), \(day.key), \(bucket), '*', \(adjustment >= 0 ? "charge" : "reset"),
                            \(adjustment),
                            \("reconciled with the provider's count: \(used) units used (the ledger had \(before))"))
                ), usage AS (
                    INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
                    SELECT \(day.key), \(bucket), '*', \(adjustment), 0 WHERE \(adjustment) <> 0
                    ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = u.units + excluded.units
                )
                UPDATE quota_bucket_days SET units = \(used), ceiling = GREATEST(ceiling, \(used))
                WHERE pacific_date = \(day.key) AND bucket = \(bucket)
                """, logger: logger)
            return QuotaReconciliation(day: day, bucket: bucket, countedBefore: before, used: used)
        }
    }

    /// Net units charged to each bucket between two instants, by the events' database times.
    /// - Parameters:
    ///   - since: The window's start.
    ///   - until: The window's end.
    /// - Returns: One row per bucket charged in the window.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaBurn(since: Date, until: Date) async throws -> [QuotaBurn] {
        let windowSeconds = max(1, Int(until.timeIntervalSince(since).rounded()))
        let sinceMs = Int(since.millisecondsSince1970)
        let untilMs = Int(until.millisecondsSince1970)
        return try await withConnection("reading the burn rate") { [self] connection in
            try await connection.rows("""
                SELECT bucket, GREATEST(COALESCE(SUM(units), 0), 0)::bigint FROM quota_events
                WHERE at_ms >= \(sinceMs) AND at_ms <= \(untilMs) AND kind IN ('charge', 'refund', 'settle') AND endpoint <> '*'
                GROUP BY bucket ORDER BY bucket
                """, logger: logger).map { row in
                let (bucket, units) = try row.decode((String, Int).self)
                return QuotaBurn(bucket: bucket, units: units, windowSeconds: windowSeconds)
            }
        }
    }

    /// Whether any day's usage names `endpoint`.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: True when it was ever charged.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func quotaEndpointCharged(_ endpoint: String) async throws -> Bool {
        try await withConnection("reading whether \(endpoint) was charged") { [self] connection in
            try await connection.firstRow(
                "SELECT EXISTS (SELECT 1 FROM quota_usage WHERE endpoint = \(endpoint))", logger: logger
            )?.decode(Bool.self) ?? false
        }
    }
}
