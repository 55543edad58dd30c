import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

@Suite("ETag cache: eviction and limits")
struct ETagCacheEvictionTests {
    private func url(_ index: Int) -> String { "https://api.example.com/v1/items/\(index)" }

    @Test("the 1001st entry evicts the least recently used one")
    func lruAtCapacity() async throws {
        var configuration = CacheConfiguration()
        configuration.activityFlushThreshold = 10_000 // the touch below stays buffered until the store
        configuration.activityFlushInterval = .seconds(86_400)
        let fixture = try CacheFixture(configuration: configuration)
        for index in 1...1000 {
            fixture.clock.advance(by: .milliseconds(10))
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"\(index)\""), ("Cache-Control", "max-age=86400")]),
                                                  body: Data("body \(index)".utf8), for: request(url(index)), endpoint: "e")
        }
        #expect(try await fixture.cache.totals().entries == 1000)
        // Entry 1 is the oldest, but a fresh hit makes it the most recently used; entry 2 is now LRU.
        fixture.clock.advance(by: .milliseconds(10))
        #expect(try await fixture.cache.lookup(request(url(1)), endpoint: "e").isFresh)
        fixture.clock.advance(by: .milliseconds(10))
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"1001\"")]), body: Data("body 1001".utf8),
                                              for: request(url(1001)), endpoint: "e")
        #expect(try await fixture.cache.totals().entries == 1000)
        #expect(try await fixture.cache.lookup(request(url(2)), endpoint: "e").isMiss)
        #expect(try await fixture.cache.lookup(request(url(1)), endpoint: "e").cachedResponse != nil)
        #expect(try await fixture.cache.lookup(request(url(3)), endpoint: "e").cachedResponse != nil)
        #expect(try await fixture.cache.lookup(request(url(1001)), endpoint: "e").cachedResponse != nil)
        #expect(try fixture.count("cache_entries") == 1000)
        #expect(try fixture.count("cache_bodies") == 1000)
    }

    @Test("an entry 7 days and 1 second after it was stored is gone; a revalidation restarts the 7 days")
    func sevenDayExpiry() async throws {
        let fixture = try CacheFixture()
        let old = url(1), renewed = url(2)
        for target in [old, renewed] {
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"v\"")]), body: Data("x".utf8),
                                                  for: request(target), endpoint: "e")
        }
        fixture.clock.advance(by: .seconds(6 * 86_400))
        let conditional = try #require(try await fixture.cache.lookup(request(renewed), endpoint: "e").conditionalRequest)
        #expect(try await fixture.cache.revalidated(response(304, [("ETag", "\"v\"")]), for: conditional, endpoint: "e") != nil)

        fixture.clock.advance(by: .seconds(86_400))
        #expect(try await fixture.cache.lookup(request(old), endpoint: "e").cachedResponse != nil, "exactly 7 days: still there")
        fixture.clock.advance(by: .seconds(1))
        #expect(try await fixture.cache.lookup(request(old), endpoint: "e").isMiss)
        #expect(try await fixture.cache.staleResponse(for: request(old), endpoint: "e") == nil)
        #expect(try await fixture.cache.lookup(request(renewed), endpoint: "e").cachedResponse != nil)
        let pruned = try await fixture.cache.prune()
        #expect(pruned.expired == 1)
        #expect(try fixture.query("SELECT url FROM cache_entries").map { $0[0].string } == [renewed])
        #expect(try fixture.count("cache_bodies") == 1)
    }

    @Test("a body over the cap is not stored, and the entry it replaces is removed")
    func bodyOverCap() async throws {
        var configuration = CacheConfiguration()
        configuration.maxBodySize = 1024
        let fixture = try CacheFixture(configuration: configuration)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"small\"")]), body: Data(count: 1024),
                                              for: request(url(1)), endpoint: "e")
        #expect(try await fixture.cache.totals() == CacheTotals(entries: 1, bodyBytes: 1024))
        let stored = try await fixture.cache.storeResponse(response(200, [("ETag", "\"big\"")]), body: Data(count: 1025),
                                                           for: request(url(1)), endpoint: "e")
        #expect(stored == nil)
        #expect(try await fixture.cache.totals() == CacheTotals(entries: 0, bodyBytes: 0))
        #expect(CacheConfiguration().maxBodySize == 5 * 1024 * 1024)
    }

    @Test("total body bytes stay under the budget, evicting least recently used entries first")
    func byteBudget() async throws {
        var configuration = CacheConfiguration()
        configuration.maxTotalBodyBytes = 3000
        let fixture = try CacheFixture(configuration: configuration)
        for index in 1...3 {
            fixture.clock.advance(by: .seconds(1))
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"\(index)\"")]), body: Data(count: 1000),
                                                  for: request(url(index)), endpoint: "e")
        }
        fixture.clock.advance(by: .seconds(1))
        let conditional = try #require(try await fixture.cache.lookup(request(url(1)), endpoint: "e").conditionalRequest)
        _ = try await fixture.cache.revalidated(response(304), for: conditional, endpoint: "e") // 1 is now the newest
        fixture.clock.advance(by: .seconds(1))
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"4\"")]), body: Data(count: 1500),
                                              for: request(url(4)), endpoint: "e")
        #expect(try await fixture.cache.totals() == CacheTotals(entries: 2, bodyBytes: 2500))
        #expect(try await fixture.cache.lookup(request(url(1)), endpoint: "e").cachedResponse != nil)
        #expect(try await fixture.cache.lookup(request(url(2)), endpoint: "e").isMiss)
        #expect(try await fixture.cache.lookup(request(url(3)), endpoint: "e").isMiss)
    }

    @Test("an impossible configuration is refused with a typed error")
    func invalidConfiguration() throws {
        var configuration = CacheConfiguration()
        configuration.maxEntries = 0
        let store = try SQLiteStore(location: .inMemory)
        #expect(throws: CacheError.self) {
            try ETagCache(storage: store, configuration: configuration, clock: ManualClock())
        }
    }
}

@Suite("ETag cache: several processes on one file")
struct CacheMultiProcessTests {
    @Test("four processes storing at once keep the capacity, and the trigger-kept totals match the tables")
    func concurrentStoresKeepTotalsExact() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        _ = try SQLiteStore(path: path)
        let results = try await WorkerProcess.runConcurrently("cache-store", count: 4) { ["\(path)", "w\($0)", "60", "100"] }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let evicted = results.compactMap { Int($0.stdout.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") }
        #expect(evicted.reduce(0, +) == 140)

        let store = try SQLiteStore(path: path)
        let check = try await store.read { db in
            try db.fetchOne(sql: """
                SELECT (SELECT entries FROM cache_totals), (SELECT COUNT(*) FROM cache_entries),
                       (SELECT body_bytes FROM cache_totals), (SELECT SUM(body_size) FROM cache_entries),
                       (SELECT SUM(length(body)) FROM cache_bodies), (SELECT COUNT(*) FROM cache_bodies),
                       (SELECT misses FROM cache_stats_daily WHERE endpoint = 'worker')
                """)
        }
        let values = try #require(check).values.map { $0.int64 }
        #expect(values[0] == 100)
        #expect(values[0] == values[1])
        #expect(values[2] == values[3])
        #expect(values[3] == values[4])
        #expect(values[5] == 100)
        #expect(values[6] == 240)
    }
}
