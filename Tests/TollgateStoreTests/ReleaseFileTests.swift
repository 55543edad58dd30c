import Foundation
import Testing
import TollgateStore
import TollgateTestSupport

/// A database file that the release before the core split wrote opens with no migration but the
/// ones added since (6, quota windows), the same rows read back through the new layer.
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

    @Test("it opens with only the migrations added since, and its ledger, circuits, throttle and cache read back")
    func opensAsItIs() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("release.sqlite")
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: path)
        let store = try SQLiteStore(path: path)
        // The file is at schema 5: the quota windows (6) came after that release.
        #expect(store.migrationsAppliedAtOpen.map(\.version) == Array(6...Migration.all.count))
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
        // And it takes new writes as before.
        _ = try await store.reserveQuota(QuotaReservationRequest(
            bucket: "fixture", endpoint: "e.list", cost: 1, configuredLimit: 10, at: Date()
        ))
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }
}
