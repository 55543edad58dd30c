import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

/// The failures a person meets at the command line, as typed errors whose descriptions say what
/// happened and what to do, instead of SQLite's "unable to open database file".
@Suite("Store errors a person can act on")
struct StoreErrorTests {
    static let now = Date(timeIntervalSince1970: 1_795_291_200)

    static func charge(_ store: SQLiteStore, cost: Int = 1) async throws {
        _ = try await store.reserveQuota(QuotaReservationRequest(
            bucket: "b", endpoint: "e.list", cost: cost, configuredLimit: 100, at: now
        ))
    }

    @Test("a path that names a directory is refused as one, in both modes, and nothing is created in it")
    func directory() throws {
        let directory = try TemporaryDirectory()
        for access in [SQLiteStore.Access.readWrite, .readOnly] {
            #expect(throws: StoreError.isDirectory(path: directory.url.path)) {
                try SQLiteStore(path: directory.url.path, configuration: .init(access: access))
            }
        }
        #expect(throws: StoreError.isDirectory(path: directory.url.path)) {
            try SQLiteStore.migrationStatus(path: directory.url.path)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
        #expect(StoreError.isDirectory(path: "/data").description.contains("/data/tollgate.sqlite"))
    }

    @Test("read-only, a missing file is an error and is not created; a missing directory is named as such")
    func missing() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("missing.sqlite")
        #expect(throws: StoreError.notFound(path: path)) {
            try SQLiteStore(path: path, configuration: .init(access: .readOnly))
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(StoreError.notFound(path: path).description.contains("nothing was created"))

        let nested = directory.path("no/such/dir/x.sqlite")
        do {
            _ = try SQLiteStore(path: nested)
            Issue.record("a store opened in a directory that does not exist")
        } catch StoreError.cannotOpen(let failed, let reason, _) {
            #expect(failed == nested)
            #expect(reason == "its directory does not exist")
        }
    }

    @Test("read-only, a file that needs migrating is refused and left as it was; an up-to-date one is read")
    func readOnlyNeverMigrates() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        // A Tollgate file an older library made: its first migration only. (Another application's
        // file is refused as such before its migrations are looked at: LedgerFileTests.)
        let first = try #require(Migration.all.first)
        do { _ = try SQLiteStore(path: path, configuration: .init(migrations: [first])) }
        let bytes = try #require(fileBytes(path))
        do {
            _ = try SQLiteStore(path: path, configuration: .init(access: .readOnly))
            Issue.record("a read-only store migrated a file")
        } catch StoreRefusal.migrationsPending(let failed, let databaseVersion, let libraryVersion) {
            #expect(failed == path)
            #expect(databaseVersion == first.version)
            #expect(libraryVersion == Migration.all.map(\.version).max())
        }
        #expect(fileBytes(path) == bytes)

        let current = directory.path("current.sqlite")
        try await Self.charge(try SQLiteStore(path: current), cost: 3)
        let reader = try SQLiteStore(path: current, configuration: .init(access: .readOnly))
        #expect(reader.isReadOnly)
        #expect(try await reader.quotaUsage(on: PacificDay(containing: Self.now)).map(\.units) == [3])
    }

    @Test("a read-only store refuses every write before touching the file")
    func readOnlyRefusesWrites() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ro.sqlite")
        try await Self.charge(try SQLiteStore(path: path))
        let bytes = try #require(fileBytes(path))
        let reader = try SQLiteStore(path: path, configuration: .init(access: .readOnly))
        await #expect(throws: StoreError.openedReadOnly(path: path)) { try await Self.charge(reader) }
        #expect(throws: StoreError.openedReadOnly(path: path)) { try reader.write { _ in } }
        await #expect(throws: StoreError.openedReadOnly(path: path)) { try await reader.vacuum(at: Self.now) }
        #expect(StoreError.openedReadOnly(path: path).isStorageFailure)
        #expect(fileBytes(path) == bytes)
    }

    @Test("a lock held past the busy timeout is StoreError.locked; opening an up-to-date file and reading do not wait for it")
    func lockedPastTheTimeout() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("locked.sqlite")
        let holder = try SQLiteStore(path: path)
        let held = await OpenWriteTransaction(holder) { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (0, 'test', 'hold')")
        }
        let configuration = SQLiteStore.Configuration(busyTimeout: .milliseconds(200))
        let started = ContinuousClock.now
        // Opening needs no write lock when nothing is pending, and reads never wait for one in WAL mode.
        let writer = try SQLiteStore(path: path, configuration: configuration)
        let reader = try SQLiteStore(path: path, configuration: .init(busyTimeout: .milliseconds(200), access: .readOnly))
        _ = try await reader.dashboardSnapshot(at: Self.now)
        #expect(ContinuousClock.now - started < .milliseconds(200), "opening or reading waited for the lock")
        do {
            try await Self.charge(writer)
            Issue.record("a write went through a held lock")
        } catch StoreError.locked(let failed, let waited, let cause) {
            #expect(failed == path)
            #expect(waited == .milliseconds(200))
            #expect(cause.isBusy)
            #expect(StoreError.locked(path: failed, waited: waited, cause: cause).description
                .contains("is locked: another process held its lock for more than 0.2 s"))
        }
        try await held.commit()
        try await Self.charge(writer)
    }

    @Test("a constraint failure is not about the file: it stays a DatabaseError")
    func otherFailuresStayDatabaseErrors() async throws {
        let store = try SQLiteStore(location: .inMemory)
        #expect(throws: DatabaseError.self) {
            try store.write { db in try db.execute(sql: "INSERT INTO quota_buckets (bucket, daily_limit, updated_at_ms) VALUES ('x', -1, 0)") }
        }
        #expect(throws: StoreRefusal.self) { try SQLiteStore(location: .inMemory, configuration: .init(access: .readOnly)) }
    }
}
