import Foundation
import Testing
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

/// The quota ledger's store operations, written once and run against every available store
/// (SQLite always; PostgreSQL when TOLLGATE_POSTGRES_URL is set).
///
/// Times are now: PostgresStore takes the Pacific day from the database's clock, not from `at`.
@Suite("Quota store conformance")
struct QuotaConformanceTests {
    private func request(
        cost: Int, limit: Int = 100, bucket: String = "b", endpoint: String = "e.list",
        additionalCharges: [QuotaBucketCharge] = []
    ) -> QuotaReservationRequest {
        QuotaReservationRequest(
            bucket: bucket, endpoint: endpoint, cost: cost, configuredLimit: limit, warningPercents: [50, 90],
            at: Date(), additionalCharges: additionalCharges
        )
    }

    @Test("the calls that carried batches are counted per endpoint with the IDs they carried; plain calls are not",
          arguments: StoreBackend.available)
    func batchUsage(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            func charge(_ endpoint: String, batchOf ids: Int?) async throws -> PacificDay? {
                var charge = request(cost: 1, endpoint: endpoint)
                charge.detail = ids.map(QuotaRules.batchDetail(ids:))
                guard case .reserved(let reservation) = try await store.reserveQuota(charge) else { return nil }
                return reservation.day
            }
            let day = try #require(try await charge("e.list", batchOf: nil))
            _ = try await charge("e.list", batchOf: 49)
            _ = try await charge("e.list", batchOf: 49)
            _ = try await charge("e.list", batchOf: 7)
            _ = try await charge("f.list", batchOf: nil)
            _ = try await charge("g.list", batchOf: 2)
            // A detail the batch pattern matches that no batch wrote: neither a batch nor an error.
            var odd = request(cost: 1, endpoint: "f.list")
            odd.detail = "batch of many IDs"
            _ = try await store.reserveQuota(odd)
            let batches = try await store.quotaBatchUsage(on: day)
            #expect(batches == [
                QuotaBatchUsage(day: day, bucket: "b", endpoint: "e.list", batches: 3, ids: 105),
                QuotaBatchUsage(day: day, bucket: "b", endpoint: "g.list", batches: 1, ids: 2),
            ])
            #expect(try await store.quotaUsage(on: day).map(\.calls) == [4, 2, 1], "a batch is one call")
        }
    }

    @Test("charges up to the limit exactly, reports each warning once, and refuses past the limit without writing",
          arguments: StoreBackend.available)
    func reserveUpToTheLimit(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .reserved(let first) = try await store.reserveQuota(request(cost: 60)) else {
                Issue.record("refused")
                return
            }
            #expect(first.bucketUnitsUsed == 60)
            #expect(first.remaining == 40)
            #expect(first.warningsCrossed == [50])
            let refused = try await store.reserveQuota(request(cost: 41))
            #expect(refused == .refused(QuotaRefusal(
                reason: .overBudget, bucket: "b", endpoint: "e.list", cost: 41, day: first.day, bucketUnitsUsed: 60,
                limit: 100
            )))
            guard case .reserved(let second) = try await store.reserveQuota(request(cost: 30, endpoint: "f.list")) else {
                Issue.record("refused")
                return
            }
            #expect(second.warningsCrossed == [90])
            guard case .reserved(let last) = try await store.reserveQuota(request(cost: 10, endpoint: "f.list")) else {
                Issue.record("refused")
                return
            }
            #expect(last.remaining == 0)
            #expect(last.warningsCrossed == [])
            guard case .refused = try await store.reserveQuota(request(cost: 1)) else {
                Issue.record("charged past the limit")
                return
            }
            let usage = try await store.quotaUsage(on: first.day)
            #expect(usage.map(\.endpoint) == ["e.list", "f.list"])
            #expect(usage.map(\.units) == [60, 40])
            #expect(usage.map(\.calls) == [1, 2])
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            let status = try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date())
            #expect(status.unitsUsed == 100)
            #expect(status.remaining == 0)
        }
    }

    @Test("a refund is written once, even when asked twice; an unknown reservation is a typed error",
          arguments: StoreBackend.available)
    func refundOnce(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .reserved(let charge) = try await store.reserveQuota(request(cost: 30)) else {
                Issue.record("refused")
                return
            }
            #expect(try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: "304")
                == .refunded(units: 30, day: charge.day))
            #expect(try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: "304")
                == .alreadyRefunded)
            await #expect(throws: StoreRefusal.self) {
                try await store.refundQuota(reservationID: 999_999, at: Date(), reason: nil)
            }
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 0)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("many tasks refunding one reservation at once give its units back once", arguments: StoreBackend.available)
    func concurrentRefunds(backend: StoreBackend) async throws {
        try await backend.withStores(count: 3) { stores in
            guard case .reserved(let charge) = try await stores[0].reserveQuota(request(cost: 40)) else {
                Issue.record("refused")
                return
            }
            let outcomes = try await withThrowingTaskGroup(of: QuotaRefundOutcome.self) { group in
                for index in 0..<12 {
                    let store = stores[index % stores.count]
                    group.addTask { try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: "race") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .refunded(units: 40, day: charge.day) }.count == 1)
            #expect(outcomes.filter { $0 == .alreadyRefunded }.count == 11)
            #expect(try await stores[1].quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 0)
            #expect(try await stores[2].quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("a negative cost or limit, or the endpoint '*', is refused before anything is written",
          arguments: StoreBackend.available)
    func invalidArguments(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            await #expect(throws: StoreRefusal.self) { try await store.reserveQuota(request(cost: -1)) }
            await #expect(throws: StoreRefusal.self) { try await store.reserveQuota(request(cost: 1, limit: -1)) }
            await #expect(throws: StoreRefusal.self) { try await store.reserveQuota(request(cost: 1, endpoint: "*")) }
            await #expect(throws: StoreRefusal.self) {
                try await store.setQuotaLimit(bucket: "b", limit: -2, configuredLimit: 10, at: Date())
            }
            await #expect(throws: StoreRefusal.self) {
                try await store.reconcileQuota(bucket: "b", used: -1, configuredLimit: 10, day: PacificDay(containing: Date()), at: Date())
            }
            let usage = try await store.quotaUsage(on: PacificDay(containing: Date()))
            let charged = try await store.quotaEndpointCharged("e.list")
            #expect(usage.isEmpty)
            #expect(!charged)
        }
    }

    @Test("the server's exhausted mark refuses every charge in the bucket until an operator resets the day",
          arguments: StoreBackend.available)
    func exhaustedMark(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let mark = try await store.markQuotaExhausted(bucket: "b", configuredLimit: 100, endpoint: "e.list", at: Date())
            #expect(mark.isNew)
            #expect(mark.until == PacificDay(containing: Date()).nextReset)
            let again = try await store.markQuotaExhausted(bucket: "b", configuredLimit: 100, endpoint: "e.list", at: Date())
            #expect(!again.isNew)
            guard case .refused(let refusal) = try await store.reserveQuota(request(cost: 1)) else {
                Issue.record("charged while exhausted")
                return
            }
            #expect(refusal.reason == .exhaustedByServer)
            #expect(refusal.remaining == 0)
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).isExhausted)
            let reset = try await store.resetQuotaDay(refusal.day, bucket: "b", at: Date())
            #expect(reset.clearedExhaustedMark)
            guard case .reserved = try await store.reserveQuota(request(cost: 1)) else {
                Issue.record("still refused after the reset lifted the mark")
                return
            }
        }
    }

    @Test("a reset gives back every endpoint's units with events; totals still equal events",
          arguments: StoreBackend.available)
    func resetDay(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .reserved(let charge) = try await store.reserveQuota(request(cost: 20)),
                  case .reserved = try await store.reserveQuota(request(cost: 5, endpoint: "f.list")) else {
                Issue.record("refused")
                return
            }
            let reset = try await store.resetQuotaDay(charge.day, bucket: "b", at: Date())
            #expect(reset.unitsCleared == ["e.list": 20, "f.list": 5])
            #expect(!reset.clearedExhaustedMark)
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 0)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            // The reset gave the units back already: a refund afterwards gives nothing back twice.
            #expect(try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: nil)
                == .refunded(units: 0, day: charge.day))
            // The day starts over: the whole limit can be charged again.
            guard case .reserved = try await store.reserveQuota(request(cost: 100)) else {
                Issue.record("refused after the reset")
                return
            }
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("an operator's limit wins over the configuration until cleared", arguments: StoreBackend.available)
    func operatorLimit(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let set = try await store.setQuotaLimit(bucket: "b", limit: 10, configuredLimit: 100, at: Date())
            #expect(set.limit == 10)
            #expect(set.limitSource == .admin)
            guard case .refused(let refusal) = try await store.reserveQuota(request(cost: 11)) else {
                Issue.record("charged past the operator's limit")
                return
            }
            #expect(refusal.limit == 10)
            let cleared = try await store.setQuotaLimit(bucket: "b", limit: nil, configuredLimit: 100, at: Date())
            #expect(cleared.limit == 100)
            #expect(cleared.limitSource == .configuration)
            guard case .reserved = try await store.reserveQuota(request(cost: 11)) else {
                Issue.record("refused under the configured limit")
                return
            }
        }
    }

    @Test("a call charged in two buckets is charged in both or in neither", arguments: StoreBackend.available)
    func allOrNothing(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let search = QuotaBucketCharge(bucket: "search", cost: 1, configuredLimit: 1)
            guard case .reserved(let charge) = try await store.reserveQuota(request(cost: 10, additionalCharges: [search])) else {
                Issue.record("refused")
                return
            }
            // The search bucket is spent: the next call is refused and the main bucket not charged.
            guard case .refused(let refusal) = try await store.reserveQuota(request(cost: 10, additionalCharges: [search])) else {
                Issue.record("charged past the search bucket's limit")
                return
            }
            #expect(refusal.bucket == "search")
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 10)
            // A refund of the reservation refunds its charge in the other bucket too.
            #expect(try await store.refundQuota(reservationID: charge.reservationID, at: Date(), reason: nil)
                == .refunded(units: 10, day: charge.day))
            #expect(try await store.quotaBucketStatus(bucket: "search", configuredLimit: 1, at: Date()).unitsUsed == 0)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }

    @Test("reconciling with the provider's count moves the total with one event", arguments: StoreBackend.available)
    func reconcile(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .reserved(let charge) = try await store.reserveQuota(request(cost: 10)) else {
                Issue.record("refused")
                return
            }
            let up = try await store.reconcileQuota(bucket: "b", used: 150, configuredLimit: 100, day: charge.day, at: Date())
            #expect(up.adjustment == 140)
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 150)
            guard case .refused = try await store.reserveQuota(request(cost: 1)) else {
                Issue.record("charged over a reconciled count above the limit")
                return
            }
            let down = try await store.reconcileQuota(bucket: "b", used: 40, configuredLimit: 100, day: charge.day, at: Date())
            #expect(down.adjustment == -110)
            #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: Date()).unitsUsed == 40)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            #expect(try await store.quotaEndpointCharged("e.list"))
        }
    }

    @Test("many tasks on several stores sharing one database never overspend, and totals equal events",
          arguments: StoreBackend.available)
    func concurrentReservations(backend: StoreBackend) async throws {
        let limit = 2_000
        try await backend.withStores(count: 4) { stores in
            let charged = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<16 {
                    let store = stores[worker % stores.count]
                    group.addTask {
                        var generator = SeededGenerator(seed: UInt64(worker + 1))
                        var units = 0
                        for _ in 0..<25 {
                            let cost = [1, 50, 100][Int(generator.next() % 3)]
                            let request = QuotaReservationRequest(
                                bucket: "shared", endpoint: "e\(worker % 3).list", cost: cost, configuredLimit: limit,
                                at: Date()
                            )
                            if case .reserved = try await store.reserveQuota(request) { units += cost }
                        }
                        return units
                    }
                }
                return try await group.reduce(0, +)
            }
            let status = try await stores[0].quotaBucketStatus(bucket: "shared", configuredLimit: limit, at: Date())
            #expect(status.unitsUsed <= limit)
            #expect(status.unitsUsed == charged)
            // 16 × 25 reservations averaging over 50 units ask for far more than the limit.
            #expect(status.unitsUsed > limit - 100)
            #expect(try await stores[1].quotaLedgerDiscrepancies().isEmpty)
            let usage = try await stores[2].quotaUsage(on: status.day)
            #expect(usage.reduce(0) { $0 + $1.units } == charged)
        }
    }
}
