import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
@testable import TollgateSQLite

@Suite("Opening a store")
struct StoreOpeningTests {
    @Test("a fresh file is migrated, and reopening it applies nothing")
    func freshFileMigratesOnce() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("tollgate.sqlite")

        let first = try SQLiteStore(path: path)
        #expect(first.migrationsAppliedAtOpen.map(\.version) == Migration.all.map(\.version))
        let recorded = try first.read { db in
            try db.fetchAll(sql: "SELECT version, checksum FROM schema_migrations ORDER BY version")
        }
        #expect(recorded.map { $0[0].int } == Migration.all.map(\.version))
        #expect(recorded.map { $0[1].string } == Migration.all.map(\.checksum))

        let second = try SQLiteStore(path: path)
        #expect(second.migrationsAppliedAtOpen.isEmpty)
        let count = try second.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM schema_migrations").int }
        #expect(count == Migration.all.count)
    }

    @Test("the connection runs in WAL mode with synchronous=NORMAL and foreign keys on")
    func connectionSettings() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("settings.sqlite"))
        let settings = try store.write { db in
            (
                try db.fetchValue(sql: "PRAGMA journal_mode").string,
                try db.fetchValue(sql: "PRAGMA synchronous").int,
                try db.fetchValue(sql: "PRAGMA foreign_keys").int
            )
        }
        #expect(settings.0 == "wal")
        #expect(settings.1 == 1) // NORMAL
        #expect(settings.2 == 1)
    }

    @Test("the writer clears freed content only where it costs no extra write (secure_delete = FAST)")
    func secureDeleteIsFast() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("secure-delete.sqlite"))
        // 2 is FAST; Debian's build defaults to 1, which rewrites every freed page.
        #expect(try store.write { db in try db.fetchValue(sql: "PRAGMA secure_delete").int } == 2)
        let memory = try SQLiteStore(location: .inMemory)
        #expect(try memory.write { db in try db.fetchValue(sql: "PRAGMA secure_delete").int } == 2)
    }

    @Test("a new database file and its WAL files are readable by their owner only")
    func ownerOnlyPermissions() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("private.sqlite")
        let store = try SQLiteStore(path: path)
        try store.write { db in try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (1, 'test', 'touch')") }

        #expect(try posixPermissions(path) == 0o600)
        #expect(try posixPermissions(path + "-wal") == 0o600)
        #expect(try posixPermissions(path + "-shm") == 0o600)
    }

    @Test("all five public views exist and answer on a fresh file", arguments: [
        "quota_today", "quota_daily", "cache_stats", "circuit_status", "throttle_status",
    ])
    func viewAnswers(view: String) throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("views.sqlite"))
        let rows = try store.read { db in try db.fetchAll(sql: "SELECT * FROM \(view)") }
        #expect(rows.isEmpty)
    }

    @Test("the views show what the tables hold")
    func viewsReflectTables() throws {
        let store = try SQLiteStore(location: .inMemory)
        let nowMs = Int64(Date().timeIntervalSince1970 * 1000)
        let today = PacificDay(containing: Date()).key
        try store.write { db in
            try db.execute(sql: "INSERT INTO quota_buckets (bucket, daily_limit, updated_at_ms) VALUES ('youtube', 10000, ?)", arguments: [nowMs])
            try db.execute(sql: "INSERT INTO quota_buckets (bucket, daily_limit, updated_at_ms) VALUES ('idle', 500, ?)", arguments: [nowMs])
            try db.execute(sql: "INSERT INTO quota_usage VALUES (?, 'youtube', 'search.list', 300, 3)", arguments: [today])
            try db.execute(sql: "INSERT INTO quota_usage VALUES (?, 'youtube', 'videos.list', 7, 7)", arguments: [today])
            try db.execute(sql: "INSERT INTO quota_usage VALUES ('2001-01-01', 'youtube', 'videos.list', 9, 9)")
            try db.execute(sql: """
                INSERT INTO circuits (endpoint, state, consecutive_failures, open_until_ms, open_duration_ms, trips, updated_at_ms)
                VALUES ('videos.list', 'open', 5, ?, 60000, 1, ?)
                """, arguments: [nowMs + 45_000, nowMs])
            try db.execute(
                sql: "INSERT INTO throttle_limits VALUES ('/api/activities', 10, 60000, ?, json_array(?, ?, ?))",
                arguments: [nowMs, nowMs - 90_000, nowMs - 2_000, nowMs - 1_000]
            )
            try db.execute(sql: "INSERT INTO cache_stats_daily (pacific_date, endpoint, hits, revalidations, misses, stale, bytes_saved) VALUES (?, 'videos.list', 6, 3, 1, 0, 1000)", arguments: [today])
        }

        let quota = try store.read { db in
            try db.fetchAll(sql: "SELECT pacific_date, bucket, endpoint, units, calls, bucket_limit, bucket_remaining FROM quota_today")
        }
        #expect(quota == [
            Row([.text(today), "idle", .null, 0, 0, 500, 500]),
            Row([.text(today), "youtube", "search.list", 300, 3, 10000, 9693]),
            Row([.text(today), "youtube", "videos.list", 7, 7, 10000, 9693]),
        ])
        let daily = try store.read { db in try db.fetchAll(sql: "SELECT pacific_date, units FROM quota_daily WHERE endpoint = 'videos.list'") }
        #expect(daily == [Row([.text(today), 7]), Row(["2001-01-01", 9])])

        let circuit = try #require(try store.read { db in
            try db.fetchOne(sql: "SELECT state, consecutive_failures, retry_in_seconds, trips FROM circuit_status")
        })
        #expect(circuit[0] == "open")
        #expect(circuit[1] == 5)
        #expect((40...45).contains(circuit[2].int ?? -1))
        #expect(circuit[3] == 1)

        let throttle = try store.read { db in
            try db.fetchOne(sql: "SELECT window_seconds, request_limit, current_count, remaining FROM throttle_status")
        }
        #expect(throttle == Row([60.0, 10, 2, 8]))

        let cache = try store.read { db in try db.fetchOne(sql: "SELECT hits, revalidations, misses, hit_rate FROM cache_stats") }
        #expect(cache == Row([6, 3, 1, 0.9]))
    }

    @Test("an in-memory store migrates and works")
    func inMemoryStore() async throws {
        let store = try SQLiteStore(location: .inMemory)
        try await store.write { db in
            try db.execute(sql: "INSERT INTO admin_events (at_ms, subject, action) VALUES (1, 'test', 'touch')")
        }
        let count = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM admin_events").int }
        #expect(count == 1)
    }

    @Test("stores opened on one file at the same moment end with one schema, applied once")
    func concurrentOpeningOfANewFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("race.sqlite")
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for _ in 0..<6 {
                group.addTask {
                    // Each store has connections of its own, as a separate process would.
                    try await Task.detached { try SQLiteStore(path: path).migrationsAppliedAtOpen.map(\.version) }.value
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(applied.flatMap { $0 }.sorted() == Migration.all.map(\.version))
        let store = try SQLiteStore(path: path)
        let count = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM schema_migrations").int }
        #expect(count == Migration.all.count)
    }

    @Test("a later library applies only its new migrations")
    func laterMigrationIsApplied() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("upgrade.sqlite")
        _ = try SQLiteStore(path: path)
        let next = Migration(version: (Migration.all.last?.version ?? 0) + 1, name: "extra",
                             sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY);")
        let upgraded = try SQLiteStore(path: path, configuration: .init(migrations: Migration.all + [next]))
        #expect(upgraded.migrationsAppliedAtOpen == [next])
        let statuses = try SQLiteStore.migrationStatus(path: path, migrations: Migration.all + [next])
        #expect(statuses.allSatisfy { $0.isApplied })
    }
}
