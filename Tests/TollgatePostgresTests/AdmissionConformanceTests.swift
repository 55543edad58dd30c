import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The gate's composed admission and settlement, written once and run against every available store.
@Suite("Admission store conformance")
struct AdmissionConformanceTests {
    private func request(
        cost: Int = 10, bucketLimit: Int = 100, throttle: Int = 5, token: String = "token",
        policy: CircuitPolicy = CircuitPolicy(), at now: Date = Date()
    ) -> AdmissionRequest {
        AdmissionRequest(
            endpoint: "videos.list", circuitPolicy: policy, probeToken: token,
            throttleLimit: ThrottleLimit(requests: throttle, per: .seconds(60)),
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: cost,
                                           configuredLimit: bucketLimit, warningPercents: [], at: now)
        )
    }

    private func window(_ store: any ConformingStore, throttle: Int = 5) async throws -> Int {
        try await store.throttleWindow(
            endpoint: "videos.list", limit: ThrottleLimit(requests: throttle, per: .seconds(60)), at: Date()
        ).count
    }

    @Test("an admitted request is counted in the window and charged", arguments: StoreBackend.available)
    func admitted(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .admitted(let circuit, let throttle, let charge) = try await store.admit(request()) else {
                Issue.record("expected admission")
                return
            }
            #expect(circuit.decision == .allowed)
            #expect(throttle.count == 1)
            #expect(charge.cost == 10)
            #expect(try await window(store) == 1)
        }
    }

    @Test("a quota refusal gives the throttle slot back and charges nothing", arguments: StoreBackend.available)
    func quotaRefusalRollsBackTheSlot(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .refusedByQuota(_, let refusal) = try await store.admit(request(cost: 150)) else {
                Issue.record("expected a quota refusal")
                return
            }
            #expect(refusal.remaining == 100)
            #expect(try await window(store) == 0)
            #expect(try await store.quotaUsage(on: refusal.day).isEmpty)
        }
    }

    @Test("a full throttle window refuses before the quota is charged", arguments: StoreBackend.available)
    func throttledChargesNothing(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .admitted(_, _, let charge) = try await store.admit(request(throttle: 1)) else {
                Issue.record("expected admission")
                return
            }
            guard case .throttled(_, let throttle) = try await store.admit(request(throttle: 1)) else {
                Issue.record("expected the throttle to refuse")
                return
            }
            #expect((throttle.retryAfter ?? 0) > 50)
            #expect(try await store.quotaUsage(on: charge.day).map(\.units) == [10])
        }
    }

    @Test("a probe refused by the quota gives its lease back: the next caller probes at once",
          arguments: StoreBackend.available)
    func refusedProbeReleasesLease(backend: StoreBackend) async throws {
        let policy = CircuitPolicy(openDuration: .milliseconds(300))
        let time = ConformanceTime()
        try await backend.withStore(time: time) { store in
            _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .milliseconds(300), policy: policy, at: time.now())
            try await time.pass(.milliseconds(350))
            guard case .refusedByQuota(let circuit, _) = try await store.admit(request(cost: 500, token: "first", policy: policy,
                                                                                       at: time.now())) else {
                Issue.record("expected a quota refusal")
                return
            }
            #expect(circuit.decision.probe?.token == "first")
            guard case .admitted(let next, _, _) = try await store.admit(request(token: "second", policy: policy, at: time.now())) else {
                Issue.record("expected the second caller to be admitted")
                return
            }
            #expect(next.decision.probe?.token == "second")
        }
    }

    @Test("a settlement records the outcome, refunds and marks the bucket spent together",
          arguments: StoreBackend.available)
    func settlement(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .admitted(_, _, let charge) = try await store.admit(request()) else {
                Issue.record("expected admission")
                return
            }
            let result = try await store.settleAttempt(AttemptSettlement(
                endpoint: "videos.list", outcome: .failure, probeToken: nil, circuitPolicy: CircuitPolicy(),
                refundReservationID: charge.reservationID, refundReason: "test",
                exhaustedBucket: .init(bucket: "youtube", configuredLimit: 100), at: Date()
            ))
            #expect(result.circuit.record.consecutiveFailures == 1)
            #expect(result.refund == .refunded(units: 10, day: charge.day))
            #expect(result.exhaustion?.isNew == true)
            #expect(try await store.quotaUsage(on: charge.day).map(\.units) == [0])
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            guard case .refusedByQuota(_, let refusal) = try await store.admit(request()) else {
                Issue.record("admitted into a bucket the server said is spent")
                return
            }
            #expect(refusal.reason == .exhaustedByServer)
        }
    }

    @Test("many tasks on several stores admitting at once never exceed the throttle or the quota",
          arguments: StoreBackend.available)
    func concurrentAdmissions(backend: StoreBackend) async throws {
        try await backend.withStores(count: 4) { stores in
            let outcomes = try await withThrowingTaskGroup(of: AdmissionOutcome.self) { group in
                for index in 0..<40 {
                    let store = stores[index % stores.count]
                    let request = self.request(cost: 30, bucketLimit: 200, throttle: 20, token: "t\(index)")
                    group.addTask { try await store.admit(request) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let admitted = outcomes.filter { if case .admitted = $0 { true } else { false } }.count
            // 200 units at 30 a call pay for 6 calls; the throttle would let 20 through.
            #expect(admitted == 6)
            #expect(try await window(stores[1], throttle: 20) == 6)
            let status = try await stores[2].quotaBucketStatus(bucket: "youtube", configuredLimit: 200, at: Date())
            #expect(status.unitsUsed == 180)
            #expect(try await stores[3].quotaLedgerDiscrepancies().isEmpty)
        }
    }
}
