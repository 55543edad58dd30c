import Foundation
import Testing
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

/// A database file that the release before the core split wrote opens with the migrations added since
/// (6, the quota windows; 7, the event kind's check), and the same rows read back through the new layer.
///
/// `Tests/Fixtures/tollgate-2026-11-27.sqlite` was written by that release (main at 6048775, its
/// benchmark harness in release mode: `tollgate-bench admission 40 FILE`, then `hit 40 FILE` on the
/// same file), then cut down in the `sqlite3` shell to five cache entries and their bodies
/// (`DELETE … ; VACUUM; PRAGMA wal_checkpoint(TRUNCATE)`) to keep it small. It is copied before it
/// is opened, so the fixture never changes.
@Suite("A file written by the previous release")
struct ReleaseFileTests {
    private static let fixture = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/tollgate-2026-11-27.sqlite")

    @Test("it opens with the migrations added since, and its ledger, circuits, throttle and cache read back")
    func opensAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("release.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: path)
        let before = try Self.ledgerRows(path)
        let keysBefore = try Self.sqlite3(path, "SELECT url || ' ' || resource_key FROM cache_entries ORDER BY id")
        let store = try SQLiteStore(path: path)
        #expect(store.migrationsAppliedAtOpen.map(\.version) == [6, 7, 8], "the quota windows', the event kind's and the keys by URL are new")
        // Every event and usage row, ids included, is kept by the events table's two rebuilds.
        #expect(try Self.ledgerRows(path) == before)
        let windows = try await store.read { db in
            try db.fetchAll(sql: "SELECT DISTINCT window FROM quota_windows").map { try $0.decode(String.self, forColumn: "window") }
        }
        #expect(windows == ["day America/Los_Angeles"], "every bucket of that release counts the Pacific day")
        #expect(try SQLiteStore.migrationStatus(path: path).allSatisfy(\.isApplied))
        // Its bucket counts the Pacific day, as it always did, with the day's usage.
        let fileDay = try #require(PacificDay(key: "2026-11-27"))
        let status = try await store.quotaBucketStatus(bucket: "youtube", configuredLimit: 1_000_000_000,
                                                       at: fileDay.start.addingTimeInterval(3600))
        #expect(status.window == .pacificDay)
        #expect(status.period == QuotaPeriod(fileDay))
        #expect(status.unitsUsed == 50)
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        let snapshot = try await store.dashboardSnapshot(at: Date(), recentEvents: 5)
        #expect(snapshot.cacheEntries > 0)
        #expect(!snapshot.recentLedgerEvents.isEmpty)
        let usage = try await store.read { db in
            try db.fetchAll(sql: "SELECT pacific_date, bucket, endpoint, units FROM quota_usage")
        }
        #expect(!usage.isEmpty)
        for row in usage {
            let day = try #require(PacificDay(key: try row.decode(String.self, forColumn: "pacific_date")))
            let read = try await store.quotaUsage(on: day)
            #expect(read.contains { $0.units == (try? row.decode(Int.self, forColumn: "units")) })
        }
        let circuits = try await store.allCircuits()
        let transitions = try await store.circuitTransitions(endpoint: nil, limit: 10)
        _ = (circuits, transitions)
        let keys = try await store.read { db in
            try db.fetchAll(sql: "SELECT resource_key FROM cache_entries LIMIT 3").map { try $0.decode(String.self, forColumn: "resource_key") }
        }
        #expect(!keys.isEmpty)
        for key in keys {
            let entry = try await store.cachedEntry(resourceKey: key, validatedSinceMs: 0) { $0.first?.id }
            #expect(entry?.body.isEmpty == false)
            #expect(entry?.metadata.headers.isEmpty == false)
        }
        // Version 8: each key is its URL, a line feed and the digest it was; one URL's entries go together.
        let keysAfter = try await store.read { db in
            try db.fetchAll(sql: "SELECT url, resource_key FROM cache_entries ORDER BY id").map {
                (url: try $0.decode(String.self, forColumn: "url"), key: try $0.decode(String.self, forColumn: "resource_key"))
            }
        }
        #expect(keysAfter.map { "\($0.url) \($0.key.dropFirst($0.url.utf8.count + 1))" } == keysBefore)
        #expect(keysAfter.allSatisfy { $0.key.hasPrefix($0.url + "\n") })
        let invalidated = try #require(keysAfter.first)
        let removed = try await store.invalidateCacheEntries(url: invalidated.url, activity: CacheActivity())
        #expect(removed == keysAfter.filter { $0.url == invalidated.url }.count)
        let left = try await store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM cache_entries").int }
        #expect(left == keysAfter.count - removed)
        // And it takes new writes as before.
        _ = try await store.reserveQuota(QuotaReservationRequest(
            bucket: "fixture", endpoint: "e.list", cost: 1, configuredLimit: 10, at: Date()
        ))
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }

    /// The ledger's rows as text, read by the `sqlite3` shell (which .ci/run installs), not the store.
    private static func ledgerRows(_ path: String) throws -> [String] {
        try sqlite3(path, "SELECT id, at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail FROM quota_events ORDER BY id;"
                        + "SELECT * FROM quota_usage ORDER BY 1, 2, 3;")
    }

    /// What the `sqlite3` shell prints for `sql`, a line each.
    private static func sqlite3(_ path: String, _ sql: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", path, sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let rows = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(process.terminationStatus == 0 && !rows.isEmpty, "sqlite3 read the file")
        return rows
    }
}
