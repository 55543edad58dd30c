import Foundation
import Logging
import Testing
import TollgateTestSupport
import Tollgate

/// Extreme limits, costs and usages: before the limits were checked, a limit of 10¹⁷ or a cost
/// of `Int.max` after any usage trapped (`arithmetic overflow` in QuotaTable.swift) and killed the
/// process that charged.
@Suite("Quota ledger: extreme limits, costs and usage never trap")
struct QuotaOverflowTests {
    static let maximum = QuotaLimits.maximumUnits
    static let now = utc("2026-11-21T20:00:00Z")
    static let quiet = { var logger = Logger(label: "quota-overflow"); logger.logLevel = .critical; return logger }()

    /// The values every property runs over, plus seeded random ones across the whole `Int` range
    /// and across the allowed range.
    static func extremeValues(seed: UInt64) -> [Int] {
        var generator = SeededGenerator(seed: seed)
        var values = [Int.max, Int.max - 1, Int.min, Int.min + 1, -1, 0, 1, maximum - 1, maximum, maximum + 1]
        values += (0..<4).map { _ in Int.random(in: Int.min...Int.max, using: &generator) }
        values += (0..<4).map { _ in Int.random(in: 0...maximum, using: &generator) }
        return values
    }

    @Test("every limit is stored when in range and refused with a typed error otherwise, through the store and the ledger")
    func limits() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let ledger = try QuotaLedger(
            storage: store, configuration: QuotaConfiguration(bucketLimits: ["b": 100], defaultBucket: "b"),
            clock: ManualClock(now: Self.now), logger: Self.quiet
        )
        for limit in Self.extremeValues(seed: 1) {
            let allowed = QuotaLimits.allowedUnits.contains(limit)
            do {
                let status = try await store.setQuotaLimit(bucket: "b", limit: limit, configuredLimit: 100, at: Self.now)
                #expect(allowed, "the store accepted \(limit)")
                #expect(status.limit == limit)
            } catch let error as StoreRefusal {
                #expect(!allowed, "the store refused \(limit): \(error)")
            }
            do {
                let status = try await ledger.setLimit(bucket: "b", limit: limit)
                #expect(allowed, "the ledger accepted \(limit)")
                #expect(status.limit == limit)
            } catch let error as QuotaLedgerError {
                #expect(!allowed, "the ledger refused \(limit): \(error)")
                #expect(error.description.contains("1000000000000") || error.description.contains("negative"))
            }
            // A configured limit out of range is refused when the ledger is made, not when it charges.
            let configuration = QuotaConfiguration(bucketLimits: ["b": limit], defaultBucket: "b")
            let reserveAtConfiguredLimit = {
                _ = try await store.reserveQuota(QuotaReservationRequest(
                    bucket: "configured-\(limit)", endpoint: "e", cost: 0, configuredLimit: limit, at: Self.now
                ))
            }
            if allowed {
                #expect(throws: Never.self) { try configuration.validate() }
                await #expect(throws: Never.self) { try await reserveAtConfiguredLimit() }
            } else {
                #expect(throws: QuotaLedgerError.self) { try configuration.validate() }
                await #expect(throws: StoreRefusal.self) { try await reserveAtConfiguredLimit() }
            }
        }
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }

    @Test("every cost against every limit and usage: no trap, a typed error when out of range, a refusal past the limit, and the totals equal the events",
          arguments: [1, 2, 3] as [UInt64])
    func costs(seed: UInt64) async throws {
        let values = Self.extremeValues(seed: seed)
        let limits = values.filter { QuotaLimits.allowedUnits.contains($0) }
        for limit in limits {
            let store = try SQLiteStore(location: .inMemory)
            let clock = ManualClock(now: Self.now)
            let ledger = try QuotaLedger(
                storage: store, configuration: QuotaConfiguration(bucketLimits: ["b": limit], defaultBucket: "b"),
                clock: clock, logger: Self.quiet
            )
            var used = 0
            for cost in values {
                let allowed = QuotaLimits.allowedUnits.contains(cost)
                do {
                    let reservation = try await ledger.reserve(endpoint: "e.list", cost: cost)
                    #expect(allowed && used + cost <= limit, "charged \(cost) with \(used)/\(limit) used")
                    #expect(reservation.cost == cost)
                    used += cost
                } catch let error as QuotaLedgerError {
                    #expect(!allowed, "refused the allowed cost \(cost): \(error)")
                } catch TollgateError.quotaExceeded(_, let asked, let remaining, _) {
                    #expect(allowed && used + cost > limit, "refused \(cost) with \(used)/\(limit) used")
                    #expect(asked == cost)
                    #expect(remaining == limit - used)
                }
                // The store refuses the same out-of-range costs itself, for callers that skip the ledger.
                if !allowed {
                    await #expect(throws: StoreRefusal.self) {
                        _ = try await store.reserveQuota(QuotaReservationRequest(
                            bucket: "b", endpoint: "e.list", cost: cost, configuredLimit: limit, at: Self.now
                        ))
                    }
                }
            }
            let status = try await ledger.status(bucket: "b")
            #expect(status.unitsUsed == used)
            #expect(status.remaining == limit - used)
            #expect(try await ledger.discrepancies().isEmpty)
            let events = try await store.read { db in
                try db.fetchValue(sql: "SELECT COALESCE(SUM(units), 0) FROM quota_events WHERE endpoint = 'e.list'").int
            }
            #expect(events == used)
        }
    }

    @Test("a file that already holds out-of-range numbers (an old limit of 10¹⁷, a total edited to Int.max) is read without a trap")
    func storedExtremes() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("extreme.sqlite"))
        let ledger = try QuotaLedger(
            storage: store, configuration: QuotaConfiguration(bucketLimits: ["b": 100], defaultBucket: "b"),
            clock: ManualClock(now: Self.now), logger: Self.quiet
        )
        try await ledger.reserve(endpoint: "e.list", cost: 1)
        // What an older Tollgate accepted, and what a hand edit can leave.
        try await store.write { db in
            try db.execute(sql: "UPDATE quota_buckets SET daily_limit = 100000000000000000, limit_source = 'admin'")
        }
        let status = try await ledger.status(bucket: "b")
        #expect(status.limit == Self.maximum, "an out-of-range stored limit is read as the maximum")
        let charged = try await ledger.reserve(endpoint: "e.list", cost: 5)
        #expect(charged.cost == 5)
        await #expect(throws: QuotaLedgerError.self) { try await ledger.reserve(endpoint: "e.list", cost: Int.max) }

        for total in [Int.max, Int.max - 1, Int.min, Int.min + 1] {
            try await store.write { db in
                try db.execute(sql: "UPDATE quota_usage SET units = ? WHERE endpoint = 'e.list'", arguments: [total])
            }
            // No trap whatever the ledger now says; a charge that cannot be added is a typed error or a refusal.
            do {
                _ = try await ledger.reserve(endpoint: "e.list", cost: Self.maximum)
                Issue.record("a charge was added to a total of \(total)")
            } catch is StoreRefusal {
            } catch is TollgateError {
            }
            _ = try await ledger.status(bucket: "b").remaining
            _ = try await store.dashboardSnapshot(at: Self.now)
            _ = try await store.quotaUsage(on: PacificDay(containing: Self.now))
        }
        // A reset repairs the day, with an event for the units it gives back.
        try await store.write { db in try db.execute(sql: "UPDATE quota_usage SET units = 7 WHERE endpoint = 'e.list'") }
        let reset = try await ledger.resetDay(PacificDay(containing: Self.now), bucket: "b")
        #expect(reset.totalUnitsCleared == 7)
        #expect(try await ledger.status(bucket: "b").unitsUsed == 0)
    }

    @Test("warning levels are computed without overflow at the maximum limit")
    func warningsAtTheMaximum() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let ledger = try QuotaLedger(
            storage: store,
            configuration: QuotaConfiguration(bucketLimits: ["b": Self.maximum], defaultBucket: "b", warningPercents: [80, 95]),
            clock: ManualClock(now: Self.now), logger: Self.quiet
        )
        try await ledger.reserve(endpoint: "e.list", cost: Self.maximum / 100 * 96)
        try await ledger.reserve(endpoint: "e.list", cost: Self.maximum / 100 * 4)
        await #expect(throws: TollgateError.self) { try await ledger.reserve(endpoint: "e.list", cost: 1) }
        #expect(try await ledger.remaining(bucket: "b") == 0)
        #expect(try await ledger.discrepancies().isEmpty)
    }
}
