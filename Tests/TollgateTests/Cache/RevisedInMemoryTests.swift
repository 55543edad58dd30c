import Foundation
import HTTPTypes
import Testing
@testable import Tollgate
import TollgateTestSupport

/// The answer the gate gives a 304 before writing it must be what the write leaves stored.
@Suite("A 304's revision computed in memory")
struct RevisedInMemoryTests {
    let url = "https://api.example.com/videos?id=abc"

    /// Stores a no-cache 200 with an ETag, lets 30 s pass and looks it up: the stored response
    /// and the conditional request the gate would send.
    private func storedForRevalidation(
        _ fixture: CacheFixture, body: Data = Data("body".utf8)
    ) async throws -> (stored: CachedResponse, conditional: HTTPRequest) {
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Cache-Control", "no-cache"), ("X-Served-By", "cache-1")]),
            body: body, for: request(url), endpoint: "videos.list"
        )
        fixture.clock.advance(by: .seconds(30))
        guard case .revalidate(let stored, let conditional) = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
        else { throw RevalidationExpected() }
        return (stored, conditional)
    }

    private struct RevalidationExpected: Error {}

    @Test("the revision computed in memory equals the one written: headers, validators, freshness, age and body")
    func inMemoryEqualsWritten() async throws {
        let fixture = try CacheFixture()
        let body = Data(#"{"items":[{"id":"abc"}]}"#.utf8)
        let (stored, conditional) = try await storedForRevalidation(fixture, body: body)
        let notModified = response(304, [("ETag", "W/\"v1\""), ("Cache-Control", "max-age=600"), ("X-Served-By", "cache-2"),
                                         ("Age", "5")])
        let now = fixture.clock.now()

        let inMemory = try #require(fixture.cache.revisedInMemory(notModified, of: stored, for: conditional,
                                                                 endpoint: "videos.list", requestedAt: nil, at: now)).response
        // Selected and revised again in the store's transaction, as a write without an answer does.
        let written = try #require(try await fixture.cache.revalidated(
            notModified, for: conditional, endpoint: "videos.list", requestedAt: nil, bookkeeping: AnswerBookkeeping(),
            at: now
        ).cached)
        #expect(inMemory.headerFields == written.headerFields)
        #expect(inMemory.headerFields[.cacheControl] == "max-age=600")
        #expect(inMemory.etag == written.etag)
        #expect(inMemory.freshUntil == written.freshUntil)
        #expect(inMemory.validatedAt == written.validatedAt)
        #expect(inMemory.age == written.age)
        #expect(inMemory.age == .seconds(5))
        #expect(inMemory.body == body)
        #expect(inMemory.body == written.body)
        // The next lookup reads the written entry: fresh now, with the same answer.
        guard case .fresh(let next) = try await fixture.cache.lookup(request(url), endpoint: "videos.list") else {
            Issue.record("expected the revised entry to be fresh"); return
        }
        #expect(next.headerFields == inMemory.headerFields)
    }

    @Test("a 304 whose Last-Modified contradicts the stored one gives no answer in memory, as the store selects nothing")
    func contradictingLastModifiedGivesNothing() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(
            response(200, [("Last-Modified", "Tue, 24 Nov 2026 08:00:00 GMT"), ("Cache-Control", "max-age=0")]),
            body: Data("x".utf8), for: request(url), endpoint: "e"
        )
        guard case .revalidate(let stored, let conditional) = try await fixture.cache.lookup(request(url), endpoint: "e")
        else { Issue.record("expected a revalidation"); return }
        let contradicting = response(304, [("Last-Modified", "Wed, 25 Nov 2026 08:00:00 GMT")])
        #expect(fixture.cache.revisedInMemory(contradicting, of: stored, for: conditional, endpoint: "e",
                                              requestedAt: nil, at: fixture.clock.now()) == nil)
        let written = try await fixture.cache.revalidated(contradicting, for: conditional, endpoint: "e", requestedAt: nil,
                                                          bookkeeping: AnswerBookkeeping())
        #expect(written.cached == nil)
    }

    @Test("the write after the answer applies the revision computed for it while the entry is unchanged, and writes what the answer said")
    func answeredRevisionWritten() async throws {
        let fixture = try CacheFixture()
        let (stored, conditional) = try await storedForRevalidation(fixture)
        let notModified = response(304, [("ETag", "\"v1\""), ("Cache-Control", "max-age=600"), ("X-Served-By", "cache-2")])
        let now = fixture.clock.now()
        let answered = try #require(fixture.cache.revisedInMemory(notModified, of: stored, for: conditional,
                                                                 endpoint: "videos.list", requestedAt: nil, at: now))
        let written = try #require(try await fixture.cache.revalidated(
            notModified, for: conditional, endpoint: "videos.list", requestedAt: nil, bookkeeping: AnswerBookkeeping(),
            at: now, answered: answered
        ).cached)
        #expect(written.headerFields == answered.response.headerFields)
        #expect(written.freshUntil == answered.response.freshUntil)
        #expect(written.validatedAt == answered.response.validatedAt)
        guard case .fresh(let next) = try await fixture.cache.lookup(request(url), endpoint: "videos.list") else {
            Issue.record("expected the revised entry to be fresh"); return
        }
        #expect(next.headerFields == answered.response.headerFields)
    }

    @Test("an entry revised by another answer before the write is revised as it is then, not overwritten with the older revision")
    func entryRevisedMeanwhileMergedAgain() async throws {
        let fixture = try CacheFixture()
        let (stored, conditional) = try await storedForRevalidation(fixture)
        let ours = response(304, [("ETag", "\"v1\""), ("X-Served-By", "cache-2")])
        let answered = try #require(fixture.cache.revisedInMemory(ours, of: stored, for: conditional,
                                                                 endpoint: "videos.list", requestedAt: nil,
                                                                 at: fixture.clock.now()))
        // Another request's 304 reaches the store first and adds a field.
        fixture.clock.advance(by: .seconds(1))
        let other = response(304, [("ETag", "\"v1\""), ("X-Request-Budget", "7")])
        _ = try #require(try await fixture.cache.revalidated(other, for: conditional, endpoint: "videos.list",
                                                              requestedAt: nil))
        let written = try #require(try await fixture.cache.revalidated(
            ours, for: conditional, endpoint: "videos.list", requestedAt: nil, bookkeeping: AnswerBookkeeping(),
            at: fixture.clock.now(), answered: answered
        ).cached)
        #expect(written.headerFields[HTTPField.Name("X-Request-Budget")!] == "7", "the other revision's field stays")
        #expect(written.headerFields[HTTPField.Name("X-Served-By")!] == "cache-2")
    }
}
