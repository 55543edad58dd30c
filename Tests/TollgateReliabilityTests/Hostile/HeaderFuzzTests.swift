import Foundation
import HTTPTypes
import Testing
@testable import Tollgate
import TollgateTestSupport

/// Seeded fuzzing of every header parser and of URL normalisation: arbitrary bytes never crash,
/// never hang, and never produce output out of proportion to the input. Each test is
/// deterministic (a fixed seed) and bounded (a fixed number of inputs of bounded length).
@Suite("Hostile input: header parsers and URL normalisation on arbitrary bytes")
struct HeaderFuzzTests {
    static let iterations = StressScale.current.fuzzIterations
    static let vocabulary = [
        "max-age", "no-store", "no-cache", "private", "public", "must-revalidate", "s-maxage", "=", "\"",
        "W/", "*", "GMT", "Sun", "Nov", "Feb", "1994", "99999999999999999999", "-1", "08:49:37", "06",
        "accept-encoding", "Authorization", "%", "%2", "%ZZ", "key=", "&", "?", "#", "@", "[", "]", ":", "//",
        "é", "🚦", "\u{0}", "\r\n",
    ]

    /// The longest one call to a parser may take. Generous, because the shared 2-core machine can
    /// pause a thread for a second under load; a parser that hangs or goes quadratic on these
    /// sizes still blows through it.
    static let perCallBudget: Duration = .seconds(2)

    /// The fuzz loops are CPU-bound: give Swift concurrency's few cooperative threads back every
    /// few iterations, so tests running beside them (servers answering over loopback) are not starved.
    static func yieldNow(_ iteration: Int) async {
        if iteration % 8 == 0 { await Task.yield() }
    }

    static func timed<T>(_ body: () throws -> T) rethrows -> (T, Duration) {
        let clock = ContinuousClock()
        let start = clock.now
        let value = try body()
        return (value, clock.now - start)
    }

    static func fields(_ name: HTTPField.Name, _ values: [[UInt8]]) -> HTTPFields {
        HTTPFields(values.map { HTTPField(name: name, lenientValue: $0) })
    }

    @Test("Cache-Control: directives bounded by the input, max-age never negative")
    func cacheControl() async {
        var random = SeededGenerator(seed: 0xCAC4E)
        var slowest = Duration.zero
        for iteration in 0..<Self.iterations {
            await Self.yieldNow(iteration)
            let values = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                random.hostileBytes(maximumLength: 300, vocabulary: Self.vocabulary)
            }
            let fields = Self.fields(.cacheControl, values)
            let (control, elapsed) = Self.timed { CacheControl(fields) }
            slowest = max(slowest, elapsed)
            let separators = values.map { $0.filter { $0 == UInt8(ascii: ",") }.count + 1 }.reduce(0, +)
            #expect(control.directives.count <= separators)
            if case .seconds(let seconds) = control.maxAge { #expect(seconds >= 0) }
            _ = CacheHeaders.freshUntil(fields, now: Date(timeIntervalSince1970: 1_800_000_000))
            _ = CacheHeaders.requestRequiresValidation(fields)
        }
        #expect(slowest < Self.perCallBudget)
    }

    @Test("Expires and other HTTP dates: anything parsed formats back to the same instant; valid dates round-trip")
    func httpDates() async {
        var random = SeededGenerator(seed: 0xDA7E)
        var slowest = Duration.zero
        for iteration in 0..<Self.iterations {
            await Self.yieldNow(iteration)
            let text = String(decoding: random.hostileBytes(maximumLength: 80, vocabulary: Self.vocabulary), as: UTF8.self)
            let (parsed, elapsed) = Self.timed { HTTPDate.parse(text) }
            slowest = max(slowest, elapsed)
            if let parsed {
                #expect(HTTPDate.parse(HTTPDate.format(parsed)) == parsed, "\(text.debugDescription)")
            }
            // A valid date, anywhere from 1970 to 9999, survives format and parse.
            let seconds = Int64.random(in: 0...253_402_300_799, using: &random)
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
            var expires = HTTPFields()
            expires[.expires] = text
            _ = CacheHeaders.freshUntil(expires, now: date)
        }
        #expect(slowest < Self.perCallBudget)
    }

    @Test("Retry-After: never negative, never a crash on digits too long for an Int")
    func retryAfter() async {
        var random = SeededGenerator(seed: 0x2E7)
        var slowest = Duration.zero
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<Self.iterations {
            await Self.yieldNow(index)
            let text = String(decoding: random.hostileBytes(maximumLength: 60, vocabulary: Self.vocabulary), as: UTF8.self)
            let (value, elapsed) = Self.timed { RetryAfter(headerValue: text) }
            slowest = max(slowest, elapsed)
            if let value {
                if case .seconds(let seconds) = value { #expect(seconds >= 0) }
                #expect(value.delay(from: now) >= .zero)
            }
            if index % 10 == 0 {
                let seconds = Int.random(in: 0...Int.max, using: &random)
                #expect(RetryAfter(headerValue: " \(seconds) ") == .seconds(seconds))
            }
        }
        #expect(slowest < Self.perCallBudget)
    }

    @Test("Vary: names unique, sorted, lowercased and never empty; the stored form reads back the same")
    func vary() async {
        var random = SeededGenerator(seed: 0x7A2F)
        for iteration in 0..<Self.iterations {
            await Self.yieldNow(iteration)
            let values = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                random.hostileBytes(maximumLength: 200, vocabulary: Self.vocabulary)
            }
            let fields = Self.fields(.vary, values)
            let (vary, elapsed) = Self.timed { VaryFields(fields) }
            #expect(elapsed < Self.perCallBudget)
            let names = vary.names
            #expect(names == Array(Set(names)).sorted())
            #expect(names.allSatisfy { !$0.isEmpty && $0 == $0.lowercased() })
            #expect(names.count <= values.map(\.count).reduce(0, +))
            if case .names = vary { #expect(VaryFields(stored: vary.stored) == vary) }
            var request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/")
            request.headerFields = Self.fields(.acceptEncoding, values)
            #expect(CacheKey.variantKey(for: request, vary: names).count == (names.isEmpty ? 0 : 64))
        }
    }

    @Test("ETags and If-None-Match: weak comparison is reflexive, symmetric and blind to W/; any intact ETag is sent back verbatim")
    func entityTags() async throws {
        var random = SeededGenerator(seed: 0xE7A6)
        for iteration in 0..<Self.iterations {
            await Self.yieldNow(iteration)
            let first = String(decoding: random.hostileBytes(maximumLength: 60, vocabulary: Self.vocabulary), as: UTF8.self)
            let second = String(decoding: random.hostileBytes(maximumLength: 60, vocabulary: Self.vocabulary), as: UTF8.self)
            #expect(CacheHeaders.weaklyMatch(first, first))
            #expect(CacheHeaders.weaklyMatch(first, second) == CacheHeaders.weaklyMatch(second, first))
            let strong = "\"\(first.filter { $0 != "\"" && !$0.isWhitespace })\""
            #expect(CacheHeaders.weaklyMatch("W/" + strong, strong))
        }
        // Through the cache: whatever ETag a server sends is stored and sent back in If-None-Match
        // exactly as the field carried it, and a 304 with it revalidates.
        let store = try SQLiteStore(location: .inMemory)
        let cache = try ETagCache(storage: store, clock: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000)))
        for index in 0..<min(Self.iterations / 10, 500) {
            let request = HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/etag/\(index)")
            var response = HTTPResponse(status: .ok)
            // Any bytes a field value may legally hold (RFC 9110 §5.5): visible ASCII, space, tab, obs-text.
            let etag = random.hostileBytes(maximumLength: 80, vocabulary: Self.vocabulary)
                .filter { (0x20...0x7E).contains($0) || $0 >= 0x80 || $0 == 0x09 }
            response.headerFields.append(HTTPField(name: .eTag, lenientValue: etag))
            try await cache.storeResponse(response, body: Data("body \(index)".utf8), for: request, endpoint: "etag.list")
            let sent = response.headerFields[.eTag]?.trimmingCharacters(in: .whitespaces) ?? ""
            let lookup = try await cache.lookup(request, endpoint: "etag.list")
            guard !sent.isEmpty else { continue }
            // A tag that reached the cache altered (U+FFFD where a parser met 8-bit bytes) would
            // match nothing on the server: it is not sent; every other one is, verbatim.
            #expect(lookup.requestToSend?.headerFields[.ifNoneMatch] == (CacheHeaders.isIntact(sent) ? sent : nil))
            var notModified = HTTPResponse(status: .notModified)
            notModified.headerFields[.eTag] = sent
            let revalidated = try await cache.revalidated(notModified, for: request, endpoint: "etag.list")
            #expect(revalidated?.body == Data("body \(index)".utf8))
        }
    }

    @Test("URL normalisation: no crash on arbitrary authorities, paths and queries; order-blind; secrets never in the key's URL")
    func cacheKeys() async {
        var random = SeededGenerator(seed: 0x0421)
        let rules = CacheKey.SecretRules(queryParameters: ["key", "access_token"], headers: [.authorization])
        for iteration in 0..<Self.iterations {
            await Self.yieldNow(iteration)
            let authority = String(decoding: random.hostileBytes(maximumLength: 40, vocabulary: Self.vocabulary), as: UTF8.self)
            let path = "/" + String(decoding: random.hostileBytes(maximumLength: 200, vocabulary: Self.vocabulary), as: UTF8.self)
            let secret = "SECRET" + String((0..<12).map { _ in Character(UnicodeScalar(UInt8.random(in: 0x61...0x7A, using: &random))) })
            let noise = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                // Legal, untrimmable query text: HTTPTypes trims a field value's outer whitespace,
                // which would make the permutation test compare different requests.
                String(decoding: random.hostileBytes(maximumLength: 20, vocabulary: ["a", "b", "=", "%41", "é", "e\u{301}"])
                    .filter { (0x21...0x7E).contains($0) || $0 >= 0x80 }, as: UTF8.self)
                    .withoutScalars("&#").replacingOccurrences(of: "SECRET", with: "")
            }
            let parameters = noise + ["key=\(secret)"]
            let base = path.withoutScalars("?#").replacingOccurrences(of: "SECRET", with: "")
            let request = HTTPRequest(method: .get, scheme: "https", authority: authority.isEmpty ? "h" : authority,
                                      path: base + "?" + parameters.joined(separator: "&"))
            // Names in a random order; the values of one name keep theirs, which is meaning.
            let names = parameters.map { $0.prefix { $0 != "=" } }
            let rank = Dictionary(Set(names).map { ($0, random.next()) }, uniquingKeysWith: { first, _ in first })
            let reorderedParameters = parameters.indices.sorted { first, second in
                let (firstRank, secondRank) = (rank[names[first]]!, rank[names[second]]!)
                return firstRank == secondRank ? first < second : firstRank < secondRank
            }.map { parameters[$0] }
            let shuffled = HTTPRequest(method: .get, scheme: "https", authority: authority.isEmpty ? "h" : authority,
                                       path: base + "?" + reorderedParameters.joined(separator: "&"))
            let (key, elapsed) = Self.timed { try? CacheKey(request: request, secretRules: rules) }
            #expect(elapsed < Self.perCallBudget)
            guard let key else { continue }
            #expect(!key.url.contains(secret))
            #expect(key.url.utf8.count <= 2 * ((request.authority ?? "").utf8.count + (request.path ?? "").utf8.count) + 64)
            #expect(key.credentialPartition != nil)
            let reordered = try? CacheKey(request: shuffled, secretRules: rules)
            #expect(reordered?.resourceKey == key.resourceKey, "\(key.url) vs \(reordered?.url ?? "nil")")
            if reordered?.resourceKey != key.resourceKey { break }
        }
    }

    @Test("huge adversarial headers finish quickly: a megabyte of commas, quotes, backslashes or Vary names")
    func hugeInputs() async {
        let megabyte = 1 << 20
        let inputs: [[UInt8]] = [
            Array(repeating: UInt8(ascii: ","), count: megabyte),
            Array(repeating: UInt8(ascii: "\""), count: megabyte),
            Array(repeating: UInt8(ascii: "\\"), count: megabyte),
            Array(String(repeating: "max-age=1,", count: megabyte / 10).utf8),
            Array(("\"" + String(repeating: "\\\"", count: megabyte / 2)).utf8),
            Array(String(repeating: "a,", count: megabyte / 2).utf8),
        ]
        for input in inputs {
            await Task.yield()
            let (_, controlTime) = Self.timed { CacheControl(Self.fields(.cacheControl, [input])) }
            let (vary, varyTime) = Self.timed { VaryFields(Self.fields(.vary, [input])) }
            let text = String(decoding: input, as: UTF8.self)
            let (_, dateTime) = Self.timed { HTTPDate.parse(text) }
            let (_, retryTime) = Self.timed { RetryAfter(headerValue: String(text.prefix(4096))) }
            let (_, keyTime) = Self.timed {
                try? CacheKey(request: HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/?" + text),
                              secretRules: .init(queryParameters: ["key"], headers: []))
            }
            #expect(vary.names.count <= 2)
            for elapsed in [controlTime, varyTime, dateTime, retryTime, keyTime] {
                #expect(elapsed < .seconds(15), "a parser took \(elapsed) on a megabyte")
            }
        }
    }

    @Test("canonically equivalent but differently spelled parameters get one key whatever their order")
    func canonicallyEquivalentParameters() throws {
        let rules = CacheKey.SecretRules(queryParameters: ["key"], headers: [])
        func key(_ query: String) throws -> CacheKey {
            try CacheKey(request: HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/v?" + query),
                         secretRules: rules)
        }
        let composed = "\u{E9}"
        let decomposed = "e\u{301}"
        #expect(try key("\(composed)&\(decomposed)").resourceKey == key("\(decomposed)&\(composed)").resourceKey)
        // One name's values keep their order, whatever their spelling: the order is meaning.
        #expect(try key("a&a=").resourceKey != key("a=&a").resourceKey)
        // (By their bytes: Swift's == on strings holds the two URLs equal, canonically equivalent.)
        #expect(try key("a=\(composed)&a=\(decomposed)").resourceKey != key("a=\(decomposed)&a=\(composed)").resourceKey)
        // Plain ASCII keeps its familiar order.
        #expect(try key("z=1&a=2&m").url == "https://example.com/v?a=2&m&z=1")
    }

    @Test("a separator that forms one grapheme with a combining mark still separates: the key is redacted")
    func separatorsInsideGraphemes() throws {
        let rules = CacheKey.SecretRules(queryParameters: ["key"], headers: [])
        let secret = "SECRET-abcdefghijkl"
        for query in ["q=x&\u{301}&key=\(secret)", "q=\u{600}&key=\(secret)", "\u{301}&key=\(secret)&\u{301}"] {
            let key = try CacheKey(
                request: HTTPRequest(method: .get, scheme: "https", authority: "example.com", path: "/v?" + query),
                secretRules: rules
            )
            #expect(!key.url.contains(secret), "\(key.url)")
            #expect(key.credentialPartition != nil)
        }
        let withUserInfo = try CacheKey(
            request: HTTPRequest(method: .get, scheme: "https", authority: "user:\(secret)@\u{301}example.com", path: "/"),
            secretRules: rules
        )
        #expect(!withUserInfo.url.contains(secret))
    }
}

extension String {
    /// The text without any of `scalars`, removed scalar by scalar: `replacingOccurrences` works on
    /// Characters and leaves a `?` that carries a combining mark in place.
    func withoutScalars(_ scalars: String) -> String {
        let removed = Set(scalars.unicodeScalars)
        var result = String.UnicodeScalarView()
        result.append(contentsOf: unicodeScalars.filter { !removed.contains($0) })
        return String(result)
    }
}
