import Foundation
import HTTPTypes
import Testing
@testable import Tollgate
import TollgateCore
import TollgateTestSupport

/// The shortcuts a store and a `304`'s revision take on their way to the caller (issue 42) give
/// exactly what the longer way gave: each is checked against that way, kept here as the reference.
@Suite("Cache header shortcuts: the same answers as the plain computations")
struct CacheHeaderShortcutsTests {
    static let names = [
        "ETag", "etag", "ETAG", "Cache-Control", "cache-control", "Age", "age", "Date", "Last-Modified", "Link", "link",
        "Content-Length", "Connection", "Keep-Alive", "Set-Cookie", "X-Api-Key", "X-Session-Id", "X-Request-Token",
        "X-Plain", "Vary", "Authorization", "X-Secret-Thing", "Trailer", "Upgrade", "Cookie",
    ]
    static let values = ["\"v1\"", "W/\"v2\"", "max-age=60", "5", "<a>", "keep-alive", "X-Plain", "close, X-Plain", "",
                         " spaced ", "AIzaSyShortcutKey123", "a=AIzaSyShortcutKey123&b=1", "AIzaSyShortcutKe"]

    static func fields(_ random: inout SeededGenerator, count: ClosedRange<Int>) -> HTTPFields {
        var fields = HTTPFields()
        for _ in 0..<Int.random(in: count, using: &random) {
            fields.append(HTTPField(name: HTTPField.Name(names.randomElement(using: &random)!)!,
                                    value: values.randomElement(using: &random)!))
        }
        return fields
    }

    /// `isStorable` as it was written before issue 42's round: the configuration's set and
    /// patterns, matched every time.
    static func referenceIsStorable(_ name: HTTPField.Name, configuration: CacheConfiguration, options: Set<String>) -> Bool {
        let canonical = name.canonicalName
        return canonical != "set-cookie" && canonical != "set-cookie2" && !configuration.sensitiveHeaders.contains(name)
            && !["connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade"].contains(canonical)
            && !options.contains(canonical)
            && !configuration.sensitiveHeaderPatterns.contains { $0.matches(canonical) }
    }

    /// `merge` as it was written before issue 42's round: sets and lowercased copies.
    static func referenceMerge(
        stored: [CacheHeaderField], notModified: HTTPFields, configuration: CacheConfiguration, secrets: [String]
    ) -> [CacheHeaderField] {
        let options = Set(notModified[values: .connection].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty })
        let updates = notModified.filter { field in
            field.name != .contentLength && referenceIsStorable(field.name, configuration: configuration, options: options)
        }
        let replaced = Set(updates.map(\.name.canonicalName))
        var merged = stored.filter { !replaced.contains($0.name.lowercased()) }
        merged.append(contentsOf: updates.map { field in
            CacheHeaderField(name: field.name.rawName, value: referenceRedacting(secrets, in: field.value))
        })
        return merged
    }

    static func referenceRedacting(_ secrets: [String], in value: String) -> String {
        secrets.reduce(value) { $0.replacingOccurrences(of: $1, with: CacheKey.redactionMarker) }
    }

    static func spelled(_ fields: HTTPFields) -> [String] { fields.map { "\($0.name.rawName): \($0.value)" } }

    @Test("a 304's merge: the same fields as the reference, stored names in any case replaced")
    func mergeMatchesReference() {
        var random = SeededGenerator(seed: 0x304)
        let configuration = CacheConfiguration()
        let rules = CacheKey.SecretRules(configuration)
        for _ in 0..<2_000 {
            let stored = Self.fields(&random, count: 0...10).map { CacheHeaderField(name: $0.name.rawName, value: $0.value) }
            let notModified = Self.fields(&random, count: 0...6)
            let secrets = Bool.random(using: &random) ? ["AIzaSyShortcutKey123"] : []
            let merged = CacheHeaders.merge(stored: stored, notModified: notModified, rules: rules, secrets: secrets)
            #expect(merged == Self.referenceMerge(stored: stored, notModified: notModified, configuration: configuration,
                                                  secrets: secrets))
        }
        let merged = CacheHeaders.merge(stored: [CacheHeaderField(name: "ETAG", value: "\"1\""), CacheHeaderField(name: "eTaG", value: "\"0\"")],
                                        notModified: [.eTag: "\"2\""], rules: rules, secrets: [])
        #expect(merged == [CacheHeaderField(name: "ETag", value: "\"2\"")])
    }

    @Test("a secret is redacted wherever it is, and a value without it comes back as it was")
    func redactionMatchesReference() {
        var random = SeededGenerator(seed: 0x5EC)
        let secret = "AIzaSyShortcutKey123"
        let pieces = ["a", "=", "&", " ", secret, String(secret.dropLast()), String(secret.dropFirst()), "A", "é", "🚦"]
        for _ in 0..<3_000 {
            let value = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let redacted = CacheHeaders.redacting([secret], in: value)
            #expect(redacted == Self.referenceRedacting([secret], in: value), "\(value)")
            #expect(!redacted.contains(secret))
        }
    }

    @Test("a combined value: what the subscript gives, for one field, several or none")
    func combinedValueMatchesSubscript() {
        var random = SeededGenerator(seed: 0xC0B)
        for _ in 0..<2_000 {
            let fields = Self.fields(&random, count: 0...8)
            for name in [HTTPField.Name.eTag, .lastModified, .cacheControl, .age, HTTPField.Name("link")!, .cookie] {
                #expect(fields.combinedValue(name) == fields[name])
            }
        }
    }

    @Test("what the patterns say of a name, remembered: the patterns' own verdict, past the memo's capacity")
    func rememberedVerdictsMatchPatterns() {
        let patterns: [SecretNamePattern] = CacheConfiguration().sensitiveQueryParameterPatterns
        let remembered = CacheKey.RememberedVerdicts(patterns)
        var random = SeededGenerator(seed: 0x7E5)
        let pieces = ["key", "_key", "-key", "token", "_token", "secret", "api", "page", "id", "x", "-", "_", "password"]
        var secretNames = 0
        for round in 0..<(3 * CacheKey.RememberedVerdicts.capacity) {
            let name = (0..<Int.random(in: 1...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
                + (round.isMultiple(of: 2) ? "\(round)" : "")
            let expected = patterns.anyMatches(lowercasedBytes: Array(name.utf8)[...])
            #expect(remembered.anyMatches(name) == expected, "\(name)")
            #expect(remembered.anyMatches(name) == expected, "\(name), remembered")
            #expect(remembered.rememberedCount <= CacheKey.RememberedVerdicts.capacity)
            if expected { secretNames += 1 }
        }
        #expect(secretNames > 100)
        #expect(!CacheKey.RememberedVerdicts([]).anyMatches("api_key"))
        // Canonically equivalent spellings are equal Swift strings, but the patterns match bytes:
        // `t` with a combining caron holds "secret", the precomposed `ť` does not. Either first.
        let precomposed = "secre\u{165}", decomposed = "secret\u{30C}"
        #expect(precomposed == decomposed)
        for order in [[precomposed, decomposed], [decomposed, precomposed]] {
            let verdicts = CacheKey.RememberedVerdicts(patterns)
            for name in order + order {
                #expect(verdicts.anyMatches(name) == patterns.anyMatches(lowercasedBytes: Array(name.utf8)[...]),
                        "\(Array(name.unicodeScalars))")
            }
        }
        #expect(CacheKey.RememberedVerdicts(patterns).anyMatches(decomposed))
        #expect(!CacheKey.RememberedVerdicts(patterns).anyMatches(precomposed))
    }

    @Test("after 304s revise an entry, in memory and then written, a lookup serves the fields a fresh parse of the stored ones gives")
    func revisedFieldsMatchFreshParse() async throws {
        let fixture = try CacheFixture()
        let url = "https://api.example.com/videos?id=r&key=AIzaSyShortcutKey123"
        _ = try await fixture.cache.storeResponse(
            response(200, [("ETag", "\"v1\""), ("Cache-Control", "no-cache"), ("X-Served-By", "a"), ("Age", "3")]),
            body: Data("body".utf8), for: request(url), endpoint: "videos.list"
        )
        for round in 0..<5 {
            fixture.clock.advance(by: .seconds(7))
            guard case .revalidate(let stored, let conditional) = try await fixture.cache.lookup(request(url), endpoint: "videos.list")
            else { Issue.record("round \(round): expected a revalidation"); return }
            #expect(Self.spelled(stored.headerFields) == Self.spelled(Self.freshlyParsed(stored)), "round \(round)")
            let notModified = response(304, [("etag", "\"v1\""), ("X-Served-By", "b\(round)"), ("Date", "Sat, 28 Nov 2026 0\(round):00:00 GMT")])
            let now = fixture.clock.now()
            let answered = try #require(fixture.cache.revisedInMemory(notModified, of: stored, for: conditional,
                                                                      endpoint: "videos.list", requestedAt: nil, at: now))
            #expect(Self.spelled(answered.response.headerFields) == Self.spelled(Self.freshlyParsed(answered.response)))
            _ = try await fixture.cache.revalidated(notModified, for: conditional, endpoint: "videos.list", requestedAt: nil,
                                                   bookkeeping: AnswerBookkeeping(), at: now, answered: answered)
        }
    }

    /// A response's fields as parsing its stored ones anew gives them, with its own age.
    static func freshlyParsed(_ cached: CachedResponse) -> HTTPFields {
        ServedHeaderFields(cached.metadata.headers).fields(ageMilliseconds: CacheTime.milliseconds(cached.age))
    }

    @Test("a store's answer carries the fields a lookup of the same entry serves, Age included")
    func storedAnswerFieldsMatchLookup() async throws {
        var random = SeededGenerator(seed: 0x57E)
        let fixture = try CacheFixture()
        for index in 0..<200 {
            var fields = Self.fields(&random, count: 0...8)
            fields[.cacheControl] = "max-age=600"
            let url = "https://api.example.com/videos?id=\(index)&key=AIzaSyShortcutKey123"
            let stored = try #require(try await fixture.cache.storeResponse(
                HTTPResponse(status: .ok, headerFields: fields), body: Data("body \(index)".utf8), for: request(url),
                endpoint: "videos.list"
            ))
            guard case .fresh(let looked) = try await fixture.cache.lookup(request(url), endpoint: "videos.list") else {
                Issue.record("expected a fresh hit for \(url)"); continue
            }
            // In order, names as spelled: `HTTPFields`' own equality lets differently named fields
            // move and compares names without case.
            #expect(Self.spelled(stored.headerFields) == Self.spelled(looked.headerFields))
            #expect(stored.headerFields[values: .age].count == 1)
            #expect(Self.spelled(ServedHeaderFields(stored.metadata.headers).fields(ageMilliseconds: 0))
                == Self.spelled(ServedHeaderFields(stored.metadata.headers, parsed: CacheHeaders.fields(stored.metadata.headers))
                    .fields(ageMilliseconds: 0)))
        }
    }
}
