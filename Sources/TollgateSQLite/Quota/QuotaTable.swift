import Foundation
import TollgateCore

/// The quota ledger's SQL, on a ``Database`` inside a transaction the caller opened.
///
/// Each `SQLiteStore` operation runs one of these in its own transaction; the gate's admission
/// composes ``reserve(_:_:)`` with the circuit's and the throttle's functions in one
/// `BEGIN IMMEDIATE` transaction. Every statement goes through the statement cache and a key or
/// index: the hot path (``reserve(_:_:)``) reads one bucket row and the day's usage rows of one
/// bucket (a primary-key range), and writes one event and one usage row.
enum QuotaTable {
    // MARK: Operations

    /// Checks and charges, or refuses without writing a charge. See ``QuotaStorage/reserveQuota(_:)``.
    ///
    /// Reads the rows, asks ``QuotaStateMachine`` and writes what it says: every bucket of the call
    /// is decided (its row brought up to date and its window noted, whatever the verdict) before any
    /// is charged, so the charge is all or nothing.
    static func reserve(_ db: Database, _ request: QuotaReservationRequest) throws -> QuotaReservationOutcome {
        try QuotaRules.validateCost(request.cost, endpoint: request.endpoint)
        try QuotaRules.validateEndpoint(request.endpoint)
        let (day, pacificPeriod) = QuotaPeriod.pacificDay(containing: request.at)
        let nowMs = request.at.millisecondsSince1970
        // The natural window's usage is read with the row, in one statement; an announced reset,
        // rare, moves the window and costs one more read.
        let natural = request.window == .pacificDay ? pacificPeriod : request.window.naturalPeriod(containing: request.at)
        let synchronized = try synchronizeStoredBucket(
            db, request.bucket, configuredLimit: request.configuredLimit, window: request.window, nowMs: nowMs,
            unitsIn: natural,
            remembered: db.rememberedRows.takeQuotaBucket(request.bucket, configuredLimit: request.configuredLimit,
                                                          period: natural, bucketWrites: db.quotaBucketWrites.count)
        )
        let (row, unitsInNatural) = (synchronized.row, synchronized.unitsUsed)
        let period = row.announcedResetMs == nil ? natural : row.period(in: request.window, at: request.at)
        let used = if period.key == natural.key, period.firstKey == natural.firstKey, let unitsInNatural {
            unitsInNatural
        } else {
            try bucketUnits(db, bucket: request.bucket, in: period)
        }
        let decision = QuotaStateMachine.decide(QuotaStateMachine.Admission(
            endpoint: request.endpoint, cost: request.cost, row: row, period: period, used: used, now: request.at,
            pacing: request.pacing, warningPercents: request.warningPercents, alreadyWarned: row.warnedPercent(in: period)
        ))
        try apply(db, decision.bookkeeping, bucket: request.bucket, nowMs: nowMs)
        let usedAfter: Int, crossed: [Int]
        switch decision.outcome(bucket: request.bucket, endpoint: request.endpoint, cost: request.cost, day: day) {
        case .refused(let refusal): return .refused(refusal)
        case .admitted(let after, let warnings): (usedAfter, crossed) = (after, warnings)
        }
        // Every other bucket the call is charged in must be able to pay too: all or nothing.
        var additional: [(bucket: String, decision: QuotaDecision)] = []
        for charge in request.additionalCharges {
            let chargeDecision = try decideAdditional(db, charge, request: request, nowMs: nowMs)
            switch chargeDecision.outcome(bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost, day: day) {
            case .refused(let refusal): return .refused(refusal)
            case .admitted: additional.append((charge.bucket, chargeDecision))
            }
        }
        guard let reservationID = try apply(db, decision.charges, bucket: request.bucket, nowMs: nowMs,
                                           detail: request.detail) else {
            throw StoreRefusal.invalidArgument("the quota charge of \(request.endpoint) in \(request.bucket) wrote no event")
        }
        for (bucket, chargeDecision) in additional {
            try apply(db, chargeDecision.charges, bucket: bucket, nowMs: nowMs, reservationID: reservationID)
        }
        // The row written by nothing but the charge, in its natural window: a re-read would find
        // the same row and the charge's units more (the charge's guard keeps the endpoint's total
        // within the range the sum clamps to, so the sum grows by exactly the cost).
        if let stored = synchronized.stored, !synchronized.wrote, let unitsInNatural, period.key == natural.key,
           period.firstKey == natural.firstKey, additional.isEmpty, decision.bookkeeping.isEmpty,
           decision.charges.count == 1 {
            db.rememberedRows.remember(
                quotaBucket: RememberedRows.QuotaBucketRead(
                    configuredLimit: request.configuredLimit, periodKey: natural.key, periodFirstKey: natural.firstKey,
                    row: stored, unitsUsed: unitsInNatural + request.cost
                ),
                for: request.bucket, bucketWrites: db.quotaBucketWrites.count
            )
        }
        return .reserved(QuotaCharge(
            reservationID: reservationID, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
            day: day, bucketUnitsUsed: usedAfter, limit: row.limit, warningsCrossed: crossed, period: period
        ))
    }

    /// Refunds a charge once. See ``QuotaStorage/refundQuota(reservationID:at:reason:)``.
    static func refund(_ db: Database, reservationID: Int64, at: Date, reason: String?) throws -> QuotaRefundOutcome {
        // The charge, what a settlement added to it, and whether it was refunded already, in one statement.
        guard let charge = try db.cachedStatement(sql: """
            SELECT pacific_date, bucket, endpoint, units, at_ms,
                   EXISTS (SELECT 1 FROM quota_events AS refund
                           WHERE refund.reservation_id = charge.id AND refund.kind = 'refund') AS refunded,
                   (SELECT COALESCE(SUM(settle.units), 0) FROM quota_events AS settle
                    WHERE settle.reservation_id = COALESCE(charge.reservation_id, charge.id)
                      AND settle.kind = 'settle' AND settle.bucket = charge.bucket) AS settled
            FROM quota_events AS charge WHERE charge.id = ? AND charge.kind = 'charge'
            """).fetchOne(arguments: [reservationID])
        else {
            throw QuotaRules.unknownReservation(reservationID)
        }
        let dateKey = try charge.decode(String.self, forColumn: "pacific_date")
        let chargedAt = Date(millisecondsSince1970: try charge.decode(Int64.self, forColumn: "at_ms"))
        let day = PacificDay(key: dateKey) ?? PacificDay(containing: chargedAt)
        let bucket = try charge.decode(String.self, forColumn: "bucket")
        let endpoint = try charge.decode(String.self, forColumn: "endpoint")
        let cost = QuotaLimits.saturatingSum(try charge.decode(Int.self, forColumn: "units"),
                                             try charge.decode(Int.self, forColumn: "settled"))
        if try charge.decode(Bool.self, forColumn: "refunded") { return .alreadyRefunded }

        // A reset of that window already gave the units back: never refund below zero.
        let current = try db.cachedStatement(sql: "SELECT units FROM quota_usage WHERE pacific_date = ? AND bucket = ? AND endpoint = ?").fetchValue(arguments: [dateKey, bucket, endpoint]).int ?? 0
        // Nor below zero for the bucket: a reconciliation may have lowered it under this endpoint's total.
        let bucketTotal = try bucketUnits(db, bucket: bucket, key: dateKey)
        let units = QuotaStateMachine.refundUnits(cost: cost, endpointUnits: current, bucketUnits: bucketTotal)
        try appendEvent(
            db, atMs: at.millisecondsSince1970, key: dateKey, bucket: bucket, endpoint: endpoint, kind: .refund,
            units: -units, reservationID: reservationID, detail: reason
        )
        if units != 0 {
            try db.cachedStatement(sql: "UPDATE quota_usage SET units = units - ? WHERE pacific_date = ? AND bucket = ? AND endpoint = ?").execute(arguments: [units, dateKey, bucket, endpoint])
        }
        try refundAdditional(db, reservationID: reservationID, at: at, reason: reason)
        return .refunded(units: units, day: day)
    }

    /// Closes a bucket until the next Pacific midnight. See ``QuotaStorage/markQuotaExhausted(bucket:configuredLimit:endpoint:at:)``.
    static func markExhausted(
        _ db: Database, bucket: String, configuredLimit: Int, endpoint: String?, at: Date
    ) throws -> QuotaExhaustion {
        let nowMs = at.millisecondsSince1970
        let (row, _) = try synchronizeBucket(db, bucket, configuredLimit: configuredLimit, window: nil, nowMs: nowMs)
        let (exhaustion, writes) = QuotaStateMachine.markExhausted(row, bucket: bucket, endpoint: endpoint,
                                                                    now: Date(millisecondsSince1970: nowMs))
        try apply(db, writes, bucket: bucket, nowMs: nowMs)
        return exhaustion
    }

    /// A day's usage rows. See ``QuotaStorage/quotaUsage(on:)``.
    static func usage(_ db: Database, on day: PacificDay) throws -> [QuotaUsage] {
        try db.cachedStatement(sql: "SELECT bucket, endpoint, units, calls FROM quota_usage WHERE pacific_date = ? ORDER BY bucket, endpoint").fetchAll(arguments: [day.key]).map { row in
            QuotaUsage(
                day: day, bucket: try row.decode(String.self, forColumn: "bucket"),
                endpoint: try row.decode(String.self, forColumn: "endpoint"),
                units: try row.decode(Int.self, forColumn: "units"), calls: try row.decode(Int.self, forColumn: "calls")
            )
        }
    }

    /// Calls that carried a batch, per bucket and endpoint. See ``QuotaStorage/quotaBatchUsage(on:)``.
    static func batchUsage(_ db: Database, on day: PacificDay) throws -> [QuotaBatchUsage] {
        let charges = try db.fetchAll(sql: """
            SELECT bucket, endpoint, detail, COUNT(*) AS charges
            FROM quota_events WHERE pacific_date = ? AND kind = 'charge' AND detail LIKE ?
            GROUP BY bucket, endpoint, detail
            """, arguments: [day.key, QuotaRules.batchDetailPattern]).map { row in
            (bucket: try row.decode(String.self, forColumn: "bucket"), endpoint: try row.decode(String.self, forColumn: "endpoint"),
             detail: try row.decode(String.self, forColumn: "detail"), count: try row.decode(Int.self, forColumn: "charges"))
        }
        return QuotaBatchUsage.tally(on: day, charges)
    }

    /// A bucket's status, read only. See ``QuotaStorage/quotaBucketStatus(bucket:configuredLimit:at:)``.
    /// - Parameter window: The bucket's window; the one stored with it when nil.
    static func status(
        _ db: Database, bucket: String, configuredLimit: Int, window: QuotaWindow? = nil, at: Date
    ) throws -> QuotaBucketStatus {
        let row = try bucketRow(db, bucket, configuredLimit: configuredLimit)
        let window = window ?? row?.storedWindow ?? .pacificDay
        let period = row?.period(in: window, at: at) ?? window.naturalPeriod(containing: at)
        return QuotaBucketStatus(
            bucket: bucket, day: PacificDay(containing: at), limit: row?.limit ?? configuredLimit,
            limitSource: row?.limitSource ?? .configuration,
            unitsUsed: try bucketUnits(db, bucket: bucket, in: period),
            isExhausted: row?.isExhausted(in: period, nowMs: at.millisecondsSince1970) ?? false,
            window: window, period: period
        )
    }

    /// Every bucket in its stored window. See ``QuotaStorage/quotaWindows(at:)``.
    static func windows(_ db: Database, at: Date) throws -> [QuotaBucketStatus] {
        let buckets = try db.fetchAll(sql: "SELECT bucket, daily_limit FROM quota_buckets ORDER BY bucket")
        return try buckets.map { row in
            try status(db, bucket: try row.decode(String.self, forColumn: "bucket"),
                       configuredLimit: QuotaLimits.clamped(try row.decode(Int.self, forColumn: "daily_limit")), at: at)
        }
    }

    /// Sets or clears an operator's limit. See ``QuotaStorage/setQuotaLimit(bucket:limit:configuredLimit:at:)``.
    static func setLimit(
        _ db: Database, bucket: String, limit: Int?, configuredLimit: Int, at: Date
    ) throws -> QuotaBucketStatus {
        let newLimit = limit ?? configuredLimit
        try QuotaRules.validateNewLimit(newLimit)
        let source: QuotaBucketStatus.LimitSource = limit == nil ? .configuration : .admin
        let nowMs = at.millisecondsSince1970
        let previous = try bucketRow(db, bucket, configuredLimit: configuredLimit)
        try db.cachedStatement(sql: """
            INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (bucket) DO UPDATE SET daily_limit = excluded.daily_limit,
                limit_source = excluded.limit_source, updated_at_ms = excluded.updated_at_ms
            """).execute(arguments: [bucket, newLimit, source.rawValue, nowMs])
        let from = previous.map { "\($0.limit) (\($0.limitSource.rawValue))" } ?? "none"
        try appendEvent(
            db, atMs: nowMs, day: PacificDay(containing: at), bucket: bucket, endpoint: "*", kind: .limit, units: 0,
            detail: "daily limit \(from) → \(newLimit) (\(source.rawValue))"
        )
        return try status(db, bucket: bucket, configuredLimit: configuredLimit, at: at)
    }

    /// Gives back a day's units with `reset` events. See ``QuotaStorage/resetQuotaDay(_:bucket:at:)``.
    ///
    /// A bucket counted over another window than the Pacific day has its current window reset
    /// when `day` is today.
    static func resetDay(_ db: Database, _ day: PacificDay, bucket: String, at: Date) throws -> QuotaDayReset {
        let nowMs = at.millisecondsSince1970
        let isToday = day == PacificDay(containing: at)
        let row = try bucketRow(db, bucket, configuredLimit: 0)
        let window = row?.storedWindow ?? .pacificDay
        let period = if isToday, !window.isPacificDay, let row { row.period(in: window, at: at) } else { QuotaPeriod(day) }
        let rows = try db.cachedStatement(sql: "SELECT pacific_date, endpoint, units FROM quota_usage WHERE pacific_date BETWEEN ? AND ? AND bucket = ? AND units <> 0").fetchAll(arguments: [period.firstKey, period.key, bucket])
        var cleared: [String: Int] = [:]
        for usage in rows {
            let key = try usage.decode(String.self, forColumn: "pacific_date")
            let endpoint = try usage.decode(String.self, forColumn: "endpoint")
            let units = try usage.decode(Int.self, forColumn: "units")
            // A total edited by hand to Int.min has no negation: refuse rather than trap.
            guard units != Int.min else {
                throw StoreRefusal.invalidArgument("the stored usage of \(endpoint) on \(key) is out of range")
            }
            cleared[endpoint] = QuotaLimits.saturatingSum(cleared[endpoint] ?? 0, units)
            try appendEvent(
                db, atMs: nowMs, key: key, bucket: bucket, endpoint: endpoint, kind: .reset, units: -units,
                detail: "day reset by an operator"
            )
            try db.cachedStatement(sql: "UPDATE quota_usage SET units = 0 WHERE pacific_date = ? AND bucket = ? AND endpoint = ?").execute(arguments: [key, bucket, endpoint])
        }
        let clearsMark = isToday && row?.isExhausted(in: period, nowMs: nowMs) == true
        if row != nil {
            // The day starts over: its warnings may be logged again, and today's server mark is lifted.
            try db.cachedStatement(sql: """
                UPDATE quota_buckets
                SET warned_percent = CASE WHEN warned_date = ? THEN 0 ELSE warned_percent END,
                    exhausted_until_ms = CASE WHEN ? THEN NULL ELSE exhausted_until_ms END,
                    updated_at_ms = ?
                WHERE bucket = ?
                """).execute(arguments: [period.key, clearsMark ? 1 : 0, nowMs, bucket])
        }
        if cleared.isEmpty || clearsMark {
            // The operator's action is on record even when it changed no total.
            try appendEvent(
                db, atMs: nowMs, key: period.key, bucket: bucket, endpoint: "*", kind: .reset, units: 0,
                detail: clearsMark ? "day reset by an operator; exhausted mark lifted" : "day reset by an operator; nothing to clear"
            )
        }
        return QuotaDayReset(day: day, bucket: bucket, unitsCleared: cleared, clearedExhaustedMark: clearsMark)
    }

    /// Totals that differ from their events. See ``QuotaStorage/quotaLedgerDiscrepancies()``.
    ///
    /// Reads both tables in full: an audit, not a hot path.
    static func discrepancies(_ db: Database) throws -> [QuotaLedgerDiscrepancy] {
        try db.cachedStatement(sql: """
            WITH sums AS (
                SELECT pacific_date, bucket, endpoint, SUM(units) AS units
                FROM quota_events GROUP BY pacific_date, bucket, endpoint
            )
            SELECT sums.pacific_date, sums.bucket, sums.endpoint, sums.units AS event_units,
                   COALESCE(usage.units, 0) AS usage_units
            FROM sums LEFT JOIN quota_usage AS usage
              ON usage.pacific_date = sums.pacific_date AND usage.bucket = sums.bucket AND usage.endpoint = sums.endpoint
            WHERE sums.units <> COALESCE(usage.units, 0)
            UNION ALL
            SELECT usage.pacific_date, usage.bucket, usage.endpoint, 0, usage.units
            FROM quota_usage AS usage
            WHERE usage.units <> 0 AND NOT EXISTS (
                SELECT 1 FROM quota_events AS event
                WHERE event.pacific_date = usage.pacific_date AND event.bucket = usage.bucket
                  AND event.endpoint = usage.endpoint)
            ORDER BY 1, 2, 3
            """).fetchAll().map { row in
            QuotaLedgerDiscrepancy(
                pacificDate: try row.decode(String.self, forColumn: "pacific_date"),
                bucket: try row.decode(String.self, forColumn: "bucket"),
                endpoint: try row.decode(String.self, forColumn: "endpoint"),
                eventUnits: try row.decode(Int.self, forColumn: "event_units"),
                usageUnits: try row.decode(Int.self, forColumn: "usage_units")
            )
        }
    }

    // MARK: Parts

    /// The bucket's row with the limit in force: an operator's limit wins; otherwise the configured one.
    static func bucketRow(_ db: Database, _ bucket: String, configuredLimit: Int) throws -> QuotaBucketRow? {
        try bucketRow(db, bucket, configuredLimit: configuredLimit, unitsIn: nil)?.row
    }

    /// The bucket's row, and the units it used in `period` read in the same statement when one is given.
    static func bucketRow(_ db: Database, _ bucket: String, configuredLimit: Int, unitsIn period: QuotaPeriod?)
        throws -> (row: QuotaBucketRow, unitsUsed: Int?)? {
        let found = if let period {
            try db.cachedStatement(sql: """
                SELECT daily_limit, limit_source, exhausted_until_ms, warned_date, warned_percent,
                       window_spec, window_key, window_first_key, window_end_ms, announced_key, announced_reset_ms,
                       paced_at_ms, paced_key,
                       (SELECT COALESCE(SUM(MIN(MAX(units, -?), ?)), 0) FROM quota_usage
                        WHERE pacific_date BETWEEN ? AND ? AND bucket = quota_buckets.bucket) AS units_used
                FROM quota_buckets WHERE bucket = ?
                """).fetchOne(arguments: [QuotaLimits.maximumUnits, QuotaLimits.maximumUnits, period.firstKey, period.key,
                                          bucket])
        } else {
            try db.cachedStatement(sql: """
                SELECT daily_limit, limit_source, exhausted_until_ms, warned_date, warned_percent,
                       window_spec, window_key, window_first_key, window_end_ms, announced_key, announced_reset_ms,
                       paced_at_ms, paced_key
                FROM quota_buckets WHERE bucket = ?
                """).fetchOne(arguments: [bucket])
        }
        guard let row = found else { return nil }
        // The table's CHECK allows only these two sources.
        let source = QuotaBucketStatus.LimitSource(rawValue: try row.decode(String.self, forColumn: "limit_source"))
            ?? .configuration
        return (QuotaBucketRow(
            // A limit stored before limits were checked (or by hand) is read as the nearest allowed one.
            storedLimit: QuotaLimits.clamped(try row.decode(Int.self, forColumn: "daily_limit")),
            limitSource: source,
            configuredLimit: configuredLimit,
            exhaustedUntilMs: try row.decode(Int64?.self, forColumn: "exhausted_until_ms"),
            warnedKey: try row.decode(String?.self, forColumn: "warned_date"),
            warnedPercent: try row.decode(Int.self, forColumn: "warned_percent"),
            windowSpecification: try row.decode(String.self, forColumn: "window_spec"),
            windowKey: try row.decode(String?.self, forColumn: "window_key"),
            windowFirstKey: try row.decode(String?.self, forColumn: "window_first_key"),
            windowEndMs: try row.decode(Int64?.self, forColumn: "window_end_ms"),
            announcedKey: try row.decode(String?.self, forColumn: "announced_key"),
            announcedResetMs: try row.decode(Int64?.self, forColumn: "announced_reset_ms"),
            pacedAtMs: try row.decode(Int64?.self, forColumn: "paced_at_ms"),
            pacedKey: try row.decode(String?.self, forColumn: "paced_key")
        ), period == nil ? nil : try row.decode(Int.self, forColumn: "units_used"))
    }

    /// Creates the bucket's row from the configuration, or brings a configuration-owned limit and
    /// the window up to date, as ``QuotaStateMachine/synchronize(_:configuredLimit:window:now:)`` says.
    /// - Parameters:
    ///   - window: The configured window; nil keeps the stored one (or the Pacific day for a new row).
    ///   - period: A window whose usage to read with the row; nil in the result for a new row.
    static func synchronizeBucket(
        _ db: Database, _ bucket: String, configuredLimit: Int, window: QuotaWindow?, nowMs: Int64,
        unitsIn period: QuotaPeriod? = nil
    ) throws -> (row: QuotaBucketRow, unitsUsed: Int?) {
        let synchronized = try synchronizeStoredBucket(db, bucket, configuredLimit: configuredLimit, window: window,
                                                       nowMs: nowMs, unitsIn: period)
        return (synchronized.row, synchronized.unitsUsed)
    }

    /// ``synchronizeBucket(_:_:configuredLimit:window:nowMs:unitsIn:)``, which also says what was
    /// stored and whether it had to be written.
    /// - Parameter remembered: The stored row and usage as the last admission left them (see
    ///   ``RememberedRows``), used instead of reading the file.
    static func synchronizeStoredBucket(
        _ db: Database, _ bucket: String, configuredLimit: Int, window: QuotaWindow?, nowMs: Int64,
        unitsIn period: QuotaPeriod?, remembered: RememberedRows.QuotaBucketRead? = nil
    ) throws -> (stored: QuotaBucketRow?, row: QuotaBucketRow, unitsUsed: Int?, wrote: Bool) {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        let stored = try remembered.map { (row: $0.row, unitsUsed: Optional($0.unitsUsed)) }
            ?? bucketRow(db, bucket, configuredLimit: configuredLimit, unitsIn: period)
        let (row, writes) = QuotaStateMachine.synchronize(stored?.row, configuredLimit: configuredLimit, window: window,
                                                          now: Date(millisecondsSince1970: nowMs))
        try apply(db, writes, bucket: bucket, nowMs: nowMs)
        return (stored?.row, row, stored?.unitsUsed, !writes.isEmpty)
    }

    /// Units the bucket used on a Pacific day, all endpoints together: a primary-key range of `quota_usage`.
    static func bucketUnits(_ db: Database, bucket: String, day: PacificDay) throws -> Int {
        try bucketUnits(db, bucket: bucket, key: day.key)
    }

    /// Units the bucket used under one window key.
    static func bucketUnits(_ db: Database, bucket: String, key: String) throws -> Int {
        try bucketUnits(db, bucket: bucket, in: QuotaPeriod(key: key, start: .distantPast, end: .distantFuture))
    }

    /// Units the bucket used in a window, all endpoints together: a primary-key range of `quota_usage`.
    static func bucketUnits(_ db: Database, bucket: String, in period: QuotaPeriod) throws -> Int {
        try db.cachedStatement(sql: // Each total is clamped to the allowed range before summing, so SUM cannot overflow
            // (SQLite raises "integer overflow") however the file was edited: totals that charges
            // wrote are always in range and unchanged by it.
            "SELECT COALESCE(SUM(MIN(MAX(units, -?), ?)), 0) FROM quota_usage WHERE pacific_date BETWEEN ? AND ? AND bucket = ?").fetchValue(arguments: [QuotaLimits.maximumUnits, QuotaLimits.maximumUnits, period.firstKey, period.key, bucket]).int ?? 0
    }

    /// Appends an event under a Pacific day's key and returns its id.
    @discardableResult
    static func appendEvent(
        _ db: Database, atMs: Int64, day: PacificDay, bucket: String, endpoint: String, kind: QuotaEventKind, units: Int,
        reservationID: Int64? = nil, detail: String? = nil
    ) throws -> Int64 {
        try appendEvent(db, atMs: atMs, key: day.key, bucket: bucket, endpoint: endpoint, kind: kind, units: units,
                        reservationID: reservationID, detail: detail)
    }

    /// Appends an event under a window's key and returns its id.
    @discardableResult
    static func appendEvent(
        _ db: Database, atMs: Int64, key: String, bucket: String, endpoint: String, kind: QuotaEventKind, units: Int,
        reservationID: Int64? = nil, detail: String? = nil
    ) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(atMs, key, bucket, endpoint, kind.rawValue, units, reservationID, detail)
        return db.lastInsertedRowID
    }
}
