import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// The quota ledger's statements, on a connection inside a transaction the caller opened.
///
/// Lock order, so two operations never wait on each other in a cycle: a bucket's
/// `quota_buckets` row before its `quota_bucket_days` row. Every write to a day's usage of a
/// bucket holds that day's `quota_bucket_days` row, so reads made under it are current.
extension PostgresStore {
    /// What one bucket's check-and-charge did.
    enum BucketChargeResult {
        case charged(reservationID: Int64, day: PacificDay, period: QuotaPeriod, usedAfter: Int, limit: Int,
                     warnedPercent: Int)
        case refused(QuotaRefusal)
    }

    /// A refusal met after another bucket was already charged in the transaction: thrown to roll
    /// the whole reservation back, and returned as the outcome.
    struct RefusedReservation: Error {
        let refusal: QuotaRefusal
    }

    /// Checks and charges a request's buckets inside the caller's transaction.
    /// - Returns: The charge, or the refusal of the primary bucket (nothing charged).
    /// - Throws: ``RefusedReservation`` when a further bucket refuses after the primary one was
    ///   charged: the caller rolls back (the transaction, or its savepoint) and reports the refusal.
    func reserve(_ connection: PostgresConnection, _ request: QuotaReservationRequest) async throws -> QuotaReservationOutcome {
        try QuotaRules.validateCost(request.cost, endpoint: request.endpoint)
        try QuotaRules.validateEndpoint(request.endpoint)
        try QuotaRules.validateLimit(request.configuredLimit, bucket: request.bucket)
        for charge in request.additionalCharges {
            try QuotaRules.validateCost(charge.cost, endpoint: request.endpoint, bucket: charge.bucket)
            try QuotaRules.validateLimit(charge.configuredLimit, bucket: charge.bucket)
        }
        let primary = try await charge(
            connection, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
            configuredLimit: request.configuredLimit, window: request.window, pacing: request.pacing,
            reservationID: nil, detail: request.detail
        )
        let reservationID: Int64, day: PacificDay, period: QuotaPeriod, usedAfter: Int, limit: Int, warned: Int
        switch primary {
        case .refused(let refusal):
            return .refused(refusal)
        case .charged(let id, let chargedDay, let chargedPeriod, let used, let chargedLimit, let warnedPercent):
            (reservationID, day, period, usedAfter, limit, warned) = (id, chargedDay, chargedPeriod, used, chargedLimit,
                                                                      warnedPercent)
        }
        for charge in request.additionalCharges {
            let result = try await self.charge(
                connection, bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost,
                configuredLimit: charge.configuredLimit, window: charge.window, pacing: nil,
                reservationID: reservationID, detail: "charged with reservation \(reservationID)"
            )
            if case .refused(let refusal) = result { throw RefusedReservation(refusal: refusal) }
        }
        let crossed = QuotaRules.warningsCrossed(
            percents: request.warningPercents, usedAfter: usedAfter, limit: limit, alreadyWarned: warned
        )
        try await recordWarnings(connection, bucket: request.bucket, key: period.key, crossed: crossed)
        return .reserved(QuotaCharge(
            reservationID: reservationID, bucket: request.bucket, endpoint: request.endpoint,
            cost: request.cost, day: day, bucketUnitsUsed: usedAfter, limit: limit, warningsCrossed: crossed,
            period: period
        ))
    }

    /// Checks and charges one bucket: the Pacific day without pacing in SQL, in one statement as
    /// before windows existed; any other window, pacing, or a Pacific day an announced reset moved,
    /// under the bucket's row lock with the window computed in Swift.
    func charge(
        _ connection: PostgresConnection, bucket: String, endpoint: String, cost: Int, configuredLimit: Int,
        window: QuotaWindow, pacing: QuotaPacing?, reservationID: Int64?, detail: String?
    ) async throws -> BucketChargeResult {
        if window.isPacificDay, pacing == nil {
            try await synchronizeBucket(connection, bucket: bucket, configuredLimit: configuredLimit)
            if let result = try await chargeBucket(
                connection, bucket: bucket, endpoint: endpoint, cost: cost, reservationID: reservationID, detail: detail
            ) {
                return result
            }
        }
        return try await chargeInWindow(
            connection, bucket: bucket, endpoint: endpoint, cost: cost, configuredLimit: configuredLimit, window: window,
            pacing: pacing, reservationID: reservationID, detail: detail
        )
    }

    /// Closes a bucket until the end of its window (the next Pacific midnight for the Pacific day)
    /// inside the caller's transaction, under the bucket's row lock.
    func markExhausted(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, endpoint: String?
    ) async throws -> QuotaExhaustion {
        let (now, row) = try await lockedBucket(connection, bucket: bucket, configuredLimit: configuredLimit, window: nil)
        let nowMs = Self.milliseconds(now)
        let period = row.period(in: row.storedWindow, at: now)
        if row.isExhausted(in: period, nowMs: Int64(nowMs)) {
            return QuotaExhaustion(bucket: bucket, until: period.end, isNew: false)
        }
        let untilMs = Self.milliseconds(period.end)
        try await connection.run("""
            WITH marked AS (
                UPDATE quota_buckets SET exhausted_until_ms = \(untilMs), updated_at_ms = \(nowMs) WHERE bucket = \(bucket)
            )
            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
            VALUES (\(nowMs), \(period.key), \(bucket), \(endpoint ?? "*"), 'exhausted', 0,
                    \(QuotaRules.exhaustedDetail(window: row.storedWindow, until: period.end)))
            """, logger: logger)
        return QuotaExhaustion(bucket: bucket, until: period.end, isNew: true)
    }

    /// Creates the bucket's row from the configuration, or brings a configuration-owned limit up
    /// to date, with a `limit` event for either change, in one statement; for the Pacific-day path,
    /// so a bucket configured with another window before comes back to the Pacific day (with a
    /// `limit` event too, its announced reset and pacing dropped, as SQLiteStore does). Changes
    /// nothing (and locks nothing) when the row is up to date, which is the usual case.
    func synchronizeBucket(_ connection: PostgresConnection, bucket: String, configuredLimit: Int) async throws {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        let pacific = QuotaWindow.pacificDay.specification
        // One UPDATE for both changes: a statement may change a row once.
        try await connection.run("""
            WITH clock AS (
                SELECT tollgate_pacific_date(now()) AS day, tollgate_ms(now()) AS now_ms
            ), existing AS (
                SELECT daily_limit, window_spec FROM quota_buckets WHERE bucket = \(bucket)
            ), inserted AS (
                INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms)
                SELECT \(bucket), \(configuredLimit), 'configuration', clock.now_ms FROM clock
                ON CONFLICT (bucket) DO NOTHING
                RETURNING daily_limit
            ), updated AS (
                UPDATE quota_buckets AS b
                SET daily_limit = CASE WHEN b.limit_source = 'configuration' THEN \(configuredLimit) ELSE b.daily_limit END,
                    window_spec = \(pacific),
                    announced_key = CASE WHEN b.window_spec = \(pacific) THEN b.announced_key END,
                    announced_reset_ms = CASE WHEN b.window_spec = \(pacific) THEN b.announced_reset_ms END,
                    paced_at_ms = CASE WHEN b.window_spec = \(pacific) THEN b.paced_at_ms END,
                    paced_key = CASE WHEN b.window_spec = \(pacific) THEN b.paced_key END,
                    updated_at_ms = clock.now_ms
                FROM clock
                WHERE b.bucket = \(bucket)
                  AND ((b.limit_source = 'configuration' AND b.daily_limit <> \(configuredLimit)) OR b.window_spec <> \(pacific))
                RETURNING b.daily_limit, b.window_spec
            )
            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
            SELECT clock.now_ms, clock.day, \(bucket), '*', 'limit', 0,
                   'daily limit ' || inserted.daily_limit || ' (configuration)'
            FROM clock, inserted
            UNION ALL
            SELECT clock.now_ms, clock.day, \(bucket), '*', 'limit', 0,
                   'daily limit ' || COALESCE(existing.daily_limit::text, '?') || ' → ' || updated.daily_limit
                       || ' (configuration)'
            FROM clock CROSS JOIN updated LEFT JOIN existing ON true
            WHERE existing.daily_limit IS DISTINCT FROM updated.daily_limit
            UNION ALL
            -- QuotaRules.windowChangeDetail's words, composed here from the stored window.
            SELECT clock.now_ms, clock.day, \(bucket), '*', 'limit', 0,
                   'window ' || existing.window_spec || ' → ' || updated.window_spec || ' (configuration)'
            FROM clock CROSS JOIN updated CROSS JOIN existing
            WHERE existing.window_spec <> updated.window_spec
            """, logger: logger)
    }

    /// Checks and charges one bucket in ONE statement: the conditional upsert of the bucket's day
    /// row (`units + cost <= limit`, evaluated by PostgreSQL on the row's latest version under its
    /// row lock, so machines never overspend), the `charge` event and the endpoint's usage row.
    /// When the condition fails, nothing is written and the refusal says why.
    /// - Returns: Nil, having written nothing, when a reset the server announced today moved the
    ///   bucket's Pacific day: the window path (``chargeInWindow(_:bucket:endpoint:cost:configuredLimit:window:pacing:reservationID:detail:)``)
    ///   decides then.
    func chargeBucket(
        _ connection: PostgresConnection, bucket: String, endpoint: String, cost: Int,
        reservationID: Int64?, detail: String?
    ) async throws -> BucketChargeResult? {
        let linkedReservation = reservationID.map { Int($0) }
        guard let row = try await connection.firstRow("""
            WITH clock AS (
                SELECT tollgate_pacific_date(now()) AS day, tollgate_ms(now()) AS now_ms,
                       tollgate_next_reset_ms(now()) AS reset_ms
            ), bucket AS (
                -- A reset announced today moved the day: the window path decides (read only when
                -- one was ever announced).
                SELECT b.daily_limit, COALESCE(b.exhausted_until_ms = clock.reset_ms, false) AS exhausted,
                       b.announced_reset_ms IS NOT NULL AND b.announced_reset_ms > tollgate_day_start_ms(now())
                           AS announced
                FROM quota_buckets AS b, clock WHERE b.bucket = \(bucket)
            ), charged AS (
                INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
                SELECT clock.day, \(bucket), \(cost), bucket.daily_limit FROM clock, bucket
                WHERE NOT bucket.exhausted AND NOT bucket.announced AND \(cost) <= bucket.daily_limit
                ON CONFLICT (pacific_date, bucket) DO UPDATE
                    SET units = d.units + excluded.units, ceiling = excluded.ceiling
                    WHERE d.units + excluded.units <= excluded.ceiling
                RETURNING d.units, d.warned_percent
            ), event AS (
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                SELECT clock.now_ms, clock.day, \(bucket), \(endpoint), 'charge', \(cost), \(linkedReservation), \(detail)
                FROM clock, charged
                RETURNING id
            ), usage AS (
                INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
                SELECT clock.day, \(bucket), \(endpoint), \(cost), 1 FROM clock, charged
                ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE
                    SET units = u.units + excluded.units, calls = u.calls + 1
                RETURNING u.units
            )
            SELECT clock.day, bucket.daily_limit, bucket.exhausted,
                   (SELECT units FROM charged), (SELECT warned_percent FROM charged), (SELECT id FROM event),
                   (SELECT count(*) FROM usage),
                   COALESCE((SELECT units FROM quota_bucket_days WHERE pacific_date = clock.day AND bucket = \(bucket)), 0),
                   bucket.announced
            FROM clock LEFT JOIN bucket ON true
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the quota charge of \(endpoint) in \(bucket) returned no row")
        }
        let (dayKey, storedLimit, exhausted, usedAfter, warned, eventID, _, usedBefore, announced) = try row.decode(
            (String, Int?, Bool?, Int?, Int?, Int?, Int, Int, Bool?).self
        )
        let day = try Self.pacificDay(dayKey)
        let limit = QuotaLimits.clamped(storedLimit ?? 0)
        if let usedAfter, let eventID {
            return .charged(
                reservationID: Int64(eventID), day: day, period: QuotaPeriod(day), usedAfter: usedAfter, limit: limit,
                warnedPercent: warned ?? 0
            )
        }
        if announced == true { return nil }
        return .refused(QuotaRefusal(
            reason: exhausted == true ? .exhaustedByServer : .overBudget, bucket: bucket, endpoint: endpoint,
            cost: cost, day: day, bucketUnitsUsed: usedBefore, limit: limit
        ))
    }

    /// Records the warning levels a charge crossed first in its window on the bucket's row for the
    /// window's key, which the charge holds locked, so no other machine reports them again.
    func recordWarnings(
        _ connection: PostgresConnection, bucket: String, key: String, crossed: [Int]
    ) async throws {
        guard let highest = crossed.last else { return }
        try await connection.run("""
            UPDATE quota_bucket_days SET warned_percent = GREATEST(warned_percent, \(highest))
            WHERE pacific_date = \(key) AND bucket = \(bucket)
            """, logger: logger)
    }

    /// Refunds one charge event at most once, under its bucket's day row lock.
    func refundCharge(
        _ connection: PostgresConnection, reservationID: Int64, reason: String?
    ) async throws -> QuotaRefundOutcome {
        let id = Int(reservationID)
        guard let charge = try await connection.firstRow("""
            SELECT pacific_date, bucket, endpoint, units, reservation_id, at_ms
            FROM quota_events WHERE id = \(id) AND kind = 'charge'
            """, logger: logger) else {
            throw QuotaRules.unknownReservation(reservationID)
        }
        let (dayKey, bucket, endpoint, estimate, primary, chargedAtMs) = try charge.decode(
            (String, String, String, Int, Int?, Int).self
        )
        // A window's key that is not a date (an hour's instant) reports the Pacific day of the charge.
        let day = PacificDay(key: dayKey) ?? PacificDay(containing: Self.date(milliseconds: chargedAtMs))
        // Every refund of this bucket's day waits here for the one before it to commit, so the
        // check below sees it: a reservation settled by two machines is refunded once.
        let bucketTotal = try await connection.firstRow("""
            SELECT units FROM quota_bucket_days WHERE pacific_date = \(dayKey) AND bucket = \(bucket) FOR UPDATE
            """, logger: logger)?.decode(Int.self) ?? 0
        // Whether it was refunded, and what a settlement added to (or took from) the estimate: the
        // refund gives back the actual cost.
        let (alreadyRefunded, settled) = try await connection.firstRow("""
            SELECT EXISTS (SELECT 1 FROM quota_events WHERE reservation_id = \(id) AND kind = 'refund'),
                   (SELECT COALESCE(SUM(units), 0)::bigint FROM quota_events
                    WHERE reservation_id = \(primary ?? id) AND kind = 'settle' AND bucket = \(bucket))
            """, logger: logger)?.decode((Bool, Int).self) ?? (false, 0)
        if alreadyRefunded { return .alreadyRefunded }
        let cost = QuotaLimits.saturatingSum(estimate, settled)
        let current = try await connection.firstRow("""
            SELECT units FROM quota_usage WHERE pacific_date = \(dayKey) AND bucket = \(bucket) AND endpoint = \(endpoint)
            """, logger: logger)?.decode(Int.self) ?? 0
        // A reset or a reconciliation may have given units back already: never refund below zero.
        let units = max(min(cost, current, bucketTotal), 0)
        try await connection.run("""
            WITH event AS (
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                VALUES (tollgate_ms(now()), \(dayKey), \(bucket), \(endpoint), 'refund', \(-units), \(id), \(reason))
            ), usage AS (
                UPDATE quota_usage SET units = units - \(units)
                WHERE pacific_date = \(dayKey) AND bucket = \(bucket) AND endpoint = \(endpoint) AND \(units) <> 0
            )
            UPDATE quota_bucket_days SET units = units - \(units)
            WHERE pacific_date = \(dayKey) AND bucket = \(bucket) AND \(units) <> 0
            """, logger: logger)
        // The further buckets the same call was charged in are refunded with it.
        let linked = try await connection.rows("""
            SELECT id FROM quota_events WHERE reservation_id = \(id) AND kind = 'charge' ORDER BY id
            """, logger: logger)
        for row in linked {
            _ = try await refundCharge(connection, reservationID: Int64(try row.decode(Int.self)), reason: reason)
        }
        return .refunded(units: units, day: day)
    }

    static func pacificDay(_ key: String) throws -> PacificDay {
        guard let day = PacificDay(key: key) else {
            throw StoreRefusal.invalidArgument("the database returned \(key), which is not a Pacific date (YYYY-MM-DD)")
        }
        return day
    }
}
