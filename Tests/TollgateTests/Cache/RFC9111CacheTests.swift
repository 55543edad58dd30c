import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
@testable import Tollgate

/// RFC 9111 rules of the cache service over real SQLite files: what is stored, the age kept in
/// the file, and when a stored response may stand in for an answer on an error.
@Suite("RFC 9111: storage, age and stale rules of the ETag cache on SQLite files")
struct RFC9111CacheTests {
    let url = "https://api.example.com/youtube/v3/videos?id=1"

    @Test("§3.1: hop-by-hop fields and the fields Connection names are not stored, from a 200 or merged from a 304")
    func connectionFieldsNotStored() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"1\""), ("Connection", "close, X-Trace"), ("X-Trace", "abc"), ("Keep-Alive", "5"),
                           ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("X-Kept", "1")]),
            body: Data("a".utf8), for: request(url), endpoint: "e"
        )
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
        let merged = try #require(try await fixture.cache.revalidated(
            response(304, [("ETag", "\"1\""), ("Connection", "X-Other"), ("X-Other", "1"), ("X-Kept", "2")]),
            for: conditional, endpoint: "e"
        ))
        let names = Set(merged.headerFields.map(\.name.canonicalName))
        #expect(names == ["etag", "x-kept", "age"])
        #expect(merged.headerFields[HTTPField.Name("X-Kept")!] == "2")
        let stored = try #require(try fixture.query("SELECT headers FROM cache_entries").first?[0].string)
        #expect(stored == "ETag: \"1\"\nX-Kept: 2")
    }

    @Test("§4.2.3: the initial age is kept in the file, so another process serves the same Age later")
    func agePersists() async throws {
        let fixture = try CacheFixture()
        let sent = fixture.clock.now()
        fixture.clock.advance(by: .seconds(2))  // the response took 2 s
        try await fixture.cache.storeResponse(response(200, [("Age", "40"), ("Cache-Control", "max-age=600")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e", requestedAt: sent)
        #expect(try fixture.query("SELECT initial_age_ms FROM cache_entries").first?[0].int == 42_000)
        try fixture.reopen()
        fixture.clock.advance(by: .seconds(100))
        let hit = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").cachedResponse)
        #expect(hit.age == .seconds(142))
        #expect(hit.headerFields[values: .age] == ["142"])
    }

    @Test("§4.3.4: a 304's own Date and Age restart the age; the stored Date is replaced only when the 304 sends one")
    func revalidationRestartsAge() async throws {
        let fixture = try CacheFixture()
        let date = HTTPDateText.format(fixture.clock.now())
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"1\""), ("Date", date), ("Cache-Control", "max-age=60")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        fixture.clock.advance(by: .seconds(120))
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
        let revalidated = try #require(try await fixture.cache.revalidated(response(304, [("ETag", "\"1\""), ("Age", "5")]),
                                                                           for: conditional, endpoint: "e"))
        // The stored Date (120 s ago) stays, but the 304's Age is what the revalidated answer is based on.
        #expect(revalidated.headerFields[.date] == date)
        #expect(revalidated.age == .seconds(5))
        #expect(revalidated.isFresh(at: fixture.clock.now()))
    }

    @Test("an entry stored before migration 2 reads back with an initial age of 0")
    func entryFromVersionOne() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        let old = try SQLiteStore(path: path, configuration: .init(migrations: Array(Migration.all.prefix(1))))
        let fixture = try CacheFixture()
        let key = try fixture.cache.key(for: request(url))
        let nowMs = Int64(CacheFixture.start.timeIntervalSince1970 * 1000)
        try await old.write { db in
            try db.execute(
                sql: """
                INSERT INTO cache_entries (resource_key, endpoint, method, url, status, headers, etag, body_size,
                    stored_at_ms, validated_at_ms, fresh_until_ms, last_access_ms)
                VALUES (?, 'e', 'GET', ?, 200, 'ETag: "1"', '"1"', 1, ?, ?, ?, ?)
                """,
                // The key as that release spelled it, the digest alone: version 8 puts the URL in front.
                arguments: [String(decoding: key.resourceKey.utf8.dropFirst(key.url.utf8.count + 1), as: UTF8.self),
                            key.url, nowMs, nowMs, nowMs + 60_000, nowMs]
            )
            try db.execute(sql: "INSERT INTO cache_bodies (entry_id, body) VALUES (last_insert_rowid(), x'61')")
        }
        let upgraded = try SQLiteStore(path: path)
        let cache = try ETagCache(storage: upgraded, clock: fixture.clock)
        fixture.clock.advance(by: .seconds(30))
        let hit = try await cache.lookup(request(url), endpoint: "e")
        #expect(hit.isFresh)
        #expect(hit.cachedResponse?.age == .seconds(30))
    }

    @Test("§4.2.4 and RFC 5861: which stored responses may stand in for an answer on an error")
    func staleOnErrorRules() async throws {
        let fixture = try CacheFixture()
        func stored(_ cacheControl: String?, _ path: String) async throws -> CachedResponse {
            let headers = cacheControl.map { [("Cache-Control", $0)] } ?? []
            return try #require(try await fixture.cache.storeResponse(response(200, headers), body: Data(),
                                                                     for: request("https://api.example.com\(path)"), endpoint: "e"))
        }
        let plain = try await stored(nil, "/plain")
        let mustRevalidate = try await stored("max-age=60, must-revalidate", "/must")
        let proxy = try await stored("max-age=60, proxy-revalidate", "/proxy")
        let noCache = try await stored("no-cache", "/no-cache")
        let limited = try await stored("max-age=60, stale-if-error=30", "/limited")
        let any = request(url)
        let start = fixture.clock.now()
        let later = start.addingTimeInterval(80)  // 20 s past max-age=60
        #expect(plain.mayServeStaleOnError(for: any, at: later.addingTimeInterval(86_400)))
        #expect(mustRevalidate.mayServeStaleOnError(for: any, at: start.addingTimeInterval(59)), "fresh: allowed")
        #expect(!mustRevalidate.mayServeStaleOnError(for: any, at: later))
        #expect(!proxy.mayServeStaleOnError(for: any, at: later))
        #expect(!noCache.mayServeStaleOnError(for: any, at: start))
        #expect(limited.mayServeStaleOnError(for: any, at: later))
        #expect(!limited.mayServeStaleOnError(for: any, at: later.addingTimeInterval(11)))
        let strictRequest = request(url, headers: [("Cache-Control", "stale-if-error=10")])
        #expect(!plain.mayServeStaleOnError(for: strictRequest, at: start.addingTimeInterval(11)), "the request's limit too")
    }

    @Test("§4.3.5: a HEAD 200 whose Content-Length differs from the stored body makes the stored GET stale")
    func headLengthMismatch() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=600")]),
                                              body: Data("four".utf8), for: request(url), endpoint: "e")
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"1\""), ("Content-Length", "5")]), body: Data(),
                                              for: request(url, method: .head), endpoint: "e")
        let lookup = try await fixture.cache.lookup(request(url), endpoint: "e")
        #expect(lookup.conditionalRequest?.headerFields[.ifNoneMatch] == "\"1\"")
        let stats = try await fixture.cache.statistics(on: fixture.today)
        #expect(stats.map(\.counts.revalidations) == [0], "marking stale is not a revalidation")
    }

    @Test("§4.1: Vary matching ignores whitespace and the order and case of Accept-Encoding and Accept-Language members")
    func varyNormalisation() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"1\""), ("Vary", "Accept-Encoding, Accept-Language"), ("Cache-Control", "max-age=60")]),
            body: Data("a".utf8), for: request(url, headers: [("Accept-Encoding", "gzip, br;q=0.5"), ("Accept-Language", "en")]),
            endpoint: "e"
        )
        let same = request(url, headers: [("accept-encoding", "BR ; q=0.5,GZIP"), ("Accept-Language", "EN")])
        #expect(try await fixture.cache.lookup(same, endpoint: "e").isFresh)
        let split = request(url, headers: [("Accept-Encoding", "br;q=0.5"), ("Accept-Encoding", "gzip"), ("Accept-Language", "en")])
        #expect(try await fixture.cache.lookup(split, endpoint: "e").isFresh, "two lines are one list")
        let other = request(url, headers: [("Accept-Encoding", "gzip"), ("Accept-Language", "en")])
        #expect(try await fixture.cache.lookup(other, endpoint: "e").isMiss)
        // Other fields keep their case and order: only whitespace is normalised.
        #expect(VaryNormalisation.normalised(["A,  B"], field: "x-custom") == "A, B")
        #expect(VaryNormalisation.normalised(["b, a"], field: "x-custom") != VaryNormalisation.normalised(["a, b"], field: "x-custom"))
    }

    @Test("§5.2.2.3: must-understand stores a known status despite no-store, and never an unknown one")
    func mustUnderstand() async throws {
        let fixture = try CacheFixture()
        let known = try await fixture.cache.storeResponse(
            response(200, [("Cache-Control", "max-age=60, must-understand, no-store")]), body: Data("a".utf8),
            for: request(url), endpoint: "e"
        )
        #expect(known != nil)
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isFresh)
        let unknown = try await fixture.cache.storeResponse(
            response(299, [("Cache-Control", "max-age=60, must-understand")]), body: Data(),
            for: request("https://api.example.com/unknown"), endpoint: "e"
        )
        #expect(unknown == nil)
        #expect(try await fixture.cache.storeResponse(response(299, [("Cache-Control", "max-age=60")]), body: Data(),
                                                      for: request("https://api.example.com/unknown"), endpoint: "e") != nil,
                "without must-understand, explicit freshness is enough")
    }

    @Test("§3.3: a 206 to a Range request neither is stored nor removes the stored full response; a 202 removes it")
    func partialContentKeepsTheFullResponse() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=60")]),
                                              body: Data("full".utf8), for: request(url), endpoint: "e")
        try await fixture.cache.storeResponse(response(206, [("ETag", "\"1\""), ("Content-Range", "bytes 0-1/4")]),
                                              body: Data("fu".utf8), for: request(url, headers: [("Range", "bytes=0-1")]),
                                              endpoint: "e")
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").cachedResponse?.body == Data("full".utf8))
        try await fixture.cache.storeResponse(response(202), body: Data(), for: request(url), endpoint: "e")
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isMiss)
    }
}
