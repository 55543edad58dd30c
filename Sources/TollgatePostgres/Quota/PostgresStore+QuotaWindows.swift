import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// The rows the quota machine decides from: the bucket's, under its lock, and its window's usage.
///
/// Every window, the Pacific day included, is computed here with ``QuotaPeriod`` and decided by
/// ``QuotaStateMachine``, the same code SQLiteStore runs, from one "now": the database's (the time the transaction began), read in the
/// statement that locks the bucket's row. The row lock orders every windowed operation on the
/// bucket across machines, so the usage read under it is current and the charge decided on it
/// stands; the conditional upsert of the key's `quota_bucket_days` row stays the backstop against
/// a one-statement admission of the same bucket.
extension PostgresStore {
    /// The bucket's row, locked until the transaction ends, and the window operations' "now", in
    /// one statement. The row is nil when the bucket has none.
    func bucketRowAndNow(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int
    ) async throws -> (now: Date, row: QuotaBucketRow?) {
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
        let databaseNow = Date(millisecondsSince1970: try row["now_ms"].decode(Int64.self))
        let now = windowClock?.now() ?? databaseNow
        guard let stored = try row["daily_limit"].decode(Int?.self) else { return (now, nil) }
        let source = QuotaBucketStatus.LimitSource(rawValue: try row["limit_source"].decode(String.self)) ?? .configuration
        return (now, QuotaBucketRow(
            storedLimit: QuotaLimits.clamped(stored),
            limitSource: source,
            configuredLimit: configuredLimit,
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
    /// or bringing a configuration-owned limit and the window up to date, as
    /// ``QuotaStateMachine/synchronize(_:configuredLimit:window:now:)`` says.
    /// - Parameter window: The configured window; nil keeps the stored one (the Pacific day for a new row).
    /// - Returns: The window operations' "now" and the row, up to date.
    func lockedBucket(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, window: QuotaWindow?
    ) async throws -> (now: Date, row: QuotaBucketRow) {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        var (now, found) = try await bucketRowAndNow(connection, bucket: bucket, configuredLimit: configuredLimit)
        var (row, writes) = QuotaStateMachine.synchronize(found, configuredLimit: configuredLimit, window: window, now: now)
        let created = found == nil
            ? try await applyCreation(connection, writes, bucket: bucket, nowMs: now.millisecondsSince1970) : false
        if found == nil, !created {
            // Another machine created it meanwhile (the insert waited for its commit): lock theirs.
            (now, found) = try await bucketRowAndNow(connection, bucket: bucket, configuredLimit: configuredLimit)
            guard let theirs = found else {
                throw StoreRefusal.invalidArgument("the row of \(bucket) could not be created")
            }
            (row, writes) = QuotaStateMachine.synchronize(theirs, configuredLimit: configuredLimit, window: window,
                                                          now: now)
        }
        if found != nil {
            try await apply(connection, writes, bucket: bucket, nowMs: now.millisecondsSince1970, limit: row.limit)
        }
        return (now, row)
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

    /// The units a bucket used in a window and the highest warning level reported in it, the key's
    /// day row locked when the window has one key (the lock the one-statement admission takes), so
    /// the decision made on them stands.
    func lockedWindowUsage(
        _ connection: PostgresConnection, bucket: String, in period: QuotaPeriod
    ) async throws -> (used: Int, warned: Int) {
        if !period.spansSeveralKeys {
            return try await connection.firstRow("""
                SELECT units, warned_percent FROM quota_bucket_days
                WHERE pacific_date = \(period.key) AND bucket = \(bucket) FOR UPDATE
                """, logger: logger)?.decode((Int, Int).self) ?? (0, 0)
        }
        return try await connection.firstRow("""
            SELECT COALESCE(SUM(units), 0)::bigint,
                   COALESCE(MAX(warned_percent) FILTER (WHERE pacific_date = \(period.key)), 0)::integer
            FROM quota_bucket_days
            WHERE pacific_date >= \(period.firstKey) AND pacific_date <= \(period.key) AND bucket = \(bucket)
            """, logger: logger)?.decode((Int, Int).self) ?? (0, 0)
    }

    /// Decides one bucket of a reservation under its row lock: reads the row and the window's usage,
    /// asks ``QuotaStateMachine/decide(_:)`` and writes its bookkeeping; the charges are left to
    /// the caller, made once every bucket of the call admits.
    func decideInWindow(
        _ connection: PostgresConnection, bucket: String, endpoint: String, cost: Int, configuredLimit: Int,
        window: QuotaWindow, pacing: QuotaPacing?, warningPercents: [Int]
    ) async throws -> (now: Date, decision: QuotaDecision) {
        let (now, row) = try await lockedBucket(connection, bucket: bucket, configuredLimit: configuredLimit, window: window)
        let period = row.period(in: window, at: now)
        let (used, warned) = try await lockedWindowUsage(connection, bucket: bucket, in: period)
        let decision = QuotaStateMachine.decide(QuotaStateMachine.Admission(
            endpoint: endpoint, cost: cost, row: row, period: period, used: used, now: now, pacing: pacing,
            warningPercents: warningPercents, alreadyWarned: warned
        ))
        try await apply(connection, decision.bookkeeping, bucket: bucket, nowMs: now.millisecondsSince1970,
                        limit: row.limit)
        return (now, decision)
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
        let databaseNow = Date(millisecondsSince1970: try found["now_ms"].decode(Int64.self))
        let now = windowClock?.now() ?? databaseNow
        var row: QuotaBucketRow?
        if let stored = try found["daily_limit"].decode(Int?.self) {
            let source = QuotaBucketStatus.LimitSource(rawValue: try found["limit_source"].decode(String.self))
                ?? .configuration
            row = QuotaBucketRow(
                storedLimit: QuotaLimits.clamped(stored), limitSource: source, configuredLimit: configuredLimit,
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
            isExhausted: row?.isExhausted(in: period, nowMs: now.millisecondsSince1970) ?? false,
            window: window, period: period
        )
    }
}
