import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

@Suite("ETag cache: freshness, stale reads and statistics")
struct ETagCacheFreshnessTests {
    let url = "https://api.example.com/youtube/v3/channels?id=UC1"

    @Test("a response fresh under its own max-age is served with no request until it is stale")
    func maxAgeServedWithoutRequest() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "public, max-age=60")]),
                                              body: Data("fresh".utf8), for: request(url), endpoint: "channels.list")
        fixture.clock.advance(by: .seconds(59))
        let hit = try await fixture.cache.lookup(request(url), endpoint: "channels.list")
        #expect(hit.isFresh)
        #expect(hit.requestToSend == nil)
        #expect(hit.cachedResponse?.body == Data("fresh".utf8))
        fixture.clock.advance(by: .seconds(1))
        #expect(try await fixture.cache.lookup(request(url), endpoint: "channels.list").conditionalRequest != nil)
    }

    @Test("an Age header uses up part of the max-age")
    func ageHeader() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("Age", "50")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        fixture.clock.advance(by: .seconds(9))
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isFresh)
        fixture.clock.advance(by: .seconds(1))
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest != nil)
    }

    @Test("Expires makes a response fresh until then; an invalid Expires means stale")
    func expires() async throws {
        let fixture = try CacheFixture()
        let now = fixture.clock.now()
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Date", HTTPDateText.format(now)),
                           ("Expires", HTTPDateText.format(now.addingTimeInterval(120)))]),
            body: Data("a".utf8), for: request(url), endpoint: "e"
        )
        fixture.clock.advance(by: .seconds(119))
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isFresh)
        fixture.clock.advance(by: .seconds(1))
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest != nil)

        let other = "https://api.example.com/youtube/v3/channels?id=UC2"
        for invalid in ["0", "-1", "soon", "Fri, 31 Feb 2026 00:00:00 GMT"] {
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Expires", invalid)]),
                                                  body: Data("a".utf8), for: request(other), endpoint: "e")
            #expect(try await fixture.cache.lookup(request(other), endpoint: "e").conditionalRequest != nil, "Expires: \(invalid)")
        }
        // max-age wins over Expires.
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Expires", "0"), ("Cache-Control", "max-age=10")]),
                                              body: Data("a".utf8), for: request(other), endpoint: "e")
        #expect(try await fixture.cache.lookup(request(other), endpoint: "e").isFresh)
    }

    @Test("serving fresh responses can be turned off per endpoint, or for every endpoint")
    func freshnessOffPerEndpoint() async throws {
        var configuration = CacheConfiguration()
        configuration.alwaysRevalidatedEndpoints = ["search.list"]
        let fixture = try CacheFixture(configuration: configuration)
        let search = "https://api.example.com/youtube/v3/search?q=swift"
        for (target, endpoint) in [(url, "channels.list"), (search, "search.list")] {
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=600")]),
                                                  body: Data("a".utf8), for: request(target), endpoint: endpoint)
        }
        #expect(try await fixture.cache.lookup(request(url), endpoint: "channels.list").isFresh)
        #expect(try await fixture.cache.lookup(request(search), endpoint: "search.list").conditionalRequest != nil)

        var off = CacheConfiguration()
        off.servesFreshResponsesWithoutRequest = false
        let offFixture = try CacheFixture(configuration: off)
        try await offFixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=600")]),
                                                 body: Data("a".utf8), for: request(url), endpoint: "channels.list")
        #expect(try await offFixture.cache.lookup(request(url), endpoint: "channels.list").conditionalRequest != nil)
    }

    @Test("a stale read returns the stored response regardless of freshness, with its age, and counts as stale")
    func staleRead() async throws {
        let fixture = try CacheFixture()
        #expect(try await fixture.cache.staleResponse(for: request(url), endpoint: "e") == nil)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=10")]),
                                              body: Data("old".utf8), for: request(url), endpoint: "e")
        fixture.clock.advance(by: .seconds(3600))
        let stale = try #require(try await fixture.cache.staleResponse(for: request(url), endpoint: "e"))
        #expect(stale.body == Data("old".utf8))
        #expect(stale.age == .seconds(3600))
        #expect(stale.isFresh(at: fixture.clock.now()) == false)
        try await fixture.cache.recordStaleServe(stale, endpoint: "e")
        let stats = try await fixture.cache.statistics(on: fixture.today)
        #expect(stats.map(\.counts) == [CacheStatisticsCounts(misses: 1, stale: 1)])
    }

    @Test("fresh hits, revalidations, misses and stale serves are counted per endpoint per Pacific day in cache_stats")
    func statisticsPerEndpointPerDay() async throws {
        let fixture = try CacheFixture()
        let a = "https://api.example.com/a", b = "https://api.example.com/b"
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"a\""), ("Cache-Control", "max-age=60")]),
                                              body: Data("aaaa".utf8), for: request(a), endpoint: "a.list")
        _ = try await fixture.cache.lookup(request(a), endpoint: "a.list")
        _ = try await fixture.cache.lookup(request(a), endpoint: "a.list")
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"b\"")]), body: Data("bb".utf8), for: request(b), endpoint: "b.list")
        let conditional = try #require(try await fixture.cache.lookup(request(b), endpoint: "b.list").conditionalRequest)
        _ = try await fixture.cache.revalidated(response(304, [("ETag", "\"b\"")]), for: conditional, endpoint: "b.list")
        let day = fixture.today

        fixture.clock.advance(by: .seconds(86_400))
        let stale = try #require(try await fixture.cache.staleResponse(for: request(b), endpoint: "b.list"))
        try await fixture.cache.recordStaleServe(stale, endpoint: "b.list")
        try await fixture.cache.flush()

        let rows = try fixture.query(
            "SELECT pacific_date, endpoint, hits, revalidations, misses, stale, hit_rate, bytes_saved FROM cache_stats"
        )
        #expect(rows.map { $0.values } == [
            [.text(day.next.key), "b.list", 0, 0, 0, 1, .null, 0],
            [.text(day.key), "a.list", 2, 0, 1, 0, 0.6667, 8],
            [.text(day.key), "b.list", 0, 1, 1, 0, 0.5, 2],
        ])
        let hitCounts = try fixture.query("SELECT url, hit_count FROM cache_entries ORDER BY url").map { $0[1].int }
        #expect(hitCounts == [2, 2])
    }

    @Test("the hit rate is logged at info every configured number of outcomes; per-request detail at debug")
    func hitRateLogged() async throws {
        var configuration = CacheConfiguration()
        configuration.hitRateLogInterval = 4
        let fixture = try CacheFixture(configuration: configuration)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"a\""), ("Cache-Control", "max-age=60")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        for _ in 0..<3 { _ = try await fixture.cache.lookup(request(url), endpoint: "e") }
        let info = fixture.logs.entries.filter { $0.level == .info && $0.message.description == "cache hit rate" }
        #expect(info.count == 1)
        #expect(info.first?.metadata["cache.hit_rate"] == "0.75")
        #expect(info.first?.metadata["cache.hits"] == "3")
        #expect(info.first?.metadata["cache.misses"] == "1")
        #expect(fixture.logs.entries.contains { $0.level == .debug && $0.message.description == "cache hit: fresh" })
        #expect(fixture.logs.entries.contains { $0.level == .debug && $0.message.description == "cache miss: stored" })
    }

    /// A cache whose buffered uses are written every `threshold` uses, and not by age within a test.
    private static func fixture(flushingEvery threshold: Int) throws -> CacheFixture {
        var configuration = CacheConfiguration()
        configuration.activityFlushThreshold = threshold
        configuration.activityFlushInterval = .seconds(3600)
        return try CacheFixture(configuration: configuration)
    }

    @Test("fresh hits and misses are buffered, not written one by one; the buffer is written once the threshold is reached")
    func hitsAreBuffered() async throws {
        let fixture = try Self.fixture(flushingEvery: 5)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"a\""), ("Cache-Control", "max-age=60")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        let counts = { try fixture.query("SELECT hits, misses FROM cache_stats").first.map { [$0[0].int, $0[1].int] } }
        #expect(try counts() == nil, "the store's miss waits in the buffer")
        for _ in 0..<3 { _ = try await fixture.cache.lookup(request(url), endpoint: "e") }
        #expect(try counts() == nil)
        _ = try await fixture.cache.lookup(request(url), endpoint: "e") // the fifth use: the miss and four hits
        #expect(try counts() == [4, 1])
        _ = try await fixture.cache.lookup(request(url), endpoint: "e")
        fixture.clock.advance(by: .seconds(3600))
        _ = try await fixture.cache.lookup(request(url), endpoint: "e") // stale now: a revalidation, nothing buffered
        try await fixture.cache.flush()
        #expect(try counts() == [5, 1])
    }

    @Test("a run of stores writes the day's statistics once per threshold, and an LRU touch still goes with the next store")
    func missesAreBufferedUntilDue() async throws {
        let fixture = try Self.fixture(flushingEvery: 3)
        let misses = { try fixture.query("SELECT misses FROM cache_stats").first?[0].int ?? 0 }
        func store(_ index: Int) async throws {
            try await fixture.cache.storeResponse(
                response(200, [("ETag", "\"\(index)\""), ("Cache-Control", "max-age=60")]),
                body: Data("\(index)".utf8), for: request("\(url)/\(index)"), endpoint: "e"
            )
        }
        try await store(1)
        try await store(2)
        #expect(try misses() == 0)
        try await store(3) // the third miss: due, written with this store
        #expect(try misses() == 3)
        try await store(4)
        #expect(try misses() == 3)
        // A hit buffers a touch: the next store carries the buffer, miss counts included.
        fixture.clock.advance(by: .seconds(1))
        #expect(try await fixture.cache.lookup(request("\(url)/1"), endpoint: "e").isFresh)
        try await store(5)
        #expect(try misses() == 5)
        #expect(try fixture.query("SELECT hit_count FROM cache_entries WHERE url LIKE '%/1'").first?[0].int == 1)
        // After an interval the oldest buffered miss is due too.
        try await store(6)
        fixture.clock.advance(by: .seconds(3600))
        try await store(7)
        #expect(try misses() == 7)
    }

    @Test("a run of 304s writes its revalidation counts once per threshold, not a statistics row with each revision")
    func revalidationsAreBufferedUntilDue() async throws {
        let fixture = try Self.fixture(flushingEvery: 3)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v\"")]), body: Data("abcd".utf8),
                                              for: request(url), endpoint: "e")
        let counts = { try fixture.query("SELECT misses, revalidations, bytes_saved FROM cache_stats").first.map {
            [$0[0].int, $0[1].int, $0[2].int]
        } }
        func revalidate() async throws {
            let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
            #expect(try await fixture.cache.revalidated(response(304, [("ETag", "\"v\"")]), for: conditional, endpoint: "e") != nil)
        }
        try await revalidate()
        try await revalidate()
        #expect(try counts() == nil, "one miss and two revalidations wait in memory")
        try await revalidate() // its revision carries the three uses gathered before it
        #expect(try counts() == [1, 2, 8])
        #expect(try fixture.query("SELECT hit_count FROM cache_entries").first?[0].int == 3, "each revision counts its use")
        try await fixture.cache.flush()
        #expect(try counts() == [1, 3, 12])
    }
}

/// Formats HTTP dates for tests, independently of the library's parser.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
