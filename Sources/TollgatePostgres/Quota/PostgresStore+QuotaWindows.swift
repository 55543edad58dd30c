import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// Windows other than the Pacific day, announced resets and pacing.
///
/// SQL computes the Pacific day (`tollgate_pacific_date(now())`); any other window, and a Pacific
/// day moved by a reset the server announced, is computed here with ``QuotaPeriod``, the same code
/// SQLiteStore runs, from one "now": the database's (the time the transaction began), read in the
/// statement that locks the bucket's row. The row lock orders every windowed operation on the
/// bucket across machines, so the usage read under it is current and the charge decided on it
/// stands; the conditional upsert of the key's `quota_bucket_days` row stays the backstop against
/// a one-statement admission of the same bucket.
extension PostgresStore {
    /// A `quota_buckets` row with the limit rule applied, as the window operations read it.
    struct WindowBucketRow: Sendable {
        /// The limit in force.
        var limit: Int
        /// The limit written in the row.
        var storedLimit: Int
        var limitSource: QuotaBucketStatus.LimitSource
        var exhaustedUntilMs: Int64?
        /// The bucket's window as stored (`window_spec`).
        var windowSpecification: String
        /// The window last noted on the row, for the `quota_windows` view.
        var windowKey: String?
        var windowFirstKey: String?
        var windowEndMs: Int64?
        /// The last reset the server announced, and the key of the window it was announced in.
        var announcedKey: String?
        var announcedResetMs: Int64?
        /// When a paced bucket last charged, and in which window.
        var pacedAtMs: Int64?
        var pacedKey: String?

        /// The window stored with the bucket; the Pacific day for a text no window reads as.
        var storedWindow: QuotaWindow { QuotaWindow(specification: windowSpecification) ?? .pacificDay }

        /// The window in force at `now` in `window`, the server's announced reset applied.
        func period(in window: QuotaWindow, at now: Date) -> QuotaPeriod {
            QuotaRules.period(in: window, at: now, announcedKey: announcedKey, announcedResetMs: announcedResetMs)
        }

        /// Whether the server's mark closes the bucket in `period`.
        func isExhausted(in period: QuotaPeriod, nowMs: Int64) -> Bool {
            QuotaRules.isExhausted(untilMs: exhaustedUntilMs, in: period, nowMs: nowMs)
        }
    }

    /// The bucket's row, locked until the transaction ends, and the window operations' "now", in
    /// one statement. The row is nil when the bucket has none.
    func bucketRowAndNow(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int
    ) async throws -> (now: Date, row: WindowBucketRow?) {
        // A LATERAL subquery may lock (a LEFT JOIN may not lock its nullable side), and the clock's
        // row comes back even when the bucket has none.
        let rows = try await connection.rows("""
            SELECT tollgate_ms(now()) AS now_ms, b.*
            FROM (SELECT 1) AS one
            LEFT JOIN LATERAL (SELECT * FROM quota_buckets WHERE bucket = \(bucket) FOR UPDATE) AS b ON true
            """, logger: logger)
        guard let found = rows.first else {
            throw StoreRefusal.invalidArgument("the row of \(bucket) returned nothing")
        }
        let row = found.makeRandomAccess()
        let databaseNow = Self.date(milliseconds: try row["now_ms"].decode(Int.self))
        let now = windowClock?.now() ?? databaseNow
        guard let stored = try row["daily_limit"].decode(Int?.self) else { return (now, nil) }
        let source = QuotaBucketStatus.LimitSource(rawValue: try row["limit_source"].decode(String.self)) ?? .configuration
        let storedLimit = QuotaLimits.clamped(stored)
        return (now, WindowBucketRow(
            limit: source == .admin ? storedLimit : configuredLimit,
            storedLimit: storedLimit,
            limitSource: source,
            exhaustedUntilMs: try row["exhausted_until_ms"].decode(Int?.self).map(Int64.init),
            windowSpecification: try row["window_spec"].decode(String.self),
            windowKey: try row["window_key"].decode(String?.self),
            windowFirstKey: try row["window_first_key"].decode(String?.self),
            windowEndMs: try row["window_end_ms"].decode(Int?.self).map(Int64.init),
            announcedKey: try row["announced_key"].decode(String?.self),
            announcedResetMs: try row["announced_reset_ms"].decode(Int?.self).map(Int64.init),
            pacedAtMs: try row["paced_at_ms"].decode(Int?.self).map(Int64.init),
            pacedKey: try row["paced_key"].decode(String?.self)
        ))
    }

    /// Locks the bucket's row for the rest of the transaction, creating it from the configuration
    /// or bringing a configuration-owned limit and the window up to date, each change recorded as a
    /// `limit` event, as SQLiteStore does.
    /// - Parameter window: The configured window; nil keeps the stored one (the Pacific day for a new row).
    /// - Returns: The window operations' "now" and the row, up to date.
    func lockedBucket(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, window: QuotaWindow?
    ) async throws -> (now: Date, row: WindowBucketRow) {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        var (now, found) = try await bucketRowAndNow(connection, bucket: bucket, configuredLimit: configuredLimit)
        let nowMs = Self.milliseconds(now)
        if found == nil {
            let window = window ?? .pacificDay
            let inserted = try await connection.rows("""
                WITH inserted AS (
                    INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms, window_spec)
                    VALUES (\(bucket), \(configuredLimit), 'configuration', \(nowMs), \(window.specification))
                    ON CONFLICT (bucket) DO NOTHING
                    RETURNING bucket
                )
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                SELECT \(nowMs), \(window.naturalPeriod(containing: now).key), inserted.bucket, '*', 'limit', 0,
                       \(QuotaRules.newBucketDetail(limit: configuredLimit, window: window))
                FROM inserted
                RETURNING id
                """, logger: logger)
            if !inserted.isEmpty {
                return (now, WindowBucketRow(
                    limit: configuredLimit, storedLimit: configuredLimit, limitSource: .configuration,
                    windowSpecification: window.specification
                ))
            }
            // Another machine created it meanwhile (the insert waited for its commit): lock theirs.
            (now, found) = try await bucketRowAndNow(connection, bucket: bucket, configuredLimit: configuredLimit)
        }
        guard var row = found else {
            throw StoreRefusal.invalidArgument("the row of \(bucket) could not be created")
        }
        let key = (window ?? row.storedWindow).naturalPeriod(containing: now).key
        if row.limitSource == .configuration, row.storedLimit != configuredLimit {
            try await connection.run("""
                WITH changed AS (
                    UPDATE quota_buckets SET daily_limit = \(configuredLimit), updated_at_ms = \(nowMs)
                    WHERE bucket = \(bucket)
                )
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                VALUES (\(nowMs), \(key), \(bucket), '*', 'limit', 0,
                        \("daily limit \(row.storedLimit) → \(configuredLimit) (configuration)"))
                """, logger: logger)
            row.storedLimit = configuredLimit
        }
        if let window, window.specification != row.windowSpecification {
            // A new window: what the old one counted stays under its keys, and the announced reset
            // and pacing of the old window no longer apply.
            try await connection.run("""
                WITH changed AS (
                    UPDATE quota_buckets SET window_spec = \(window.specification), announced_key = NULL,
                        announced_reset_ms = NULL, paced_at_ms = NULL, paced_key = NULL, updated_at_ms = \(nowMs)
                    WHERE bucket = \(bucket)
                )
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                VALUES (\(nowMs), \(key), \(bucket), '*', 'limit', 0,
                        \(QuotaRules.windowChangeDetail(from: row.windowSpecification, to: window)))
                """, logger: logger)
            row.windowSpecification = window.specification
            row.announcedKey = nil
            row.announcedResetMs = nil
            row.pacedAtMs = nil
            row.pacedKey = nil
        }
        return (now, row)
    }

    /// Keeps the window the bucket charges in on its row, for the `quota_windows` view: written when
    /// the window changes, not on every charge.
    func noteWindow(_ connection: PostgresConnection, bucket: String, row: WindowBucketRow, period: QuotaPeriod) async throws {
        let endMs = Self.milliseconds(period.end)
        guard row.windowKey != period.key || row.windowFirstKey != period.firstKey || row.windowEndMs != Int64(endMs)
        else { return }
        try await connection.run("""
            UPDATE quota_buckets SET window_key = \(period.key), window_first_key = \(period.firstKey),
                window_end_ms = \(endMs)
            WHERE bucket = \(bucket)
            """, logger: logger)
    }

    /// The units a bucket used in a window, all endpoints together, from its `quota_bucket_days`
    /// rows (one per key, each the sum of the key's usage rows).
    ///
    /// A rolling window's keys are UTC instants of one fixed format, which sort as their times do
    /// in any collation (as bytes, as SQLite compares them), so the range can use the primary key's
    /// index.
    func windowUnits(_ connection: PostgresConnection, bucket: String, in period: QuotaPeriod) async throws -> Int {
        if !period.spansSeveralKeys {
            return try await connection.firstRow("""
                SELECT COALESCE((SELECT units FROM quota_bucket_days WHERE pacific_date = \(period.key) AND bucket = \(bucket)), 0)
                """, logger: logger)?.decode(Int.self) ?? 0
        }
        return try await connection.firstRow("""
            SELECT COALESCE(SUM(units), 0)::bigint FROM quota_bucket_days
            WHERE pacific_date >= \(period.firstKey) AND pacific_date <= \(period.key) AND bucket = \(bucket)
            """, logger: logger)?.decode(Int.self) ?? 0
    }

    /// Checks and charges one bucket in its window, under the bucket's row lock: the window and the
    /// pacing decided here, the charge one statement (the key's day row, the event, the endpoint's
    /// usage), as the Pacific path's.
    func chargeInWindow(
        _ connection: PostgresConnection, bucket: String, endpoint: String, cost: Int, configuredLimit: Int,
        window: QuotaWindow, pacing: QuotaPacing?, reservationID: Int64?, detail: String?
    ) async throws -> BucketChargeResult {
        let (now, row) = try await lockedBucket(connection, bucket: bucket, configuredLimit: configuredLimit, window: window)
        let nowMs = Self.milliseconds(now)
        let day = PacificDay(containing: now)
        let period = row.period(in: window, at: now)
        try await noteWindow(connection, bucket: bucket, row: row, period: period)
        let used = try await windowUnits(connection, bucket: bucket, in: period)
        func refusal(_ reason: QuotaRefusal.Reason, used: Int, retryAt: Date? = nil) -> BucketChargeResult {
            .refused(QuotaRefusal(
                reason: reason, bucket: bucket, endpoint: endpoint, cost: cost, day: day, bucketUnitsUsed: used,
                limit: row.limit, period: period, retryAt: retryAt
            ))
        }
        if row.isExhausted(in: period, nowMs: Int64(nowMs)) { return refusal(.exhaustedByServer, used: used) }
        let (usedAfter, overflow) = used.addingReportingOverflow(cost)
        guard !overflow, usedAfter <= row.limit else { return refusal(.overBudget, used: used) }
        var paced = false
        if let pacing {
            let lastPaced = row.pacedKey == period.key ? row.pacedAtMs.map { Self.date(milliseconds: Int($0)) } : nil
            switch pacing.decide(cost: cost, used: used, limit: row.limit, period: period, now: now,
                                 lastPacedCharge: lastPaced) {
            case .wait(let until): return refusal(.paced, used: used, retryAt: until)
            case .allowed(let isPaced): paced = isPaced
            }
        }
        let linkedReservation = reservationID.map { Int($0) }
        guard let charged = try await connection.firstRow("""
            WITH charged AS (
                INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
                VALUES (\(period.key), \(bucket), \(cost), \(row.limit))
                ON CONFLICT (pacific_date, bucket) DO UPDATE
                    SET units = d.units + excluded.units, ceiling = excluded.ceiling
                    WHERE d.units + excluded.units <= excluded.ceiling
                RETURNING d.units, d.warned_percent
            ), event AS (
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                SELECT \(nowMs), \(period.key), \(bucket), \(endpoint), 'charge', \(cost), \(linkedReservation), \(detail)
                FROM charged
                RETURNING id
            ), usage AS (
                INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
                SELECT \(period.key), \(bucket), \(endpoint), \(cost), 1 FROM charged
                ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE
                    SET units = u.units + excluded.units, calls = u.calls + 1
                RETURNING u.units
            )
            SELECT (SELECT units FROM charged) AS key_units, (SELECT warned_percent FROM charged) AS warned_percent,
                   (SELECT id FROM event) AS id, (SELECT count(*) FROM usage) AS usage_rows
            """, logger: logger)?.makeRandomAccess() else {
            throw StoreRefusal.invalidArgument("the quota charge of \(endpoint) in \(bucket) returned no row")
        }
        guard let keyUnits = try charged["key_units"].decode(Int?.self), let id = try charged["id"].decode(Int?.self) else {
            // A one-statement admission of this bucket charged the key meanwhile (it does not take
            // the bucket's row lock): its day row's ceiling refused what the read above allowed.
            return refusal(.overBudget, used: try await windowUnits(connection, bucket: bucket, in: period))
        }
        if paced {
            try await connection.run("""
                UPDATE quota_buckets SET paced_at_ms = \(nowMs), paced_key = \(period.key) WHERE bucket = \(bucket)
                """, logger: logger)
        }
        return .charged(
            reservationID: Int64(id), day: day, period: period,
            // A single key's row is the window's total, whoever charged it; a rolling window sums several.
            usedAfter: period.spansSeveralKeys ? usedAfter : keyUnits, limit: row.limit,
            warnedPercent: try charged["warned_percent"].decode(Int?.self) ?? 0
        )
    }

    /// A bucket's status in `window` (its stored one when nil) at the window operations' "now":
    /// one statement for a bucket counted by the Pacific day, two otherwise.
    func bucketStatus(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, window: QuotaWindow? = nil
    ) async throws -> QuotaBucketStatus {
        guard let found = try await connection.firstRow("""
            SELECT tollgate_ms(now()) AS now_ms, tollgate_pacific_date(now()) AS today, b.*,
                   COALESCE((SELECT units FROM quota_bucket_days
                             WHERE pacific_date = tollgate_pacific_date(now()) AND bucket = \(bucket)), 0) AS today_units
            FROM (SELECT 1) AS one LEFT JOIN quota_buckets AS b ON b.bucket = \(bucket)
            """, logger: logger)?.makeRandomAccess() else {
            throw StoreRefusal.invalidArgument("the status of \(bucket) returned no row")
        }
        let databaseNow = Self.date(milliseconds: try found["now_ms"].decode(Int.self))
        let now = windowClock?.now() ?? databaseNow
        var row: WindowBucketRow?
        if let stored = try found["daily_limit"].decode(Int?.self) {
            let source = QuotaBucketStatus.LimitSource(rawValue: try found["limit_source"].decode(String.self))
                ?? .configuration
            row = WindowBucketRow(
                limit: source == .admin ? QuotaLimits.clamped(stored) : configuredLimit,
                storedLimit: QuotaLimits.clamped(stored), limitSource: source,
                exhaustedUntilMs: try found["exhausted_until_ms"].decode(Int?.self).map(Int64.init),
                windowSpecification: try found["window_spec"].decode(String.self),
                announcedKey: try found["announced_key"].decode(String?.self),
                announcedResetMs: try found["announced_reset_ms"].decode(Int?.self).map(Int64.init)
            )
        }
        let window = window ?? row?.storedWindow ?? .pacificDay
        let period = row?.period(in: window, at: now) ?? window.naturalPeriod(containing: now)
        // Today's Pacific units came with the row: a second read only for another window.
        let today = try found["today"].decode(String.self)
        let used = if window.isPacificDay, !period.spansSeveralKeys, period.key == today {
            try found["today_units"].decode(Int.self)
        } else {
            try await windowUnits(connection, bucket: bucket, in: period)
        }
        return QuotaBucketStatus(
            bucket: bucket, day: PacificDay(containing: now), limit: row?.limit ?? configuredLimit,
            limitSource: row?.limitSource ?? .configuration, unitsUsed: used,
            isExhausted: row?.isExhausted(in: period, nowMs: Int64(Self.milliseconds(now))) ?? false,
            window: window, period: period
        )
    }
}
