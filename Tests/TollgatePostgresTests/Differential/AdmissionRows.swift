import Foundation
import PostgresNIO
import TollgateCore

/// The rows `tollgate_admit_batch` reads and writes for one bucket and endpoint at one instant, read
/// on the test's connection; and what the quota machine decides from them and makes of them.
struct AdmissionRows: CustomStringConvertible {
    /// The totals the function changes, in the instant's Pacific day.
    struct Ledger: Hashable {
        var dayUnits = 0
        var warnedPercent = 0
        var usageUnits = 0
        var usageCalls = 0
        var throttleInWindow = 0
    }

    /// One `charge` event.
    struct ChargeEvent: Hashable {
        var key: String
        var endpoint: String
        var units: Int
    }

    /// One cost the machine admits where the function should, and the writes it asks for.
    struct Expected: Hashable {
        var cost: Int
        var key: String
        var usedAfter: Int
        var limit: Int
        var warningsCrossed: [Int]
        var charges: [QuotaWrite]
    }

    var bucket: QuotaBucketRow?
    var ledger: Ledger
    var throttle: (requests: Int, windowMs: Int)?

    var description: String {
        let row = bucket.map { row in
            "limit \(row.limit) (stored \(row.storedLimit), \(row.limitSource.rawValue)), window \(row.windowSpecification), "
                + "exhausted until \(row.exhaustedUntilMs.map(String.init) ?? "-"), announced "
                + "\(row.announcedKey ?? "-")@\(row.announcedResetMs.map(String.init) ?? "-")"
        } ?? "no bucket row"
        return "\(row); \(ledger)"
    }

    /// Reads the rows at `now`, the bucket's limit rule applied for `configuredLimit`.
    static func read(
        _ connection: PostgresConnection, bucket: String, endpoint: String, now: Date, configuredLimit: Int
    ) async throws -> AdmissionRows {
        let logger = PostgresTestDatabase.quietLogger
        let key = PacificDay(containing: now).key
        let nowMs = now.millisecondsSince1970
        // One statement, not four: the test reads these rows twice per batch, 2,000 scenarios long.
        let rows = try await connection.query("""
            SELECT b.daily_limit, b.limit_source, b.exhausted_until_ms, b.window_spec, b.window_key, b.window_first_key,
                   b.window_end_ms, b.announced_key, b.announced_reset_ms, b.paced_at_ms, b.paced_key,
                   d.units, d.warned_percent, u.units, u.calls, t.request_limit, t.window_ms, t.admitted_at_ms
            FROM (SELECT 1) AS one
            LEFT JOIN quota_buckets b ON b.bucket = \(bucket)
            LEFT JOIN quota_bucket_days d ON d.pacific_date = \(key) AND d.bucket = \(bucket)
            LEFT JOIN quota_usage u ON u.pacific_date = \(key) AND u.bucket = \(bucket) AND u.endpoint = \(endpoint)
            LEFT JOIN throttle_limits t ON t.endpoint = \(endpoint)
            """, logger: logger).collect()
        guard let row = rows.first?.makeRandomAccess() else { return AdmissionRows(bucket: nil, ledger: Ledger(), throttle: nil) }
        var found: QuotaBucketRow?
        if let storedLimit = try row[0].decode(Int?.self) {
            found = QuotaBucketRow(
                storedLimit: QuotaLimits.clamped(storedLimit),
                limitSource: QuotaBucketStatus.LimitSource(rawValue: try row[1].decode(String.self)) ?? .configuration,
                configuredLimit: configuredLimit, exhaustedUntilMs: try row[2].decode(Int64?.self),
                windowSpecification: try row[3].decode(String.self), windowKey: try row[4].decode(String?.self),
                windowFirstKey: try row[5].decode(String?.self), windowEndMs: try row[6].decode(Int64?.self),
                announcedKey: try row[7].decode(String?.self), announcedResetMs: try row[8].decode(Int64?.self),
                pacedAtMs: try row[9].decode(Int64?.self), pacedKey: try row[10].decode(String?.self)
            )
        }
        var ledger = Ledger()
        ledger.dayUnits = try row[11].decode(Int?.self) ?? 0
        ledger.warnedPercent = try row[12].decode(Int?.self) ?? 0
        ledger.usageUnits = try row[13].decode(Int?.self) ?? 0
        ledger.usageCalls = try row[14].decode(Int?.self) ?? 0
        var throttle: (requests: Int, windowMs: Int)?
        if let requests = try row[15].decode(Int?.self) {
            let windowMs = try row[16].decode(Int.self)
            throttle = (requests, windowMs)
            ledger.throttleInWindow = try row[17].decode([Int64].self).filter { $0 > nowMs - Int64(windowMs) }.count
        }
        return AdmissionRows(bucket: found, ledger: ledger, throttle: throttle)
    }

    /// The costs, from the first, that the function must admit: those the quota machine admits in
    /// order, where the function's stated domain holds (a closed circuit, a throttle row of the
    /// limits asked, room in its window, a bucket row of the Pacific day whose configured limit is
    /// current, whose day no reset announced today moved, no server's mark closing it, a cost of at
    /// least one unit). Outside it the function leaves every cost to the full path, which is
    /// the machine itself.
    static func machinePrefix(
        _ rows: AdmissionRows, endpoint: String, costs: [Int], configuredLimit: Int, requests: Int, windowMs: Int,
        warnings: [Int], now: Date
    ) -> [Expected] {
        let natural = QuotaWindow.pacificDay.naturalPeriod(containing: now)
        guard let throttle = rows.throttle, throttle.requests == requests, throttle.windowMs == windowMs,
              let stored = rows.bucket,
              !(stored.limitSource == .configuration && stored.storedLimit != configuredLimit),
              !stored.isExhausted(in: natural, nowMs: now.millisecondsSince1970),
              stored.windowSpecification == QuotaWindow.pacificDay.specification,
              (stored.announcedResetMs ?? .min) <= natural.start.millisecondsSince1970
        else { return [] }
        let (row, _) = QuotaStateMachine.synchronize(stored, configuredLimit: configuredLimit, window: .pacificDay, now: now)
        let period = row.period(in: .pacificDay, at: now)
        var used = rows.ledger.dayUnits, warned = rows.ledger.warnedPercent
        var expected: [Expected] = []
        for (position, cost) in costs.enumerated() {
            guard rows.ledger.throttleInWindow + position < requests, cost >= 1 else { break }
            let decision = QuotaStateMachine.decide(QuotaStateMachine.Admission(
                endpoint: endpoint, cost: cost, row: row, period: period, used: used, now: now,
                warningPercents: warnings, alreadyWarned: warned
            ))
            switch decision.verdict {
            case .admit(let usedAfter, let crossed):
                expected.append(Expected(cost: cost, key: period.key, usedAfter: usedAfter, limit: decision.limit,
                                         warningsCrossed: crossed, charges: decision.charges))
                used = usedAfter
                warned = max(warned, crossed.last ?? 0)
            case .refuse, .wait:
                return expected
            }
        }
        return expected
    }

    /// The rows once the machine's charges for `expected` are written.
    static func applying(_ expected: [Expected], to rows: AdmissionRows, windowMs: Int, now: Date) -> AdmissionRows {
        var result = rows
        for admitted in expected {
            for write in admitted.charges {
                switch write {
                case .charge(_, _, let units):
                    result.ledger.dayUnits += units
                    result.ledger.usageUnits += units
                    result.ledger.usageCalls += 1
                case .recordWarning(_, let percent):
                    result.ledger.warnedPercent = max(result.ledger.warnedPercent, percent)
                case .createBucket, .storeLimit, .changeWindow, .noteWindow, .event, .markPaced, .announceReset,
                     .followAnnouncement, .markExhausted:
                    // Not a charge's: the fast path admits no paced bucket and changes no row of the bucket.
                    break
                }
            }
        }
        result.ledger.throttleInWindow += expected.count
        return result
    }

    /// The `charge` events with these ids, in id order.
    static func chargeEvents(_ connection: PostgresConnection, ids: [Int64]) async throws -> [ChargeEvent] {
        try await connection.query("""
            SELECT pacific_date, endpoint, units FROM quota_events WHERE id = ANY(\(ids)) AND kind = 'charge' ORDER BY id
            """, logger: PostgresTestDatabase.quietLogger).collect().map { row in
            let (key, endpoint, units) = try row.decode((String, String, Int).self)
            return ChargeEvent(key: key, endpoint: endpoint, units: units)
        }
    }
}
