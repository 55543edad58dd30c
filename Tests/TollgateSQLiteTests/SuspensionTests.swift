import Foundation
import Synchronization
import Testing
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

/// `suspend()`/`resume()`: a suspended store takes no lock and holds none, and says so with a typed error.
@Suite("Store suspension")
struct SuspensionTests {
    static let now = Date(timeIntervalSince1970: 1_795_291_200)

    private static func charge(_ store: SQLiteStore) async throws {
        _ = try await store.reserveQuota(QuotaReservationRequest(
            bucket: "b", endpoint: "e.list", cost: 1, configuredLimit: 100, at: now
        ))
    }

    @Test("while suspended every read and write fails at once with StoreError.suspended, and resume brings them back")
    func failsFastWhileSuspended() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("suspended.sqlite")
        let store = try SQLiteStore(path: path)
        try await Self.charge(store)
        store.suspend()
        #expect(store.isSuspended)
        await #expect(throws: StoreError.suspended(path: path)) { try await Self.charge(store) }
        await #expect(throws: StoreError.suspended(path: path)) { try await store.read { db in try db.fetchValue(sql: "SELECT 1") } }
        #expect(throws: StoreError.suspended(path: path)) { try store.write { _ in } }
        #expect(StoreError.suspended(path: path).isStorageFailure)
        // Another process can take the write lock at once: this store holds none.
        let other = try Database(path: path, busyTimeout: .zero)
        try other.execute(sql: "BEGIN IMMEDIATE")
        try other.execute(sql: "ROLLBACK")
        store.resume()
        #expect(!store.isSuspended)
        try await Self.charge(store)
        let units = try await store.quotaUsage(on: PacificDay(containing: Self.now)).first?.units
        #expect(units == 2, "nothing committed before the suspension was lost, nothing refused was written")
    }

    @Test("a write under way when the store is suspended rolls back at its next statement and releases the lock")
    func writeUnderWayRollsBack() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("midway.sqlite")
        let store = try SQLiteStore(path: path)
        let started = Atomic<Bool>(false)
        let writing = Task {
            try await store.write { db in
                try db.execute(sql: "CREATE TABLE scratch (x INTEGER)")
                started.store(true, ordering: .releasing)
                // Holds the write lock until the test has suspended the store.
                while !store.isSuspended { Thread.sleep(forTimeInterval: 0.005) }
                try db.execute(sql: "INSERT INTO scratch VALUES (1)")
            }
        }
        while !started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        store.suspend()
        await #expect(throws: StoreError.suspended(path: path)) { try await writing.value }
        let other = try Database(path: path, busyTimeout: .zero)
        try other.execute(sql: "BEGIN IMMEDIATE")
        try other.execute(sql: "ROLLBACK")
        #expect(try other.fetchOne(sql: "SELECT 1 FROM sqlite_master WHERE name = 'scratch'") == nil,
                "the interrupted transaction was rolled back as a whole")
        store.resume()
    }
}
