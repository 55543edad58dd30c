import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Quota store operations")
struct QuotaStorageTests {
    private let noon = Date(timeIntervalSince1970: 1_795_291_200) // 2026-11-21 20:00 UTC, 12:00 PST

    private func request(cost: Int, limit: Int = 100, endpoint: String = "e.list", at: Date? = nil) -> QuotaReservationRequest {
        QuotaReservationRequest(
            bucket: "b", endpoint: endpoint, cost: cost, configuredLimit: limit, warningPercents: [50, 90], at: at ?? noon
        )
    }

    @Test("reserve charges up to the limit exactly and refuses past it without writing")
    func reserveUpToTheLimit() async throws {
        let store = try SQLiteStore(location: .inMemory)
        guard case .reserved(let first) = try await store.reserveQuota(request(cost: 60)) else {
            Issue.record("refused")
            return
        }
        #expect(first.bucketUnitsUsed == 60)
        #expect(first.remaining == 40)
        #expect(first.warningsCrossed == [50])
        #expect(first.day.key == "2026-11-21")
        let refused = try await store.reserveQuota(request(cost: 41))
        #expect(refused == .refused(QuotaRefusal(
            reason: .overBudget, bucket: "b", endpoint: "e.list", cost: 41, day: first.day, bucketUnitsUsed: 60, limit: 100
        )))
        guard case .reserved(let last) = try await store.reserveQuota(request(cost: 40, endpoint: "f.list")) else {
            Issue.record("refused")
            return
        }
        #expect(last.remaining == 0)
        #expect(last.warningsCrossed == [90])
        #expect(try await store.quotaUsage(on: first.day).map(\.units) == [60, 40])
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }

    @Test("a refund is written once, even when asked twice; an unknown reservation is a typed error")
    func refundOnce() async throws {
        let store = try SQLiteStore(location: .inMemory)
        guard case .reserved(let charge) = try await store.reserveQuota(request(cost: 30)) else {
            Issue.record("refused")
            return
        }
        #expect(try await store.refundQuota(reservationID: charge.reservationID, at: noon, reason: "304")
            == .refunded(units: 30, day: charge.day))
        #expect(try await store.refundQuota(reservationID: charge.reservationID, at: noon, reason: "304") == .alreadyRefunded)
        await #expect(throws: StoreRefusal.self) {
            try await store.refundQuota(reservationID: 9999, at: noon, reason: nil)
        }
        // The schema itself refuses a second refund of one charge.
        #expect(throws: DatabaseError.self) {
            try store.write { db in
                try db.execute(sql: """
                    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id)
                    VALUES (0, '2026-11-21', 'b', 'e.list', 'refund', -30, ?)
                    """, arguments: [charge.reservationID])
            }
        }
        #expect(try await store.quotaBucketStatus(bucket: "b", configuredLimit: 100, at: noon).unitsUsed == 0)
    }

    @Test("a negative cost or limit is refused before anything is written")
    func invalidArguments() async throws {
        let store = try SQLiteStore(location: .inMemory)
        await #expect(throws: StoreRefusal.self) { try await store.reserveQuota(request(cost: -1)) }
        await #expect(throws: StoreRefusal.self) { try await store.reserveQuota(request(cost: 1, limit: -1)) }
        await #expect(throws: StoreRefusal.self) {
            try await store.setQuotaLimit(bucket: "b", limit: -2, configuredLimit: 10, at: noon)
        }
        let events = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM quota_events").int }
        #expect(events == 0)
    }

    @Test("the exhausted mark holds for its Pacific day only, also when the wall clock is set back to the day before")
    func exhaustedForItsDay() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let mark = try await store.markQuotaExhausted(bucket: "b", configuredLimit: 100, endpoint: "e.list", at: noon)
        #expect(mark.isNew)
        #expect(mark.until == PacificDay(containing: noon).nextReset)
        guard case .refused(let refusal) = try await store.reserveQuota(request(cost: 1)) else {
            Issue.record("reserved while exhausted")
            return
        }
        #expect(refusal.reason == .exhaustedByServer)
        #expect(refusal.remaining == 0)
        let dayBefore = noon.addingTimeInterval(-86_400)
        guard case .reserved = try await store.reserveQuota(request(cost: 1, at: dayBefore)) else {
            Issue.record("a clock set back a day is still held by the mark")
            return
        }
        guard case .reserved = try await store.reserveQuota(request(cost: 1, at: mark.until)) else {
            Issue.record("the mark outlived its day")
            return
        }
    }

    @Test("the gate can compose a throttle admission and a quota reservation in one transaction that rolls back together")
    func composesInOneTransaction() async throws {
        struct Refused: Error {}
        let store = try SQLiteStore(location: .inMemory)
        let noon = self.noon
        let request = self.request(cost: 101)
        await #expect(throws: Refused.self) {
            try await store.write { db in
                let admission = try ThrottleTable.admit(
                    db, endpoint: "e.list", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: noon
                )
                #expect(admission.allowed)
                guard case .reserved = try QuotaTable.reserve(db, request) else { throw Refused() }
            }
        }
        // The admission rolled back with the refused reservation.
        let window = try await store.throttleWindow(endpoint: "e.list", limit: ThrottleLimit(requests: 5, per: .seconds(60)), at: noon)
        #expect(window.count == 0)
    }
}
