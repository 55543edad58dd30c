import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// An entry to store, with enough defaults that each test names only what it checks.
private func newEntry(
    _ resource: String, variant: String = "", vary: String? = nil, etag: String? = "\"v1\"",
    body: String = "body", at nowMs: Int64 = 1_000, endpoint: String = "videos.list"
) -> NewCacheEntry {
    NewCacheEntry(
        resourceKey: resource, variantKey: variant, endpoint: endpoint, method: "GET",
        url: "https://api.example.com/\(resource)", vary: vary, status: 200,
        headers: [CacheHeaderField(name: "ETag", value: etag ?? ""), CacheHeaderField(name: "X-Broken", value: "a\nb")],
        etag: etag, lastModified: nil, freshUntilMs: nil, nowMs: nowMs, body: Data(body.utf8)
    )
}

private let roomy = CacheRetention(maxEntries: 1000, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0)

/// The ETag cache's store operations, written once and run against every available store.
@Suite("Cache store conformance")
struct CacheConformanceTests {
    @Test("a stored entry reads back with its body; a replacement keeps its id and the totals follow",
          arguments: StoreBackend.available)
    func storeReadReplace(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.storeCacheEntry(newEntry("a", body: "12345"), retention: roomy, activity: CacheActivity())
            #expect(first.replaced == false)
            #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 5))
            let read = try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { $0.first?.id }
            #expect(read?.body == Data("12345".utf8))
            #expect(read?.metadata.etag == "\"v1\"")
            #expect(read?.metadata.headers == [
                CacheHeaderField(name: "ETag", value: "\"v1\""), CacheHeaderField(name: "X-Broken", value: "a b"),
            ])
            let second = try await store.storeCacheEntry(
                newEntry("a", etag: "\"v2\"", body: "123", at: 2_000), retention: roomy, activity: CacheActivity()
            )
            #expect(second.replaced)
            #expect(second.entry.id == first.entry.id)
            #expect(second.entry.etag == "\"v2\"")
            #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 3))
            #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { $0.first?.id }?.body == Data("123".utf8))
            #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { _ in nil } == nil)
            #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 2_001) { $0.first?.id } == nil)
        }
    }

    @Test("eviction by count removes the least recently used entry, counting buffered touches",
          arguments: StoreBackend.available)
    func evictionByCountHonoursTouches(backend: StoreBackend) async throws {
        let limit = CacheRetention(maxEntries: 3, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 0)
        try await backend.withStore { store in
            var ids: [Int64] = []
            for (index, name) in ["a", "b", "c"].enumerated() {
                ids.append(try await store.storeCacheEntry(
                    newEntry(name, at: Int64(1_000 + index)), retention: limit, activity: CacheActivity()
                ).entry.id)
            }
            var activity = CacheActivity()
            activity.touch(ids[0], atMs: 5_000)
            let result = try await store.storeCacheEntry(newEntry("d", at: 6_000), retention: limit, activity: activity)
            #expect(result.pruned.evicted == 1)
            for (key, present) in [("a", true), ("b", false), ("c", true), ("d", true)] {
                let entry = try await store.cachedEntry(resourceKey: key, validatedSinceMs: 0) { $0.first?.id }
                #expect((entry != nil) == present, "\(key)")
            }
            #expect(try await store.cachedEntry(resourceKey: "a", validatedSinceMs: 0) { $0.first?.id }?.metadata.hitCount == 1)
        }
    }

    @Test("eviction by bytes removes least recently used entries until the budget holds, never the new one",
          arguments: StoreBackend.available)
    func evictionByBytes(backend: StoreBackend) async throws {
        let budget = CacheRetention(maxEntries: 100, maxTotalBodyBytes: 10, expiredBeforeMs: 0)
        try await backend.withStore { store in
            for (index, name) in ["a", "b", "c"].enumerated() {
                _ = try await store.storeCacheEntry(
                    newEntry(name, body: "xxxx", at: Int64(1_000 + index)), retention: budget, activity: CacheActivity()
                )
            }
            #expect(try await store.cacheTotals() == CacheTotals(entries: 2, bodyBytes: 8))
            let result = try await store.storeCacheEntry(
                newEntry("big", body: "0123456789", at: 2_000), retention: budget, activity: CacheActivity()
            )
            #expect(result.pruned.evicted == 2)
            #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 10))
        }
    }

    @Test("expired entries are pruned, and an operator's prune is on record", arguments: StoreBackend.available)
    func expiry(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.storeCacheEntry(newEntry("old", at: 1_000), retention: roomy, activity: CacheActivity())
            _ = try await store.storeCacheEntry(newEntry("new", at: 5_000), retention: roomy, activity: CacheActivity())
            let result = try await store.pruneCache(
                retention: CacheRetention(maxEntries: 1000, maxTotalBodyBytes: 1 << 30, expiredBeforeMs: 2_000),
                activity: CacheActivity(), recordedAt: Date()
            )
            #expect(result == CachePruneResult(expired: 1, evicted: 0))
            #expect(try await store.cacheTotals().entries == 1)
            #expect(try await store.adminEvents(subject: "cache", limit: 5).map(\.action) == ["prune"])
        }
    }

    @Test("a revision changes headers, validators, times and the hit count, and leaves the body and the statistics alone",
          arguments: StoreBackend.available)
    func revision(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let stored = try await store.storeCacheEntry(newEntry("a", body: "payload"), retention: roomy, activity: CacheActivity())
            let revised = try await store.reviseCacheEntry(resourceKey: "a", validatedSinceMs: 0, activity: CacheActivity()) { candidates in
                CacheRevision(
                    entryID: candidates[0].id, headers: [CacheHeaderField(name: "ETag", value: "W/\"v2\"")],
                    etag: "W/\"v2\"", lastModified: nil, freshUntilMs: 9_000, nowMs: 4_000
                )
            }
            #expect(revised?.body == Data("payload".utf8))
            #expect(revised?.metadata.id == stored.entry.id)
            #expect(revised?.metadata.etag == "W/\"v2\"")
            #expect(revised?.metadata.validatedAtMs == 4_000)
            #expect(revised?.metadata.lastAccessMs == 4_000)
            #expect(revised?.metadata.storedAtMs == 1_000)
            #expect(revised?.metadata.freshUntilMs == 9_000)
            #expect(revised?.metadata.hitCount == stored.entry.hitCount + 1)
            // The day's statistics are the cache's to buffer, not the revision's to write.
            #expect(try await store.cacheStatistics(pacificDate: nil).isEmpty)
            let none = try await store.reviseCacheEntry(resourceKey: "a", validatedSinceMs: 0, activity: CacheActivity()) { _ in nil }
            #expect(none == nil)
        }
    }

    @Test("invalidation by URL removes that URL's entries, keyed by the library or not, and no other URL's",
          arguments: StoreBackend.available)
    func invalidationByURLIsExact(backend: StoreBackend) async throws {
        let url = "https://api.example.com/items?id=1&key=REDACTED"
        func entry(_ key: String, url: String, variant: String = "", method: String = "GET") -> NewCacheEntry {
            var entry = newEntry("unused", variant: variant, vary: variant.isEmpty ? nil : "accept-language")
            entry.resourceKey = key
            entry.url = url
            entry.method = method
            return entry
        }
        let kept = [
            // Another URL that begins with this one.
            entry(CacheResourceKey.make(url: url + "&part=x", digest: "d4"), url: url + "&part=x"),
            // A URL that continues past this one with a line feed: its key sorts among this URL's.
            entry(CacheResourceKey.make(url: url + "\nX", digest: "d5"), url: url + "\nX"),
            // A key that begins with this URL, made for another.
            entry(url + "\nd6", url: "https://api.example.com/other"),
        ]
        let removed = [
            entry(CacheResourceKey.make(url: url, digest: "d1"), url: url),
            entry(CacheResourceKey.make(url: url, digest: "d2"), url: url, variant: "fr", method: "HEAD"),
            entry("a key of the caller's own", url: url),
        ]
        try await backend.withStore { store in
            for entry in kept + removed {
                _ = try await store.storeCacheEntry(entry, retention: roomy, activity: CacheActivity())
            }
            #expect(try await store.invalidateCacheEntries(url: url, activity: CacheActivity()) == removed.count)
            for entry in removed {
                #expect(try await store.cachedEntry(resourceKey: entry.resourceKey, validatedSinceMs: 0) { $0.first?.id } == nil)
            }
            for entry in kept {
                #expect(try await store.cachedEntry(resourceKey: entry.resourceKey, validatedSinceMs: 0) { $0.first?.id } != nil,
                        "\(entry.url)")
            }
            #expect(try await store.cacheTotals().entries == kept.count)
        }
    }

    @Test("a variant under another Vary replaces the old variants; invalidation by URL, removal and clearing",
          arguments: StoreBackend.available)
    func variantsInvalidationAndClear(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            _ = try await store.storeCacheEntry(newEntry("a", variant: "en", vary: "accept-language"), retention: roomy, activity: CacheActivity())
            _ = try await store.storeCacheEntry(newEntry("a", variant: "fr", vary: "accept-language"), retention: roomy, activity: CacheActivity())
            #expect(try await store.cacheTotals().entries == 2)
            _ = try await store.storeCacheEntry(newEntry("a"), retention: roomy, activity: CacheActivity())
            #expect(try await store.cacheTotals().entries == 1)
            var head = newEntry("a-head")
            head.method = "HEAD"
            head.url = "https://api.example.com/a"
            _ = try await store.storeCacheEntry(head, retention: roomy, activity: CacheActivity())
            #expect(try await store.invalidateCacheEntries(url: "https://api.example.com/a", activity: CacheActivity()) == 2)
            #expect(try await store.cacheTotals() == CacheTotals(entries: 0, bodyBytes: 0))
            _ = try await store.storeCacheEntry(newEntry("b"), retention: roomy, activity: CacheActivity())
            #expect(try await store.removeCacheEntries(resourceKey: "b", activity: CacheActivity()) == 1)
            _ = try await store.storeCacheEntry(newEntry("c", body: "abc", endpoint: "search.list"), retention: roomy, activity: CacheActivity())
            _ = try await store.storeCacheEntry(newEntry("d"), retention: roomy, activity: CacheActivity())
            let cleared = try await store.clearCache(endpoint: "search.list", activity: CacheActivity(), at: Date())
            #expect(cleared == CacheClearResult(entries: 1, bodyBytes: 3))
            #expect(try await store.cacheTotals() == CacheTotals(entries: 1, bodyBytes: 4))
            let events = try await store.adminEvents(subject: "cache", limit: 5)
            #expect(events.map(\.action) == ["clear"])
            #expect(events.first?.target == "search.list")
        }
    }

    @Test("buffered statistics add up in the cache_stats view with its hit rate", arguments: StoreBackend.available)
    func statisticsView(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let key = CacheStatisticsKey(pacificDate: "2026-11-21", endpoint: "videos.list")
            var activity = CacheActivity()
            activity.count(CacheStatisticsCounts(hits: 3, bytesSaved: 30), for: key)
            activity.count(CacheStatisticsCounts(revalidations: 1, misses: 1, stale: 2), for: key)
            try await store.recordCacheActivity(activity)
            try await store.recordCacheActivity(activity)
            let rows = try await store.cacheStatistics(pacificDate: nil)
            #expect(rows == [CacheDailyStatistics(
                pacificDate: "2026-11-21", endpoint: "videos.list",
                counts: CacheStatisticsCounts(hits: 6, revalidations: 2, misses: 2, stale: 4, bytesSaved: 60),
                hitRate: 0.8
            )])
        }
    }

    @Test("a coalescing lease has one holder until it is given back or lapses", arguments: StoreBackend.available)
    func coalescingLease(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores in
            let first = CoalescingLease(holder: "one", startedMs: 1_000, expiresMs: 2_000)
            #expect(try await stores[0].acquireCoalescingLease(resourceKey: "k", lease: first) == first)
            let second = CoalescingLease(holder: "two", startedMs: 1_500, expiresMs: 2_500)
            #expect(try await stores[1].acquireCoalescingLease(resourceKey: "k", lease: second) == first)
            #expect(try await stores[1].coalescingLease(resourceKey: "k") == first)
            // Only its holder gives it back.
            try await stores[1].releaseCoalescingLease(resourceKey: "k", holder: "two")
            #expect(try await stores[0].coalescingLease(resourceKey: "k") == first)
            try await stores[0].releaseCoalescingLease(resourceKey: "k", holder: "one")
            #expect(try await stores[0].coalescingLease(resourceKey: "k") == nil)
            // A lapsed lease is taken over.
            _ = try await stores[0].acquireCoalescingLease(resourceKey: "k", lease: first)
            let late = CoalescingLease(holder: "three", startedMs: 2_000, expiresMs: 3_000)
            #expect(try await stores[1].acquireCoalescingLease(resourceKey: "k", lease: late) == late)
            // Its holder renews it while it runs (a leader admitted again after a throttle wait).
            let renewed = CoalescingLease(holder: "three", startedMs: 2_500, expiresMs: 3_500)
            #expect(try await stores[0].acquireCoalescingLease(resourceKey: "k", lease: renewed) == renewed)
            let other = CoalescingLease(holder: "four", startedMs: 3_200, expiresMs: 4_200)
            #expect(try await stores[0].acquireCoalescingLease(resourceKey: "k", lease: other) == renewed)
        }
    }

    @Test("several stores storing the same response at once leave one entry", arguments: StoreBackend.available)
    func concurrentStores(backend: StoreBackend) async throws {
        try await backend.withStores(count: 4) { stores in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        _ = try await store.storeCacheEntry(
                            newEntry("same", body: "body \(index)", at: Int64(1_000 + index)), retention: roomy,
                            activity: CacheActivity()
                        )
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await stores[0].cacheTotals().entries == 1)
        }
    }

    @Test("a cache write carries the answer's bookkeeping in its transaction: circuit outcome, refund, lease release",
          arguments: StoreBackend.available)
    func bookkeepingBesideTheCacheWrite(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            guard case .reserved(let charge) = try await store.reserveQuota(QuotaReservationRequest(
                bucket: "youtube", endpoint: "videos.list", cost: 5, configuredLimit: 100, at: Date()
            )) else {
                Issue.record("refused")
                return
            }
            let lease = CoalescingLease(holder: "leader", startedMs: 1_000, expiresMs: 2_000)
            _ = try await store.acquireCoalescingLease(resourceKey: "a", lease: lease)
            let settlement = AttemptSettlement(
                endpoint: "videos.list", outcome: .failure, probeToken: nil, circuitPolicy: CircuitPolicy(),
                refundReservationID: charge.reservationID, refundReason: "304", at: Date()
            )
            let stored = try await store.storeCacheEntry(
                newEntry("a"), retention: roomy, activity: CacheActivity(),
                bookkeeping: AnswerBookkeeping(
                    settlement: settlement, leaseRelease: .init(resourceKey: "a", holder: "leader")
                )
            )
            #expect(stored.bookkeeping.settlement?.refund == .refunded(units: 5, day: charge.day))
            #expect(stored.bookkeeping.settlement?.circuit.record.consecutiveFailures == 1)
            #expect(try await store.coalescingLease(resourceKey: "a") == nil)
            #expect(try await store.quotaBucketStatus(bucket: "youtube", configuredLimit: 100, at: Date()).unitsUsed == 0)
            // A 304 that matches no entry still books its settlement.
            let revised = try await store.reviseCacheEntry(
                resourceKey: "missing", validatedSinceMs: 0, activity: CacheActivity(),
                bookkeeping: AnswerBookkeeping(settlement: AttemptSettlement(
                    endpoint: "videos.list", outcome: .failure, probeToken: nil, circuitPolicy: CircuitPolicy(), at: Date()
                ))
            ) { _ in nil }
            #expect(revised.entry == nil)
            #expect(try await store.circuit(endpoint: "videos.list")?.consecutiveFailures == 2)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        }
    }
}
