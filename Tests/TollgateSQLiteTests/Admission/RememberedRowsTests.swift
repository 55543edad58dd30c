import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

/// The circuit and throttle rows a connection remembers between its admissions must never outlive
/// what is in the file: whoever changes it — this store's own SQL, another store on the file (another
/// process), a transaction that rolls back.
@Suite("Rows remembered between admissions")
struct RememberedRowsTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let limit = ThrottleLimit(requests: 3, per: .seconds(60))

    func request(at now: Date, throttle: ThrottleLimit? = nil, bucketLimit: Int = 1_000) -> AdmissionRequest {
        AdmissionRequest(
            endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: "token", throttleLimit: throttle ?? limit,
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: 1,
                                           configuredLimit: bucketLimit, warningPercents: [], at: now)
        )
    }

    /// An admission on a roomy throttle against a bucket of 3 units: its reservation, or nil when
    /// the quota refused it.
    func charged(_ store: SQLiteStore, at now: Date) async throws -> Int64? {
        let roomy = ThrottleLimit(requests: 1_000, per: .seconds(60))
        switch try await store.admit(request(at: now, throttle: roomy, bucketLimit: 3)) {
        case .admitted(_, _, let charge): return charge.reservationID
        case .refusedByQuota: return nil
        case let other: throw TestFailure("unexpected outcome \(other)")
        }
    }

    /// The window's count after one more admission, or nil when it was throttled.
    func admittedCount(_ store: SQLiteStore, at now: Date) async throws -> Int? {
        switch try await store.admit(request(at: now)) {
        case .admitted(_, let throttle, _): throttle.count
        case .throttled: nil
        case let other: throw TestFailure("unexpected outcome \(other)")
        }
    }

    /// The blocking `write`, which a caller in async code would not reach.
    static func writeBlocking(_ store: SQLiteStore, sql: String) throws {
        try store.write { db in try db.execute(sql: sql) }
    }

    func readsSaved(_ store: SQLiteStore) throws -> Int {
        try store.writer.sync { $0.rememberedRows.readsSaved }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("back-to-back admissions read nothing: the circuit, the window and the bucket are remembered")
    func backToBackAdmissionsReadNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("remembered.sqlite"))
        #expect(try await admittedCount(store, at: start) == 1)
        var before = try readsSaved(store)
        #expect(try await admittedCount(store, at: start.addingTimeInterval(1)) == 2)
        // The first admission created the bucket's row: the second read it, the third need not.
        #expect(try readsSaved(store) == before + 2, "the circuit's row and the window's")
        before = try readsSaved(store)
        #expect(try await admittedCount(store, at: start.addingTimeInterval(2)) == 3)
        #expect(try readsSaved(store) == before + 3, "the circuit's row, the window's and the bucket's")
    }

    @Test("a refund between two admissions is counted: the bucket is read again, not remembered past it")
    func refundBetweenAdmissionsIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("refund.sqlite"))
        let first = try #require(try await charged(store, at: start))
        #expect(try await charged(store, at: start.addingTimeInterval(1)) != nil)
        _ = try await store.refundQuota(reservationID: first, at: start.addingTimeInterval(2), reason: "test")
        #expect(try await charged(store, at: start.addingTimeInterval(3)) != nil, "2 of 3 used after the refund")
        #expect(try await charged(store, at: start.addingTimeInterval(4)) != nil, "3 of 3")
        #expect(try await charged(store, at: start.addingTimeInterval(5)) == nil, "the bucket is spent")
    }

    /// A settlement of `reservationID` at `units`, as the gate writes after an answer.
    func settle(_ store: SQLiteStore, _ reservationID: Int64, at units: Int, at now: Date) async throws {
        _ = try await store.settleAttempt(AttemptSettlement(
            endpoint: "videos.list", outcome: .success, probeToken: nil, circuitPolicy: CircuitPolicy(),
            actualCosts: [QuotaActualCost(reservationID: reservationID, bucket: "youtube", units: units, source: "test")],
            at: now
        ))
    }

    @Test("a settlement that changes no total keeps the bucket remembered, as after a 304")
    func settlementAtTheEstimateKeepsTheBucket() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("settled.sqlite"))
        #expect(try await charged(store, at: start) != nil)
        let second = try #require(try await charged(store, at: start.addingTimeInterval(1)))
        // The settle event is written, the usage is not: the bucket's row and total are unchanged.
        try await settle(store, second, at: 1, at: start.addingTimeInterval(2))
        let before = try readsSaved(store)
        #expect(try await charged(store, at: start.addingTimeInterval(3)) != nil, "3 of 3")
        #expect(try readsSaved(store) == before + 3, "the circuit's row, the window's and the bucket's: none read again")
        #expect(try await charged(store, at: start.addingTimeInterval(4)) == nil, "the bucket is spent")
    }

    @Test("a settlement that changes the total between two admissions is counted")
    func settlementAboveTheEstimateIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("settled-more.sqlite"))
        // A first settlement below the estimate: its UPDATE of the usage is prepared and cached
        // here, so the second one is counted by its run, not by its preparation.
        let first = try #require(try await charged(store, at: start))
        try await settle(store, first, at: 0, at: start.addingTimeInterval(1))
        let second = try #require(try await charged(store, at: start.addingTimeInterval(2)))
        #expect(try await charged(store, at: start.addingTimeInterval(3)) != nil, "2 of 3, the bucket remembered")
        try await settle(store, second, at: 2, at: start.addingTimeInterval(4))
        #expect(try await charged(store, at: start.addingTimeInterval(5)) == nil, "0 + 2 + 1 of 3 used: no room for one more")
    }

    @Test("a trigger that writes the usage from another table's row is counted, through the store's own write")
    func triggerWriteIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("trigger.sqlite"))
        // An operator's trigger: every settle event costs a unit more. The store's settlement
        // writes only the event; SQLite's authorizer sees the trigger's UPDATE as the event's.
        try await store.write { db in
            try db.executeScript("""
                CREATE TRIGGER settle_costs_more AFTER INSERT ON quota_events WHEN NEW.kind = 'settle' BEGIN
                    UPDATE quota_usage SET units = units + 1
                    WHERE pacific_date = NEW.pacific_date AND bucket = NEW.bucket AND endpoint = NEW.endpoint;
                END
                """)
        }
        #expect(try await charged(store, at: start) != nil)
        let second = try #require(try await charged(store, at: start.addingTimeInterval(1)))
        try await settle(store, second, at: 1, at: start.addingTimeInterval(2))
        #expect(try await charged(store, at: start.addingTimeInterval(3)) == nil, "the trigger's unit makes 3 of 3")
    }

    @Test("a write earlier in the admission's own transaction is counted: a trigger on the lease's table")
    func writeInTheSameTransactionIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("lease-trigger.sqlite"))
        let roomy = ThrottleLimit(requests: 1_000, per: .seconds(60))
        func admission(at now: Date) -> AdmissionRequest {
            AdmissionRequest(endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: "token", throttleLimit: roomy,
                             quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: 1,
                                                            configuredLimit: 4, warningPercents: [], at: now))
        }
        for second in 0..<2 { _ = try await store.admit(admission(at: start.addingTimeInterval(Double(second)))) }
        try await store.write { db in
            try db.executeScript("""
                CREATE TRIGGER leases_cost_a_unit AFTER INSERT ON cache_leases BEGIN
                    UPDATE quota_usage SET units = units + 1 WHERE bucket = 'youtube' AND endpoint = 'videos.list';
                END
                """)
        }
        // Read again after the script, then remembered at 3 of 4.
        guard case .admitted = try await store.admit(admission(at: start.addingTimeInterval(2))) else {
            Issue.record("the third admission fits"); return
        }
        // The lease, taken first in the same transaction, spends the fourth unit through the trigger.
        let leased = try await store.admit(admission(at: start.addingTimeInterval(3)), leasing: "resource",
                                           lease: CoalescingLease(holder: "me", startedMs: 0, expiresMs: 60_000))
        guard case .refusedByQuota = leased.outcome else {
            Issue.record("4 of 4 spent by the trigger: \(String(describing: leased.outcome))"); return
        }
    }

    @Test("another store's charge between two admissions is counted: the bucket is not over-spent")
    func anotherStoresChargeIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("charges.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        #expect(try await charged(store, at: start) != nil)
        #expect(try await charged(store, at: start.addingTimeInterval(1)) != nil)
        #expect(try await charged(other, at: start.addingTimeInterval(2)) != nil)
        #expect(try await charged(store, at: start.addingTimeInterval(3)) == nil, "3 of 3 spent, one by the other store")
        let used = try await store.read { db in
            try db.fetchValue(sql: "SELECT SUM(units) FROM quota_usage WHERE bucket = 'youtube'").int
        }
        #expect(used == 3)
    }

    @Test("a bucket whose day ended is read again: the remembered usage was the old day's")
    func newDayIsRead() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("days.sqlite"))
        #expect(try await charged(store, at: start) != nil)
        #expect(try await charged(store, at: start.addingTimeInterval(1)) != nil)
        #expect(try await charged(store, at: start.addingTimeInterval(2)) != nil, "the bucket remembered with 2 used")
        // The next Pacific day, straight after: 3 units again, not the day before's 3.
        let nextDay = start.addingTimeInterval(86_400)
        for second in 0..<3 {
            #expect(try await charged(store, at: nextDay.addingTimeInterval(Double(second))) != nil, "unit \(second + 1) of 3")
        }
        #expect(try await charged(store, at: nextDay.addingTimeInterval(3)) == nil)
    }

    @Test("another store's admission on the file is seen: the window fills, not a stale count")
    func anotherStoresCommitIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        #expect(try await admittedCount(store, at: start) == 1)
        #expect(try await admittedCount(store, at: start.addingTimeInterval(1)) == 2)
        #expect(try await admittedCount(other, at: start.addingTimeInterval(2)) == 3)
        #expect(try await admittedCount(store, at: start.addingTimeInterval(3)) == nil, "3 of 3 in the window")
    }

    @Test("the store's own write of SQL it does not know is seen")
    func ownRawWriteIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("raw.sqlite"))
        #expect(try await admittedCount(store, at: start) == 1)
        let ms = start.millisecondsSince1970
        try await store.write { db in
            try db.execute(sql: "UPDATE throttle_limits SET admitted_at_ms = ?", arguments: ["[\(ms),\(ms),\(ms)]"])
        }
        #expect(try await admittedCount(store, at: start.addingTimeInterval(1)) == nil)
        try Self.writeBlocking(store, sql: "UPDATE throttle_limits SET admitted_at_ms = '[]'")
        #expect(try await admittedCount(store, at: start.addingTimeInterval(2)) == 1)
    }

    @Test("a transaction that rolls back after admitting leaves no remembered trace")
    func rollbackIsForgotten() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("rollback.sqlite"))
        #expect(try await admittedCount(store, at: start) == 1)
        let request = request(at: start.addingTimeInterval(1))
        await #expect(throws: TestFailure.self) {
            try await store.writeKeepingRecentEntries { db in
                _ = try AdmissionTable.admit(db, request)
                throw TestFailure("rolled back")
            }
        }
        #expect(try await admittedCount(store, at: start.addingTimeInterval(2)) == 2, "the rolled-back admission never counted")
        #expect(try await admittedCount(store, at: start.addingTimeInterval(3)) == 3)
    }

    @Test("an open circuit written by another store refuses the next admission")
    func anotherStoresCircuitIsSeen() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("circuit.sqlite")
        let store = try SQLiteStore(path: path)
        let other = try SQLiteStore(path: path)
        #expect(try await admittedCount(store, at: start) == 1)
        _ = try await other.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(600), policy: CircuitPolicy(), at: start)
        guard case .refusedByCircuit = try await store.admit(request(at: start.addingTimeInterval(1))) else {
            Issue.record("the circuit opened by another store must refuse"); return
        }
    }
}
