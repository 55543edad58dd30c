import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// What answers tell the ledger after admission: limits the server announces (followed down, never
/// up) and costs known only then (settled against the estimate charged). Both may take a key's
/// usage past the limit the `quota_bucket_days` row was charged under: its ceiling is raised with
/// it, so the CHECK keeps refusing every charge until the window has room again.
extension PostgresStore {
    /// Records what the server said about a bucket inside the caller's transaction, under the
    /// bucket's row lock. See ``recordQuotaAnnouncement(_:)``.
    func announce(_ connection: PostgresConnection, _ announcement: QuotaAnnouncement) async throws -> QuotaAnnouncementOutcome {
        try QuotaRules.validateAnnouncement(announcement)
        let (now, row) = try await lockedBucket(
            connection, bucket: announcement.bucket, configuredLimit: announcement.configuredLimit,
            window: announcement.window
        )
        let nowMs = now.millisecondsSince1970
        let (period, movedReset, writes) = QuotaStateMachine.announcedPeriod(
            row, window: announcement.window, resetsAt: announcement.resetsAt, now: now
        )
        try await apply(connection, writes, bucket: announcement.bucket, nowMs: nowMs, limit: row.limit)
        let used = try await windowUnits(connection, bucket: announcement.bucket, in: period)
        let (followed, follow) = QuotaStateMachine.follow(
            remaining: announcement.remaining, endpoint: announcement.endpoint, limit: row.limit, period: period, used: used
        )
        try await apply(connection, follow, bucket: announcement.bucket, nowMs: nowMs, limit: row.limit)
        return QuotaAnnouncementOutcome(unitsFollowed: followed, movedReset: movedReset, period: period,
                                        unitsUsed: used + followed, limit: row.limit)
    }

    /// Settles one charge at its actual cost inside the caller's transaction, under the charge's
    /// day row lock (the refund's), so a settlement and a refund of one charge, or two settlements,
    /// from any machines, are written one after the other and the second sees the first.
    /// See ``settleQuotaCost(reservationID:bucket:actualUnits:at:detail:)``.
    func settleCost(
        _ connection: PostgresConnection, reservationID: Int64, bucket: String, actualUnits: Int, detail: String?
    ) async throws -> QuotaCostSettlement {
        try QuotaRules.validateActualCost(actualUnits, reservationID: reservationID, bucket: bucket)
        let id = Int(reservationID)
        // The reservation's own charge, or its further charge in that bucket.
        guard let charge = try await connection.firstRow("""
            SELECT id, pacific_date, endpoint, units FROM quota_events
            WHERE kind = 'charge' AND bucket = \(bucket) AND (id = \(id) OR reservation_id = \(id))
            ORDER BY id LIMIT 1
            """, logger: logger) else {
            throw QuotaRules.noCharge(reservationID: reservationID, bucket: bucket)
        }
        let (chargeID, key, endpoint, estimate) = try charge.decode((Int, String, String, Int).self)
        // The lock first, in a statement of its own: the checks below then read what a refund or a
        // settlement that held it before committed (a statement's snapshot predates its lock waits).
        let keyUnits = try await connection.firstRow("""
            SELECT units FROM quota_bucket_days WHERE pacific_date = \(key) AND bucket = \(bucket) FOR UPDATE
            """, logger: logger)?.decode(Int.self) ?? 0
        // The bucket's row is read, not locked: its lock comes before the day row's.
        guard let state = try await connection.firstRow("""
            SELECT EXISTS (SELECT 1 FROM quota_events WHERE reservation_id = \(chargeID) AND kind = 'refund') AS refunded,
                   EXISTS (SELECT 1 FROM quota_events WHERE reservation_id = \(id) AND kind = 'settle' AND bucket = \(bucket))
                       AS settled,
                   (SELECT units FROM quota_usage WHERE pacific_date = \(key) AND bucket = \(bucket) AND endpoint = \(endpoint))
                       AS usage_units,
                   tollgate_ms(now()) AS now_ms, b.daily_limit, b.window_spec, b.announced_key, b.announced_reset_ms
            FROM (SELECT 1) AS one LEFT JOIN quota_buckets AS b ON b.bucket = \(bucket)
            """, logger: logger)?.makeRandomAccess() else {
            throw StoreRefusal.invalidArgument("the settlement of reservation \(reservationID) returned no row")
        }
        let refunded = try state["refunded"].decode(Bool.self)
        let settled = try state["settled"].decode(Bool.self)
        let usageUnits = try state["usage_units"].decode(Int?.self)
        let storedLimit = try state["daily_limit"].decode(Int?.self)
        if refunded || settled { return .alreadySettled }
        let difference = actualUnits - estimate
        // As SQLite refuses it: a total given back (or edited) below what the settlement takes away,
        // or missing.
        let inRange = usageUnits.map { (0...QuotaLimits.maximumUnits).contains($0 + difference) } ?? false
        guard difference == 0 || inRange else {
            throw QuotaRules.settlementOutOfRange(difference: difference, endpoint: endpoint, bucket: bucket, key: key)
        }
        let nowMs = windowClock.map { $0.now().millisecondsSince1970 }
        try await connection.run("""
            WITH event AS (
                INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
                VALUES (COALESCE(\(nowMs), tollgate_ms(now())), \(key), \(bucket), \(endpoint), 'settle', \(difference),
                        \(id), \(QuotaRules.settledDetail(actualUnits: actualUnits, estimate: estimate, source: detail)))
            ), usage AS (
                UPDATE quota_usage SET units = units + \(difference)
                WHERE pacific_date = \(key) AND bucket = \(bucket) AND endpoint = \(endpoint) AND \(difference) <> 0
            )
            UPDATE quota_bucket_days SET units = units + \(difference), ceiling = GREATEST(ceiling, units + \(difference))
            WHERE pacific_date = \(key) AND bucket = \(bucket) AND \(difference) <> 0
            """, logger: logger)
        // A rolling window's usage is more than the charge's slice: all of it counts.
        let now = try windowClock?.now() ?? Date(millisecondsSince1970: state["now_ms"].decode(Int64.self))
        let current = try state["window_spec"].decode(String?.self).map { specification in
            QuotaRules.period(
                in: QuotaWindow(specification: specification) ?? .pacificDay, at: now,
                announcedKey: try state["announced_key"].decode(String?.self),
                announcedResetMs: try state["announced_reset_ms"].decode(Int?.self).map(Int64.init)
            )
        }
        let period = QuotaRules.settlementPeriod(chargeKey: key, current: current)
        let used = period.spansSeveralKeys
            ? try await windowUnits(connection, bucket: bucket, in: period) : keyUnits + difference
        return .settled(difference: difference, actualUnits: actualUnits,
                        overLimit: used > QuotaLimits.clamped(storedLimit ?? 0))
    }
}
