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
    /// A refusal met after another bucket was already charged in the transaction: thrown to roll
    /// the whole reservation back, and returned as the outcome.
    struct RefusedReservation: Error {
        let refusal: QuotaRefusal
    }

    /// Checks and charges a request's buckets inside the caller's transaction: each bucket read
    /// under its row lock and decided by ``QuotaStateMachine``, then the charges written once all
    /// of them admit.
    /// - Returns: The charge, or the refusal of the first bucket that cannot pay (nothing charged).
    /// - Throws: ``RefusedReservation`` when a further bucket refuses, so the caller rolls back
    ///   (the transaction, or its savepoint) what deciding the buckets before it wrote, and reports
    ///   the refusal.
    func reserve(_ connection: PostgresConnection, _ request: QuotaReservationRequest) async throws -> QuotaReservationOutcome {
        try QuotaRules.validateCost(request.cost, endpoint: request.endpoint)
        try QuotaRules.validateEndpoint(request.endpoint)
        try QuotaRules.validateLimit(request.configuredLimit, bucket: request.bucket)
        for charge in request.additionalCharges {
            try QuotaRules.validateCost(charge.cost, endpoint: request.endpoint, bucket: charge.bucket)
            try QuotaRules.validateLimit(charge.configuredLimit, bucket: charge.bucket)
        }
        let (now, decision) = try await decideInWindow(
            connection, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
            configuredLimit: request.configuredLimit, window: request.window, pacing: request.pacing,
            warningPercents: request.warningPercents
        )
        let day = PacificDay(containing: now)
        let usedAfter: Int, crossed: [Int]
        switch decision.outcome(bucket: request.bucket, endpoint: request.endpoint, cost: request.cost, day: day) {
        case .refused(let refusal): return .refused(refusal)
        case .admitted(let after, let warnings): (usedAfter, crossed) = (after, warnings)
        }
        var additional: [(charge: QuotaBucketCharge, decision: QuotaDecision)] = []
        for charge in request.additionalCharges {
            let (_, chargeDecision) = try await decideInWindow(
                connection, bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost,
                configuredLimit: charge.configuredLimit, window: charge.window, pacing: nil, warningPercents: []
            )
            switch chargeDecision.outcome(bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost, day: day) {
            case .refused(let refusal): throw RefusedReservation(refusal: refusal)
            case .admitted: additional.append((charge, chargeDecision))
            }
        }
        let nowMs = now.millisecondsSince1970
        let reservationID: Int64
        switch try await applyCharges(connection, decision.charges, bucket: request.bucket, nowMs: nowMs,
                                      limit: decision.limit, reservationID: nil, detail: request.detail) {
        case .charged(let id):
            reservationID = id
        case .refusedByCeiling(let used):
            // A one-statement admission of this bucket charged the key meanwhile: its day row's
            // ceiling refused what the read above allowed.
            return .refused(QuotaRefusal(
                reason: .overBudget, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost, day: day,
                bucketUnitsUsed: used, limit: decision.limit, period: decision.period
            ))
        }
        for (charge, chargeDecision) in additional {
            switch try await applyCharges(connection, chargeDecision.charges, bucket: charge.bucket, nowMs: nowMs,
                                          limit: chargeDecision.limit, reservationID: reservationID) {
            case .charged:
                break
            case .refusedByCeiling(let used):
                throw RefusedReservation(refusal: QuotaRefusal(
                    reason: .overBudget, bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost, day: day,
                    bucketUnitsUsed: used, limit: chargeDecision.limit, period: chargeDecision.period
                ))
            }
        }
        return .reserved(QuotaCharge(
            reservationID: reservationID, bucket: request.bucket, endpoint: request.endpoint,
            cost: request.cost, day: day, bucketUnitsUsed: usedAfter, limit: decision.limit, warningsCrossed: crossed,
            period: decision.period
        ))
    }

    /// Closes a bucket until the end of its window (the next Pacific midnight for the Pacific day)
    /// inside the caller's transaction, under the bucket's row lock.
    func markExhausted(
        _ connection: PostgresConnection, bucket: String, configuredLimit: Int, endpoint: String?
    ) async throws -> QuotaExhaustion {
        let (now, row) = try await lockedBucket(connection, bucket: bucket, configuredLimit: configuredLimit, window: nil)
        let (exhaustion, writes) = QuotaStateMachine.markExhausted(row, bucket: bucket, endpoint: endpoint, now: now)
        try await apply(connection, writes, bucket: bucket, nowMs: now.millisecondsSince1970, limit: row.limit)
        return exhaustion
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
        let day = PacificDay(key: dayKey) ?? PacificDay(containing: Date(millisecondsSince1970: Int64(chargedAtMs)))
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
        let units = QuotaStateMachine.refundUnits(cost: cost, endpointUnits: current, bucketUnits: bucketTotal)
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
