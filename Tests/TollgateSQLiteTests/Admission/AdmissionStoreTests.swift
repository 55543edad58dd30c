import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

/// The gate's composed admission and settlement on a real file.
@Suite("Admission and settlement in one transaction")
struct AdmissionStoreTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    func request(_ store: SQLiteStore, at now: Date, cost: Int = 10, bucketLimit: Int = 100,
                 throttle: Int = 5, token: String = "token") -> AdmissionRequest {
        AdmissionRequest(
            endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: token,
            throttleLimit: ThrottleLimit(requests: throttle, per: .seconds(60)),
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: cost,
                                           configuredLimit: bucketLimit, warningPercents: [], at: now)
        )
    }

    @Test("an admitted request is counted in the window and charged, in one transaction")
    func admitted() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("admission.sqlite"))
        guard case .admitted(let circuit, let throttle, let charge) = try await store.admit(request(store, at: start)) else {
            Issue.record("expected admission"); return
        }
        #expect(circuit.decision == .allowed)
        #expect(throttle.count == 1)
        #expect(charge.cost == 10)
        let window = try await store.throttleWindow(endpoint: "videos.list", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: start)
        #expect(window.count == 1)
    }

    @Test("a leader's admission takes the coalescing lease in the same transaction; another holder's running lease admits nothing")
    func leasedAdmission() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("leased.sqlite")
        let store = try SQLiteStore(path: path)
        let ms = Int64(start.timeIntervalSince1970 * 1000)
        let first = CoalescingLease(holder: "first", startedMs: ms, expiresMs: ms + 30_000)
        let taken = try await store.admit(request(store, at: start), leasing: "resource", lease: first)
        #expect(taken.lease == first)
        guard case .admitted = taken.outcome else { Issue.record("expected admission, got \(String(describing: taken.outcome))"); return }

        // Another process (another store on the file) asks while the first lease runs: nothing charged.
        let other = try SQLiteStore(path: path)
        let second = CoalescingLease(holder: "second", startedMs: ms + 1_000, expiresMs: ms + 31_000)
        let refused = try await other.admit(request(other, at: start), leasing: "resource", lease: second)
        #expect(refused.lease == first)
        #expect(refused.outcome == nil)
        #expect(try await other.quotaUsage(on: PacificDay(containing: start)).map(\.units) == [10])
        let window = try await other.throttleWindow(endpoint: "videos.list", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: start)
        #expect(window.count == 1)

        // Once it lapses, the next leader takes it and is admitted.
        let later = CoalescingLease(holder: "third", startedMs: ms + 30_000, expiresMs: ms + 60_000)
        let retaken = try await other.admit(request(other, at: start.addingTimeInterval(30)), leasing: "resource", lease: later)
        #expect(retaken.lease == later)
        #expect(retaken.outcome != nil)
        #expect(try await store.coalescingLease(resourceKey: "resource") == later)
    }

    @Test("a quota refusal gives the throttle slot back and charges nothing")
    func quotaRefusalRollsBackTheSlot() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("refusal.sqlite"))
        let outcome = try await store.admit(request(store, at: start, cost: 150))
        guard case .refusedByQuota(_, let refusal) = outcome else { Issue.record("expected a quota refusal"); return }
        #expect(refusal.remaining == 100)
        let window = try await store.throttleWindow(endpoint: "videos.list", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: start)
        #expect(window.count == 0)
        #expect(try await store.quotaUsage(on: PacificDay(containing: start)).isEmpty)
    }

    @Test("a full throttle window refuses before the quota is charged")
    func throttledChargesNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("throttled.sqlite"))
        _ = try await store.admit(request(store, at: start, throttle: 1))
        guard case .throttled(_, let throttle) = try await store.admit(request(store, at: start, throttle: 1)) else {
            Issue.record("expected the throttle to refuse"); return
        }
        #expect(throttle.retryAfter == 60)
        #expect(try await store.quotaUsage(on: PacificDay(containing: start)).map(\.units) == [10])
    }

    @Test("a probe refused by the quota gives its lease back: the next caller probes at once")
    func refusedProbeReleasesLease() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("probe.sqlite"))
        _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(60), policy: CircuitPolicy(), at: start)
        let later = start.addingTimeInterval(61)
        guard case .refusedByQuota(let circuit, _) = try await store.admit(request(store, at: later, cost: 500, token: "first")) else {
            Issue.record("expected a quota refusal"); return
        }
        #expect(circuit.decision.probe?.token == "first")
        guard case .admitted(let next, _, _) = try await store.admit(request(store, at: later, token: "second")) else {
            Issue.record("expected the second caller to be admitted"); return
        }
        #expect(next.decision.probe?.token == "second")
    }

    @Test("a settlement records the outcome, refunds and marks the bucket spent together")
    func settlement() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("settle.sqlite"))
        guard case .admitted(_, _, let charge) = try await store.admit(request(store, at: start)) else {
            Issue.record("expected admission"); return
        }
        let result = try await store.settleAttempt(AttemptSettlement(
            endpoint: "videos.list", outcome: .failure, probeToken: nil, circuitPolicy: CircuitPolicy(),
            refundReservationID: charge.reservationID, refundReason: "test",
            exhaustedBucket: .init(bucket: "youtube", configuredLimit: 100), at: start
        ))
        #expect(result.circuit.record.consecutiveFailures == 1)
        #expect(result.refund == .refunded(units: 10, day: PacificDay(containing: start)))
        #expect(result.exhaustion?.isNew == true)
        #expect(try await store.quotaUsage(on: PacificDay(containing: start)).map(\.units) == [0])
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }
}
