import Foundation

/// The quota ledger's SQL, on a ``Database`` inside a transaction the caller opened.
///
/// Each `SQLiteStore` operation runs one of these in its own transaction; the gate's admission
/// composes ``reserve(_:_:)`` with the circuit's and the throttle's functions in one
/// `BEGIN IMMEDIATE` transaction. Every statement goes through the statement cache and a key or
/// index: the hot path (``reserve(_:_:)``) reads one bucket row and the day's usage rows of one
/// bucket (a primary-key range), and writes one event and one usage row.
enum QuotaTable {
    /// A `quota_buckets` row with the limit rule applied.
    struct BucketRow {
        /// The limit in force.
        var limit: Int
        /// The limit written in the row (differs from ``limit`` when the configuration changed).
        var storedLimit: Int
        var limitSource: QuotaBucketStatus.LimitSource
        var exhaustedUntilMs: Int64?
        var warnedDate: String?
        var warnedPercent: Int
        /// The units the bucket used on the day asked for with the row, when one was.
        var unitsUsed: Int? = nil

        /// The server's mark holds for the Pacific day it was set on, and only that day: it ends at
        /// that day's midnight, and a wall clock set back to an earlier day does not extend it.
        func isExhausted(on day: PacificDay) -> Bool {
            exhaustedUntilMs == day.nextReset.quotaMilliseconds
        }
    }

    // MARK: Operations

    /// Checks and charges, or refuses without writing a charge. See ``QuotaStorage/reserveQuota(_:)``.
    static func reserve(_ db: Database, _ request: QuotaReservationRequest) throws -> QuotaReservationOutcome {
        try QuotaRules.validateCost(request.cost, endpoint: request.endpoint)
        try QuotaRules.validateEndpoint(request.endpoint)
        let day = PacificDay(containing: request.at)
        let nowMs = request.at.quotaMilliseconds
        let bucket = try synchronizeBucket(db, request.bucket, configuredLimit: request.configuredLimit, nowMs: nowMs,
                                           day: day)
        let used = try bucket.unitsUsed ?? bucketUnits(db, bucket: request.bucket, day: day)
        func refusal(_ reason: QuotaRefusal.Reason) -> QuotaReservationOutcome {
            .refused(QuotaRefusal(
                reason: reason, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
                day: day, bucketUnitsUsed: used, limit: bucket.limit
            ))
        }
        if bucket.isExhausted(on: day) { return refusal(.exhaustedByServer) }
        // `used` is a sum read from the file: checked arithmetic, so no value in it can trap.
        let (usedAfter, overflow) = used.addingReportingOverflow(request.cost)
        guard !overflow, usedAfter <= bucket.limit else { return refusal(.overBudget) }
        // Every other bucket the call is charged in must be able to pay too: all or nothing.
        for charge in request.additionalCharges {
            if let refused = try checkAdditional(db, charge, request: request, day: day, nowMs: nowMs) {
                return .refused(refused)
            }
        }

        let reservationID = try appendEvent(
            db, atMs: nowMs, day: day, bucket: request.bucket, endpoint: request.endpoint, kind: .charge,
            units: request.cost
        )
        for charge in request.additionalCharges {
            try chargeAdditional(db, charge, endpoint: request.endpoint, reservationID: reservationID, day: day, nowMs: nowMs)
        }
        // The guard keeps the endpoint's total within range even when the file holds a total that
        // no charge could have made (edited by hand): then nothing is written and the whole
        // reservation, event included, rolls back with a typed error.
        try db.cachedStatement(sql: """
            INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, ?, ?, 1)
            ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units, calls = calls + 1
            WHERE quota_usage.units BETWEEN 0 AND ? - excluded.units
            """).execute(arguments: [day.key, request.bucket, request.endpoint, request.cost,
                  QuotaLimits.maximumUnits])
        guard db.changesCount == 1 else {
            throw StoreRefusal.invalidArgument(
                "the stored usage of \(request.endpoint) on \(day.key) is outside \(QuotaLimits.rangeDescription) units; "
                    + "the file was changed by hand. Reset the day (tollgate quota reset) to repair it"
            )
        }

        let crossed = try recordWarnings(
            db, bucket: request.bucket, row: bucket, day: day, usedAfter: usedAfter, percents: request.warningPercents
        )
        return .reserved(QuotaCharge(
            reservationID: reservationID, bucket: request.bucket, endpoint: request.endpoint, cost: request.cost,
            day: day, bucketUnitsUsed: usedAfter, limit: bucket.limit, warningsCrossed: crossed
        ))
    }

    /// Refunds a charge once. See ``QuotaStorage/refundQuota(reservationID:at:reason:)``.
    static func refund(_ db: Database, reservationID: Int64, at: Date, reason: String?) throws -> QuotaRefundOutcome {
        // The charge and whether it was refunded already, in one statement.
        guard let charge = try db.cachedStatement(sql: """
            SELECT pacific_date, bucket, endpoint, units,
                   EXISTS (SELECT 1 FROM quota_events AS refund
                           WHERE refund.reservation_id = charge.id AND refund.kind = 'refund') AS refunded
            FROM quota_events AS charge WHERE charge.id = ? AND charge.kind = 'charge'
            """).fetchOne(arguments: [reservationID]),
              let day = PacificDay(key: try charge.decode(String.self, forColumn: "pacific_date")), case let dateKey = day.key
        else {
            throw QuotaRules.unknownReservation(reservationID)
        }
        let bucket = try charge.decode(String.self, forColumn: "bucket")
        let endpoint = try charge.decode(String.self, forColumn: "endpoint")
        let cost = try charge.decode(Int.self, forColumn: "units")
        if try charge.decode(Bool.self, forColumn: "refunded") { return .alreadyRefunded }

        // A reset of that day already gave the units back: never refund below zero.
        let current = try db.cachedStatement(sql: "SELECT units FROM quota_usage WHERE pacific_date = ? AND bucket = ? AND endpoint = ?").fetchValue(arguments: [dateKey, bucket, endpoint]).int ?? 0
        // Nor below zero for the bucket: a reconciliation may have lowered it under this endpoint's total.
        let bucketTotal = try bucketUnits(db, bucket: bucket, day: day)
        let units = min(cost, max(current, 0), max(bucketTotal, 0))
        try appendEvent(
            db, atMs: at.quotaMilliseconds, day: day, bucket: bucket, endpoint: endpoint, kind: .refund,
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
        let day = PacificDay(containing: at)
        let nowMs = at.quotaMilliseconds
        let row = try synchronizeBucket(db, bucket, configuredLimit: configuredLimit, nowMs: nowMs)
        if row.isExhausted(on: day) {
            return QuotaExhaustion(bucket: bucket, until: day.nextReset, isNew: false)
        }
        try db.cachedStatement(sql: "UPDATE quota_buckets SET exhausted_until_ms = ?, updated_at_ms = ? WHERE bucket = ?").execute(arguments: [day.nextReset.quotaMilliseconds, nowMs, bucket])
        try appendEvent(
            db, atMs: nowMs, day: day, bucket: bucket, endpoint: endpoint ?? "*", kind: .exhausted, units: 0,
            detail: "the server said the daily quota is spent; closed until \(PacificDay.localTimeDescription(of: day.nextReset))"
        )
        return QuotaExhaustion(bucket: bucket, until: day.nextReset, isNew: true)
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

    /// A bucket's status, read only. See ``QuotaStorage/quotaBucketStatus(bucket:configuredLimit:at:)``.
    static func status(_ db: Database, bucket: String, configuredLimit: Int, at: Date) throws -> QuotaBucketStatus {
        let day = PacificDay(containing: at)
        let row = try bucketRow(db, bucket, configuredLimit: configuredLimit)
        return QuotaBucketStatus(
            bucket: bucket, day: day, limit: row?.limit ?? configuredLimit,
            limitSource: row?.limitSource ?? .configuration,
            unitsUsed: try bucketUnits(db, bucket: bucket, day: day),
            isExhausted: row?.isExhausted(on: day) ?? false
        )
    }

    /// Sets or clears an operator's limit. See ``QuotaStorage/setQuotaLimit(bucket:limit:configuredLimit:at:)``.
    static func setLimit(
        _ db: Database, bucket: String, limit: Int?, configuredLimit: Int, at: Date
    ) throws -> QuotaBucketStatus {
        let newLimit = limit ?? configuredLimit
        try QuotaRules.validateNewLimit(newLimit)
        let source: QuotaBucketStatus.LimitSource = limit == nil ? .configuration : .admin
        let nowMs = at.quotaMilliseconds
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
    static func resetDay(_ db: Database, _ day: PacificDay, bucket: String, at: Date) throws -> QuotaDayReset {
        let nowMs = at.quotaMilliseconds
        let rows = try db.cachedStatement(sql: "SELECT endpoint, units FROM quota_usage WHERE pacific_date = ? AND bucket = ? AND units <> 0").fetchAll(arguments: [day.key, bucket])
        var cleared: [String: Int] = [:]
        for row in rows {
            let endpoint = try row.decode(String.self, forColumn: "endpoint")
            let units = try row.decode(Int.self, forColumn: "units")
            // A total edited by hand to Int.min has no negation: refuse rather than trap.
            guard units != Int.min else {
                throw StoreRefusal.invalidArgument("the stored usage of \(endpoint) on \(day.key) is out of range")
            }
            cleared[endpoint] = units
            try appendEvent(
                db, atMs: nowMs, day: day, bucket: bucket, endpoint: endpoint, kind: .reset, units: -units,
                detail: "day reset by an operator"
            )
            try db.cachedStatement(sql: "UPDATE quota_usage SET units = 0 WHERE pacific_date = ? AND bucket = ? AND endpoint = ?").execute(arguments: [day.key, bucket, endpoint])
        }
        let isToday = day == PacificDay(containing: at)
        let row = try bucketRow(db, bucket, configuredLimit: 0)
        let clearsMark = isToday && row?.isExhausted(on: day) == true
        if row != nil {
            // The day starts over: its warnings may be logged again, and today's server mark is lifted.
            try db.cachedStatement(sql: """
                UPDATE quota_buckets
                SET warned_percent = CASE WHEN warned_date = ? THEN 0 ELSE warned_percent END,
                    exhausted_until_ms = CASE WHEN ? THEN NULL ELSE exhausted_until_ms END,
                    updated_at_ms = ?
                WHERE bucket = ?
                """).execute(arguments: [day.key, clearsMark ? 1 : 0, nowMs, bucket])
        }
        if cleared.isEmpty || clearsMark {
            // The operator's action is on record even when it changed no total.
            try appendEvent(
                db, atMs: nowMs, day: day, bucket: bucket, endpoint: "*", kind: .reset, units: 0,
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
    /// - Parameter day: A day whose usage to read with the row, in the same statement.
    static func bucketRow(_ db: Database, _ bucket: String, configuredLimit: Int, unitsOn day: PacificDay? = nil)
        throws -> BucketRow? {
        let found = if let day {
            try db.cachedStatement(sql: """
                SELECT daily_limit, limit_source, exhausted_until_ms, warned_date, warned_percent,
                       (SELECT COALESCE(SUM(MIN(MAX(units, -?), ?)), 0) FROM quota_usage
                        WHERE pacific_date = ? AND bucket = quota_buckets.bucket) AS units_used
                FROM quota_buckets WHERE bucket = ?
                """).fetchOne(arguments: [QuotaLimits.maximumUnits, QuotaLimits.maximumUnits, day.key, bucket])
        } else {
            try db.cachedStatement(sql: """
                SELECT daily_limit, limit_source, exhausted_until_ms, warned_date, warned_percent
                FROM quota_buckets WHERE bucket = ?
                """).fetchOne(arguments: [bucket])
        }
        guard let row = found else { return nil }
        // The table's CHECK allows only these two sources.
        let source = QuotaBucketStatus.LimitSource(rawValue: try row.decode(String.self, forColumn: "limit_source"))
            ?? .configuration
        // A limit stored before limits were checked (or by hand) is read as the nearest allowed one.
        let stored = QuotaLimits.clamped(try row.decode(Int.self, forColumn: "daily_limit"))
        return BucketRow(
            limit: source == .admin ? stored : configuredLimit,
            storedLimit: stored,
            limitSource: source,
            exhaustedUntilMs: try row.decode(Int64?.self, forColumn: "exhausted_until_ms"),
            warnedDate: try row.decode(String?.self, forColumn: "warned_date"),
            warnedPercent: try row.decode(Int.self, forColumn: "warned_percent"),
            unitsUsed: day == nil ? nil : try row.decode(Int.self, forColumn: "units_used")
        )
    }

    /// Creates the bucket's row from the configuration, or brings a configuration-owned limit up to
    /// date, recording either change as a `limit` event.
    /// - Parameter usageDay: A day whose usage to read with the row (``BucketRow/unitsUsed``).
    static func synchronizeBucket(
        _ db: Database, _ bucket: String, configuredLimit: Int, nowMs: Int64, day usageDay: PacificDay? = nil
    ) throws -> BucketRow {
        try QuotaRules.validateLimit(configuredLimit, bucket: bucket)
        let day = PacificDay(containing: Date(timeIntervalSince1970: TimeInterval(nowMs) / 1000))
        guard let row = try bucketRow(db, bucket, configuredLimit: configuredLimit, unitsOn: usageDay) else {
            try db.cachedStatement(sql: "INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms) VALUES (?, ?, 'configuration', ?)").execute(arguments: [bucket, configuredLimit, nowMs])
            try appendEvent(
                db, atMs: nowMs, day: day, bucket: bucket, endpoint: "*", kind: .limit, units: 0,
                detail: "daily limit \(configuredLimit) (configuration)"
            )
            return BucketRow(limit: configuredLimit, storedLimit: configuredLimit, limitSource: .configuration, warnedPercent: 0)
        }
        if row.limitSource == .configuration, row.storedLimit != configuredLimit {
            try db.cachedStatement(sql: "UPDATE quota_buckets SET daily_limit = ?, updated_at_ms = ? WHERE bucket = ?").execute(arguments: [configuredLimit, nowMs, bucket])
            try appendEvent(
                db, atMs: nowMs, day: day, bucket: bucket, endpoint: "*", kind: .limit, units: 0,
                detail: "daily limit \(row.storedLimit) → \(configuredLimit) (configuration)"
            )
        }
        return row
    }

    /// Units the bucket used on the day, all endpoints together: a primary-key range of `quota_usage`.
    static func bucketUnits(_ db: Database, bucket: String, day: PacificDay) throws -> Int {
        try db.cachedStatement(sql: // Each total is clamped to the allowed range before summing, so SUM cannot overflow
            // (SQLite raises "integer overflow") however the file was edited: totals that charges
            // wrote are always in range and unchanged by it.
            "SELECT COALESCE(SUM(MIN(MAX(units, -?), ?)), 0) FROM quota_usage WHERE pacific_date = ? AND bucket = ?").fetchValue(arguments: [QuotaLimits.maximumUnits, QuotaLimits.maximumUnits, day.key, bucket]).int ?? 0
    }

    /// Appends an event and returns its id.
    @discardableResult
    static func appendEvent(
        _ db: Database, atMs: Int64, day: PacificDay, bucket: String, endpoint: String, kind: QuotaEventKind, units: Int,
        reservationID: Int64? = nil, detail: String? = nil
    ) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [atMs, day.key, bucket, endpoint, kind.rawValue, units,
                  reservationID, detail])
        return db.lastInsertedRowID
    }

    /// Works out which warning levels this charge crossed first today, and records them so no other
    /// charge, in any process, reports them again that day.
    private static func recordWarnings(
        _ db: Database, bucket: String, row: BucketRow, day: PacificDay, usedAfter: Int, percents: [Int]
    ) throws -> [Int] {
        guard row.limit > 0, !percents.isEmpty else { return [] }
        let alreadyWarned = row.warnedDate == day.key ? row.warnedPercent : 0
        let crossed = QuotaRules.warningsCrossed(
            percents: percents, usedAfter: usedAfter, limit: row.limit, alreadyWarned: alreadyWarned
        )
        guard let highest = crossed.last else { return [] }
        try db.cachedStatement(sql: "UPDATE quota_buckets SET warned_date = ?, warned_percent = ? WHERE bucket = ?").execute(arguments: [day.key, highest, bucket])
        return crossed
    }
}

extension Date {
    /// Milliseconds since 1970, as the quota tables store times.
    var quotaMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
