import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The dashboard's snapshot, written once and run against every available store.
@Suite("Dashboard snapshot conformance")
struct SnapshotConformanceTests {
    @Test("the snapshot shows today's quota, circuits, throttle windows, cache day and recent events",
          arguments: StoreBackend.available)
    func snapshotDescribesTheState(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let today = PacificDay(containing: Date())
            _ = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "youtube", endpoint: "videos.list", cost: 30, configuredLimit: 100, at: Date()
            ))
            _ = try await store.forceOpenCircuit(endpoint: "search.list", duration: .seconds(60), policy: CircuitPolicy(), at: Date())
            _ = try await store.admitRequest(endpoint: "videos.list", limit: ThrottleLimit(requests: 10, per: .seconds(60)), at: Date())
            var activity = CacheActivity()
            activity.count(
                CacheStatisticsCounts(hits: 3, misses: 1), for: CacheStatisticsKey(pacificDate: today.key, endpoint: "videos.list")
            )
            try await store.recordCacheActivity(activity)

            let snapshot = try await store.dashboardSnapshot(at: Date(), recentEvents: 5)
            #expect(snapshot.pacificDate == today.key)
            #expect(snapshot.resetsAt == today.nextReset)
            #expect(snapshot.buckets.map(\.bucket) == ["youtube"])
            #expect(snapshot.buckets.first?.used == 30)
            #expect(snapshot.buckets.first?.remaining == 70)
            #expect(snapshot.buckets.first?.endpoints.map(\.endpoint) == ["videos.list"])
            #expect(snapshot.circuits.map(\.state) == ["open"])
            #expect((snapshot.circuits.first?.retryInSeconds ?? 0) > 55)
            #expect(snapshot.throttles.map(\.count) == [1])
            #expect(snapshot.throttles.first?.remaining == 9)
            #expect(snapshot.cache.first?.hitRate == 0.75)
            #expect(snapshot.cacheEntries == 0)
            #expect(snapshot.recentLedgerEvents.map(\.kind) == ["charge", "limit"])
            #expect(snapshot.recentCircuitTransitions.map(\.to) == ["open"])
        }
    }

    @Test("a bucket counted by the hour shows its hour's usage, its window and its reset; a daily one shows neither",
          arguments: StoreBackend.available)
    func windowedBucketInTheSnapshot(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            // Charged at the stores' own now (PostgreSQL's clock decides its windows), twice in
            // one hour; the daily bucket once.
            for _ in 0..<2 {
                _ = try await store.reserveQuota(QuotaReservationRequest(
                    bucket: "core", endpoint: "repos.get", cost: 1, configuredLimit: 5_000, at: Date(), window: .hour
                ))
            }
            _ = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "youtube", endpoint: "videos.list", cost: 3, configuredLimit: 100, at: Date()
            ))
            let snapshot = try await store.dashboardSnapshot(at: Date(), recentEvents: 0)
            let core = try #require(snapshot.buckets.first { $0.bucket == "core" })
            #expect(core.window == "hour")
            #expect(core.used == 2)
            #expect(core.remaining == 4_998)
            #expect(core.endpoints.map(\.endpoint) == ["repos.get"])
            let reset = try #require(core.resetsAt)
            #expect(reset > Date() && reset <= Date().addingTimeInterval(3_600))
            #expect(reset.timeIntervalSince1970.truncatingRemainder(dividingBy: 3_600) == 0, "the hour's end")
            let daily = try #require(snapshot.buckets.first { $0.bucket == "youtube" })
            #expect(daily.window == nil && daily.resetsAt == nil)
            #expect(daily.used == 3)
        }
    }
}
