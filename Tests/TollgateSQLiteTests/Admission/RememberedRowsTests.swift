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

    func request(at now: Date) -> AdmissionRequest {
        AdmissionRequest(
            endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: "token", throttleLimit: limit,
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: 1,
                                           configuredLimit: 1_000, warningPercents: [], at: now)
        )
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

    @Test("a second admission reads neither the circuit nor the window again")
    func secondAdmissionReadsNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("remembered.sqlite"))
        #expect(try await admittedCount(store, at: start) == 1)
        let before = try readsSaved(store)
        #expect(try await admittedCount(store, at: start.addingTimeInterval(1)) == 2)
        #expect(try readsSaved(store) == before + 2, "the circuit's row and the window's, both remembered")
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
