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
        case charged(reservationID: Int64, day: PacificDay, usedAfter: Int, limit: Int, warnedPercent: Int)
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
        try await synchronizeBucket(connection, bucket: request.bucket, configuredLimit: request.configuredLimit)
        for charge in request.additionalCharges {
            try await synchronizeBucket(connection, bucket: charge.bucket, configuredLimit: charge.configuredLimit)
        }
        let primary = try await chargeBucket(
            connection, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
            reservationID: nil, detail: nil
        )
        let reservationID: Int64, day: PacificDay, usedAfter: Int, limit: Int, warned: Int
        switch primary {
        case .refused(let refusal):
            return .refused(refusal)
        case .charged(let id, let chargedDay, let used, let chargedLimit, let warnedPercent):
            (reservationID, day, usedAfter, limit, warned) = (id, chargedDay, used, chargedLimit, warnedPercent)
        }
        for charge in request.additionalCharges {
            let result = try await chargeBucket(
                connection, bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost,
                reservationID: reservationID, detail: "charged with reservation \(reservationID)"
            )
            if case .refused(let refusal) = result { throw RefusedReservation(refusal: refusal) }
        }
        let crossed = QuotaRules.warningsCrossed(
            percents: request.warningPercents, usedAfter: usedAfter, limit: limit, alreadyWarned: warned
        )
        try await recordWarnings(connection, bucket: request.bucket, day: day, crossed: crossed)
        return .reserved(QuotaCharge(
            reservationID: reservationID, bucket: request.bucket, endpoint: request.endpoint,
            cost: request.cost, day: day, bucketUnitsUsed: usedAfter, limit: limit, warningsCrossed: crossed
        ))
    }

    /// Closes a bucket until the database's next Pacific midnight inside the caller's transaction.
    func markExhausted(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, endpoint: String?
    ) async throws -> QuotaExhaustion {
        try await synchronizeBucket(connection, bucket: bucket, configuredLimit: configuredLimit)
        let resetMs = try await connection.firstRow(
            "SELECT tollgate_next_reset_ms(now())", logger: logger
        )?.decode(Int.self) ?? 0
        let until = Date(timeIntervalSince1970: TimeInterval(resetMs) / 1000)
        let detail = "the server said the daily quota is spent; closed until \(PacificDay.localTimeDescription(of: until))"
        let isNew = try await connection.firstRow("""
            WITH marked AS (
                UPDATE quota_buckets SET exhausted_until_ms = \(resetMs), updated_at_ms = tollgate_ms(now())
                WHERE bucket = \(bucket) AND exhausted_until_ms IS DISTINCT FROM \(resetMs)
                RETURNING bucket
            ), event AS (
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, detail)
                SELECT tollgate_ms(now()), tollgate_pacific_date(now()), marked.bucket, \(endpoint ?? "*"),
                       'exhausted', 0, \(detail)
                FROM marked
            )
            SELECT EXISTS (SELECT 1 FROM marked)
            """, logger: logger)?.decode(Bool.self) ?? false
        return QuotaExhaustion(bucket: bucket, until: until, isNew: isNew)
    }

    /// Creates the bucket's row from the configuration, or brings a configuration-owned limit up
    /// to date, with a `limit` event for either change, in one statement. Changes nothing (and
    /// locks nothing) when the row is up to date, which is the usual case.
    func synchronizeBucket(_ connection: PostgresConnection, bucket: String, configuredLimit: Int) async throws {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        try await connection.run("""
            WITH clock AS (
                SELECT tollgate_pacific_date(now()) AS day, tollgate_ms(now()) AS now_ms
            ), existing AS (
                SELECT daily_limit FROM quota_buckets WHERE bucket = \(bucket)
            ), inserted AS (
                INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms)
                SELECT \(bucket), \(configuredLimit), 'configuration', clock.now_ms FROM clock
                ON CONFLICT (bucket) DO NOTHING
                RETURNING daily_limit
            ), updated AS (
                UPDATE quota_buckets AS b SET daily_limit = \(configuredLimit), updated_at_ms = clock.now_ms
                FROM clock
                WHERE b.bucket = \(bucket) AND b.limit_source = 'configuration' AND b.daily_limit <> \(configuredLimit)
                RETURNING b.daily_limit
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
            """, logger: logger)
    }

    /// Checks and charges one bucket in ONE statement: the conditional upsert of the bucket's day
    /// row (`units + cost <= limit`, evaluated by PostgreSQL on the row's latest version under its
    /// row lock, so machines never overspend), the `charge` event and the endpoint's usage row.
    /// When the condition fails, nothing is written and the refusal says why.
    func chargeBucket(
        _ connection: PostgresConnection, bucket: String, endpoint: String, cost: Int,
        reservationID: Int64?, detail: String?
    ) async throws -> BucketChargeResult {
        let linkedReservation = reservationID.map { Int($0) }
        guard let row = try await connection.firstRow("""
            WITH clock AS (
                SELECT tollgate_pacific_date(now()) AS day, tollgate_ms(now()) AS now_ms,
                       tollgate_next_reset_ms(now()) AS reset_ms
            ), bucket AS (
                SELECT b.daily_limit, COALESCE(b.exhausted_until_ms = clock.reset_ms, false) AS exhausted
                FROM quota_buckets AS b, clock WHERE b.bucket = \(bucket)
            ), charged AS (
                INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
                SELECT clock.day, \(bucket), \(cost), bucket.daily_limit FROM clock, bucket
                WHERE NOT bucket.exhausted AND \(cost) <= bucket.daily_limit
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
                   COALESCE((SELECT units FROM quota_bucket_days WHERE pacific_date = clock.day AND bucket = \(bucket)), 0)
            FROM clock LEFT JOIN bucket ON true
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the quota charge of \(endpoint) in \(bucket) returned no row")
        }
        let (dayKey, storedLimit, exhausted, usedAfter, warned, eventID, _, usedBefore) = try row.decode(
            (String, Int?, Bool?, Int?, Int?, Int?, Int, Int).self
        )
        let day = try Self.pacificDay(dayKey)
        let limit = QuotaLimits.clamped(storedLimit ?? 0)
        if let usedAfter, let eventID {
            return .charged(
                reservationID: Int64(eventID), day: day, usedAfter: usedAfter, limit: limit, warnedPercent: warned ?? 0
            )
        }
        return .refused(QuotaRefusal(
            reason: exhausted == true ? .exhaustedByServer : .overBudget, bucket: bucket, endpoint: endpoint,
            cost: cost, day: day, bucketUnitsUsed: usedBefore, limit: limit
        ))
    }

    /// Records the warning levels a charge crossed first today on the bucket's day row, which the
    /// charge holds locked, so no other machine reports them again.
    func recordWarnings(
        _ connection: PostgresConnection, bucket: String, day: PacificDay, crossed: [Int]
    ) async throws {
        guard let highest = crossed.last else { return }
        try await connection.run("""
            UPDATE quota_bucket_days SET warned_percent = GREATEST(warned_percent, \(highest))
            WHERE pacific_date = \(day.key) AND bucket = \(bucket)
            """, logger: logger)
    }

    /// Refunds one charge event at most once, under its bucket's day row lock.
    func refundCharge(
        _ connection: PostgresConnection, reservationID: Int64, reason: String?
    ) async throws -> QuotaRefundOutcome {
        let id = Int(reservationID)
        guard let charge = try await connection.firstRow("""
            SELECT pacific_date, bucket, endpoint, units FROM quota_events WHERE id = \(id) AND kind = 'charge'
            """, logger: logger) else {
            throw QuotaRules.unknownReservation(reservationID)
        }
        let (dayKey, bucket, endpoint, cost) = try charge.decode((String, String, String, Int).self)
        let day = try Self.pacificDay(dayKey)
        // Every refund of this bucket's day waits here for the one before it to commit, so the
        // check below sees it: a reservation settled by two machines is refunded once.
        let bucketTotal = try await connection.firstRow("""
            SELECT units FROM quota_bucket_days WHERE pacific_date = \(dayKey) AND bucket = \(bucket) FOR UPDATE
            """, logger: logger)?.decode(Int.self) ?? 0
        let alreadyRefunded = try await connection.firstRow("""
            SELECT EXISTS (SELECT 1 FROM quota_events WHERE reservation_id = \(id) AND kind = 'refund')
            """, logger: logger)?.decode(Bool.self) ?? false
        if alreadyRefunded { return .alreadyRefunded }
        let current = try await connection.firstRow("""
            SELECT units FROM quota_usage WHERE pacific_date = \(dayKey) AND bucket = \(bucket) AND endpoint = \(endpoint)
            """, logger: logger)?.decode(Int.self) ?? 0
        // A reset or a reconciliation may have given units back already: never refund below zero.
        let units = min(cost, max(current, 0), max(bucketTotal, 0))
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

    /// A bucket's status on the database's current Pacific day.
    func bucketStatus(_ connection: PostgresConnection, bucket: String, configuredLimit: Int) async throws -> QuotaBucketStatus {
        guard let row = try await connection.firstRow("""
            WITH clock AS (SELECT tollgate_pacific_date(now()) AS day, tollgate_next_reset_ms(now()) AS reset_ms)
            SELECT clock.day, b.daily_limit, b.limit_source, COALESCE(b.exhausted_until_ms = clock.reset_ms, false),
                   COALESCE(d.units, 0)
            FROM clock
            LEFT JOIN quota_buckets AS b ON b.bucket = \(bucket)
            LEFT JOIN quota_bucket_days AS d ON d.pacific_date = clock.day AND d.bucket = \(bucket)
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the status of \(bucket) returned no row")
        }
        let (dayKey, storedLimit, sourceText, exhausted, used) = try row.decode((String, Int?, String?, Bool, Int).self)
        let source = sourceText.flatMap(QuotaBucketStatus.LimitSource.init(rawValue:)) ?? .configuration
        let limit = source == .admin ? QuotaLimits.clamped(storedLimit ?? 0) : configuredLimit
        return QuotaBucketStatus(
            bucket: bucket, day: try Self.pacificDay(dayKey), limit: limit, limitSource: source,
            unitsUsed: used, isExhausted: exhausted
        )
    }

    static func pacificDay(_ key: String) throws -> PacificDay {
        guard let day = PacificDay(key: key) else {
            throw StoreRefusal.invalidArgument("the database returned \(key), which is not a Pacific date (YYYY-MM-DD)")
        }
        return day
    }
}
