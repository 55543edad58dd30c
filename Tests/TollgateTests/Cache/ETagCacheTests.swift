import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
import Tollgate

@Suite("ETag cache: conditional requests, 304 and 200")
struct ETagCacheTests {
    let url = "https://api.example.com/youtube/v3/videos?id=abc&part=snippet"

    @Test("a stored entry turns the next request into one with If-None-Match carrying the ETag exactly")
    func ifNoneMatchCarriesETagVerbatim() async throws {
        let fixture = try CacheFixture()
        let etag = "\"Zx9-Qk/aB+c=\""
        let first = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
        #expect(first.isMiss)
        #expect(first.requestToSend?.headerFields[.ifNoneMatch] == nil)
        let stored = try await fixture.cache.storeResponse(
            response(200, [("ETag", etag), ("Content-Type", "application/json")]), body: Data("{\"v\":1}".utf8),
            for: request(url), endpoint: "videos.list"
        )
        #expect(stored?.etag == etag)

        let second = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
        let conditional = try #require(second.conditionalRequest)
        #expect(conditional.headerFields[values: .ifNoneMatch] == [etag])
        #expect(conditional.headerFields[.ifModifiedSince] == nil)
        #expect(conditional.path == request(url).path)
        #expect(second.cachedResponse?.body == Data("{\"v\":1}".utf8))
    }

    @Test("with only Last-Modified, the request carries If-Modified-Since with it")
    func ifModifiedSinceWithOnlyLastModified() async throws {
        let fixture = try CacheFixture()
        let lastModified = "Tue, 24 Nov 2026 08:00:00 GMT"
        // max-age=0: without it the heuristic (RFC 9111 §4.2.2) would make the response fresh for a while.
        try await fixture.cache.storeResponse(
            response(200, [("Last-Modified", lastModified), ("Cache-Control", "max-age=0")]), body: Data("x".utf8),
            for: request(url), endpoint: "e"
        )
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
        #expect(conditional.headerFields[.ifModifiedSince] == lastModified)
        #expect(conditional.headerFields[.ifNoneMatch] == nil)

        // A 304 with the same Last-Modified confirms the entry.
        let revalidated = try await fixture.cache.revalidated(
            response(304, [("Last-Modified", lastModified)]), for: conditional, endpoint: "e"
        )
        #expect(revalidated?.body == Data("x".utf8))
    }

    @Test("a 304 returns the stored body, and its new Cache-Control and ETag are persisted in the file")
    func notModifiedMergesAndPersists() async throws {
        let fixture = try CacheFixture()
        let body = Data(#"{"items":[{"id":"abc"}]}"#.utf8)
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Cache-Control", "no-cache"), ("Content-Length", "\(body.count)"),
                           ("X-Served-By", "cache-1")]),
            body: body, for: request(url), endpoint: "videos.list"
        )
        fixture.clock.advance(by: .seconds(30))
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "videos.list").conditionalRequest)
        let revalidated = try await fixture.cache.revalidated(
            response(304, [("ETag", "W/\"v1\""), ("Cache-Control", "max-age=600"), ("Content-Length", "0"),
                           ("X-Served-By", "cache-2")]),
            for: conditional, endpoint: "videos.list"
        )
        let cached = try #require(revalidated)
        #expect(cached.body == body)
        #expect(cached.etag == "W/\"v1\"")
        #expect(cached.headerFields[.cacheControl] == "max-age=600")
        #expect(cached.headerFields[values: HTTPField.Name("X-Served-By")!] == ["cache-2"])
        #expect(cached.headerFields[.contentLength] == "\(body.count)", "Content-Length of the 304 is not merged")
        #expect(cached.validatedAt == fixture.clock.now())
        #expect(cached.storedAt == CacheFixture.start)

        // Another process opens the file: it sees the merged headers, and the new max-age makes the
        // entry fresh, so it is served with no request.
        try fixture.reopen()
        let row = try #require(try fixture.query("SELECT etag, headers, validated_at_ms FROM cache_entries").first)
        #expect(row[0].string == "W/\"v1\"")
        #expect(row[1].string?.contains("Cache-Control: max-age=600") == true)
        #expect(row[1].string?.contains("no-cache") == false)
        let lookup = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
        #expect(lookup.isFresh)
        #expect(lookup.cachedResponse?.body == body)
        #expect(lookup.cachedResponse?.headerFields[.cacheControl] == "max-age=600")
    }

    @Test("a weak ETag round-trips: stored verbatim, sent verbatim, confirmed by a 304 with the strong form too")
    func weakETagRoundTrip() async throws {
        let fixture = try CacheFixture()
        let weak = "W/\"0815\""
        try await fixture.cache.storeResponse(response(200, [("ETag", weak)]), body: Data("w".utf8), for: request(url), endpoint: "e")
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
        #expect(conditional.headerFields[.ifNoneMatch] == weak)
        #expect(try fixture.query("SELECT etag FROM cache_entries").first?[0].string == weak)
        let confirmed = try await fixture.cache.revalidated(response(304, [("ETag", weak)]), for: conditional, endpoint: "e")
        #expect(confirmed?.body == Data("w".utf8))
        #expect(confirmed?.etag == weak)
        let strong = try await fixture.cache.revalidated(response(304, [("ETag", "\"0815\"")]), for: conditional, endpoint: "e")
        #expect(strong?.body == Data("w".utf8), "If-None-Match uses weak comparison")
    }

    @Test("a 200 replaces the entry: new validators, headers and body; counted as a miss")
    func okReplaces() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("X-Version", "1")]),
                                              body: Data("one".utf8), for: request(url), endpoint: "e")
        let conditional = try #require(try await fixture.cache.lookup(request(url), endpoint: "e").conditionalRequest)
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v2\""), ("X-Other", "2")]),
                                              body: Data("two!".utf8), for: conditional, endpoint: "e")
        let next = try await fixture.cache.lookup(request(url), endpoint: "e")
        #expect(next.conditionalRequest?.headerFields[.ifNoneMatch] == "\"v2\"")
        #expect(next.cachedResponse?.body == Data("two!".utf8))
        #expect(next.cachedResponse?.headerFields[HTTPField.Name("X-Version")!] == nil)
        #expect(try fixture.count("cache_entries") == 1)
        #expect(try fixture.count("cache_bodies") == 1)
        let stats = try await fixture.cache.statistics(on: fixture.today)
        #expect(stats.map(\.counts.misses) == [2])
    }

    @Test("Cache-Control: no-store is never stored and purges what was stored")
    func noStore() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\"")]), body: Data("a".utf8), for: request(url), endpoint: "e")
        #expect(try fixture.count("cache_entries") == 1)
        let stored = try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v2\""), ("Cache-Control", "private, no-store")]), body: Data("b".utf8),
            for: request(url), endpoint: "e"
        )
        #expect(stored == nil)
        #expect(try fixture.count("cache_entries") == 0)
        #expect(try fixture.count("cache_bodies") == 0)
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isMiss)
    }

    @Test("Cache-Control: no-cache is stored but always revalidated, even with a max-age")
    func noCache() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Cache-Control", "no-cache, max-age=3600")]), body: Data("a".utf8),
            for: request(url), endpoint: "e"
        )
        #expect(try fixture.count("cache_entries") == 1)
        let lookup = try await fixture.cache.lookup(request(url), endpoint: "e")
        #expect(lookup.conditionalRequest?.headerFields[.ifNoneMatch] == "\"v1\"")
    }

    @Test("Vary: Accept-Language keeps two variants of one URL, each answering its own language")
    func varyVariants() async throws {
        let fixture = try CacheFixture()
        let english = request(url, headers: [("Accept-Language", "en")])
        let french = request(url, headers: [("Accept-Language", "fr")])
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"en\""), ("Vary", "Accept-Language")]),
                                              body: Data("hello".utf8), for: english, endpoint: "e")
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"fr\""), ("Vary", "accept-language")]),
                                              body: Data("bonjour".utf8), for: french, endpoint: "e")
        #expect(try fixture.count("cache_entries") == 2)

        let en = try await fixture.cache.lookup(english, endpoint: "e")
        let fr = try await fixture.cache.lookup(french, endpoint: "e")
        #expect(en.cachedResponse?.body == Data("hello".utf8))
        #expect(en.conditionalRequest?.headerFields[.ifNoneMatch] == "\"en\"")
        #expect(fr.cachedResponse?.body == Data("bonjour".utf8))
        #expect(fr.conditionalRequest?.headerFields[.ifNoneMatch] == "\"fr\"")
        #expect(try await fixture.cache.lookup(request(url, headers: [("Accept-Language", "de")]), endpoint: "e").isMiss)
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isMiss, "no header is not the same as en")

        // A 304 for French updates the French variant only.
        let confirmed = try await fixture.cache.revalidated(response(304, [("ETag", "\"fr\""), ("X-Checked", "yes")]),
                                                            for: try #require(fr.conditionalRequest), endpoint: "e")
        #expect(confirmed?.body == Data("bonjour".utf8))
        let english304 = try await fixture.cache.lookup(english, endpoint: "e")
        #expect(english304.cachedResponse?.headerFields[HTTPField.Name("X-Checked")!] == nil)
    }

    @Test("Vary: * is never stored, so it never matches")
    func varyStar() async throws {
        let fixture = try CacheFixture()
        let stored = try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Vary", "Accept, *")]), body: Data("a".utf8), for: request(url), endpoint: "e"
        )
        #expect(stored == nil)
        #expect(try await fixture.cache.lookup(request(url), endpoint: "e").isMiss)
    }

    @Test("RFC 9111 §3: a 206, a 304, and statuses not cacheable by default without explicit freshness are not stored")
    func unstorableResponses() async throws {
        let fixture = try CacheFixture()
        #expect(try await fixture.cache.storeResponse(response(206, [("ETag", "\"p\""), ("Cache-Control", "max-age=60")]),
                                                      body: Data("a".utf8), for: request(url), endpoint: "e") == nil)
        for status in [201, 202, 302, 400, 403, 500, 503] {
            #expect(try await fixture.cache.storeResponse(response(status, [("ETag", "\"n\"")]), body: Data("a".utf8),
                                                          for: request(url), endpoint: "e") == nil, "\(status)")
        }
        #expect(try fixture.count("cache_entries") == 0)
    }

    @Test("RFC 9111 §3: a response without validators, and a 404 or 410, are stored (the cache once required a validator)")
    func storableWithoutValidators() async throws {
        let fixture = try CacheFixture()
        let plain = try await fixture.cache.storeResponse(response(200), body: Data("a".utf8), for: request(url), endpoint: "e")
        #expect(plain?.etag == nil && plain?.lastModified == nil)
        // Stale at once (no freshness) and no validator: fetched again in full, with no conditional field.
        let lookup = try await fixture.cache.lookup(request(url), endpoint: "e")
        #expect(lookup.cachedResponse?.body == Data("a".utf8))
        #expect(lookup.requestToSend == request(url))
        for (index, status) in [404, 410, 301].enumerated() {
            let other = request("https://api.example.com/gone/\(index)")
            #expect(try await fixture.cache.storeResponse(response(status), body: Data(), for: other, endpoint: "e")?.status.code
                    == status)
        }
        // A status not cacheable by default is stored with explicit freshness.
        #expect(try await fixture.cache.storeResponse(response(302, [("Cache-Control", "max-age=60")]), body: Data(),
                                                      for: request("https://api.example.com/moved"), endpoint: "e") != nil)
        #expect(try fixture.count("cache_entries") == 5)
    }

    @Test("a 304 that matches nothing stored returns nil, so the caller can ask again unconditionally")
    func unmatchedNotModified() async throws {
        let fixture = try CacheFixture()
        #expect(try await fixture.cache.revalidated(response(304, [("ETag", "\"v1\"")]), for: request(url), endpoint: "e") == nil)
        try await fixture.cache.storeResponse(response(200, [("Last-Modified", "Tue, 24 Nov 2026 08:00:00 GMT")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        let contradicting = try await fixture.cache.revalidated(
            response(304, [("Last-Modified", "Wed, 25 Nov 2026 08:00:00 GMT")]), for: request(url), endpoint: "e"
        )
        #expect(contradicting == nil)
    }

    @Test("a 2xx or 3xx answer to POST, PUT, PATCH or DELETE invalidates the URL's entries; a 4xx does not")
    func unsafeMethodsInvalidate() async throws {
        let fixture = try CacheFixture()
        for method in [HTTPRequest.Method.post, .put, .patch, .delete] {
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\"")]), body: Data("a".utf8),
                                                  for: request(url), endpoint: "e")
            try await fixture.cache.storeResponse(response(200, [("ETag", "\"h\"")]), body: Data(),
                                                  for: request(url, method: .head), endpoint: "e")
            #expect(try fixture.count("cache_entries") == 2)
            try await fixture.cache.storeResponse(response(409), body: Data(), for: request(url, method: method), endpoint: "e")
            #expect(try fixture.count("cache_entries") == 2, "\(method) answered 409: nothing changed")
            try await fixture.cache.storeResponse(response(method == .post ? 303 : 204), body: Data(),
                                                  for: request(url, method: method), endpoint: "e")
            #expect(try fixture.count("cache_entries") == 0, "\(method) invalidates")
        }
        // Another URL is untouched.
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\"")]), body: Data("a".utf8), for: request(url), endpoint: "e")
        try await fixture.cache.storeResponse(response(200), body: Data(),
                                              for: request("https://api.example.com/other", method: .post), endpoint: "e")
        #expect(try fixture.count("cache_entries") == 1)
    }

    @Test("entries survive closing and reopening the store")
    func survivesReopen() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"persist\""), ("Content-Type", "text/plain")]),
                                              body: Data("kept".utf8), for: request(url), endpoint: "e")
        try fixture.reopen()
        let lookup = try await fixture.cache.lookup(request(url), endpoint: "e")
        #expect(lookup.cachedResponse?.body == Data("kept".utf8))
        #expect(lookup.cachedResponse?.headerFields[.contentType] == "text/plain")
        #expect(lookup.conditionalRequest?.headerFields[.ifNoneMatch] == "\"persist\"")
    }

    @Test("requests the cache must not answer pass through: conditional, Range, no-store and non-GET")
    func passThrough() async throws {
        let fixture = try CacheFixture()
        try await fixture.cache.storeResponse(response(200, [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")]),
                                              body: Data("a".utf8), for: request(url), endpoint: "e")
        for bypassing in [
            request(url, headers: [("If-None-Match", "\"mine\"")]),
            request(url, headers: [("Range", "bytes=0-1")]),
            request(url, headers: [("Cache-Control", "no-store")]),
            request(url, method: .post),
        ] {
            let lookup = try await fixture.cache.lookup(bypassing, endpoint: "e")
            #expect(lookup == .miss(bypassing))
        }
        // Cache-Control: no-cache in the request forces a revalidation of a fresh entry.
        let forced = try await fixture.cache.lookup(request(url, headers: [("Cache-Control", "no-cache")]), endpoint: "e")
        #expect(forced.conditionalRequest != nil)
        // A request with no scheme or authority cannot be keyed: the cache stays out of the way.
        let relative = HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/x")
        #expect(try await fixture.cache.lookup(relative, endpoint: "e") == .miss(relative))
    }

    @Test("a body that echoes the request's API key is never stored, nor anywhere in the file or its WAL; one that does not is")
    func bodyEchoingSecretNotStored() async throws {
        let fixture = try CacheFixture()
        let key = "AIzaSyEchoedInTheBody-0123"
        let echoing = "https://www.googleapis.com/youtube/v3/videos?id=v1&key=\(key)"
        let body = Data(#"{"error":{"code":400,"message":"API key not valid: \#(key)"}}"#.utf8)
        let answer = response(400, [("Content-Type", "application/json"), ("Cache-Control", "max-age=3600")])
        let stored = try await fixture.cache.storeResponse(answer, body: body, for: request(echoing), endpoint: "videos.list")
        #expect(stored == nil)
        #expect(try await fixture.cache.lookup(request(echoing), endpoint: "videos.list").isMiss)
        // The key once more, past the first bytes that match its first letter, in a large body.
        let large = Data(String(repeating: "A", count: 200_000).utf8) + Data("…\(key)".utf8)
        #expect(try await fixture.cache.storeResponse(response(200, [("Cache-Control", "max-age=60")]), body: large,
                                                      for: request(echoing + "&part=x"), endpoint: "videos.list") == nil)

        // The same error page compressed, as Google sends it to a client that asks for gzip (Python's
        // gzip of the page above, mtime 0); and a body in a coding the cache cannot undo.
        let gzipped = try #require(Data(base64Encoded:
            "H4sIAAAAAAACA6tWSi0qyi9SsqpWSs5PSVWyMjEw0FHKTS0uTkwH8pQcAzwVslMrFfLySxTKEnMyU6wUHD2rEoMrXZMz8lNTPPNCMlKd8lMqdQ0MjYyVamsBt1OnE1AAAAA="))
        for (encoding, compressed) in [("gzip", gzipped), ("zstd", Data([0x28, 0xB5, 0x2F, 0xFD]))] {
            let answer = response(400, [("Content-Type", "application/json"), ("Content-Encoding", encoding),
                                        ("Cache-Control", "max-age=3600")])
            #expect(try await fixture.cache.storeResponse(answer, body: compressed, for: request(echoing + "&c=\(encoding)"),
                                                          endpoint: "videos.list") == nil, "\(encoding)")
        }

        let quiet = "https://www.googleapis.com/youtube/v3/videos?id=v2&key=\(key)"
        let kept = try await fixture.cache.storeResponse(answer, body: Data(#"{"error":{"code":400}}"#.utf8),
                                                         for: request(quiet), endpoint: "videos.list")
        #expect(kept != nil)
        #expect(try await fixture.cache.lookup(request(quiet), endpoint: "videos.list").isFresh)
        for file in [fixture.path, fixture.path + "-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
            #expect(!bytes.containsBytes(of: key), "\(file)")
        }
    }
}
