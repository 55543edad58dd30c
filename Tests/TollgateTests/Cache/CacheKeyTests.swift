import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
@testable import Tollgate

@Suite("Cache keys: normalisation, redaction, credential partitions, Vary")
struct CacheKeyTests {
    private let sensitiveParameters = CacheConfiguration().sensitiveQueryParameters
    private let sensitiveHeaders = CacheConfiguration().sensitiveHeaders

    private func key(_ request: HTTPRequest) throws -> CacheKey {
        try CacheKey(request: request, sensitiveQueryParameters: sensitiveParameters, sensitiveHeaders: sensitiveHeaders)
    }

    private func key(scheme: String? = "https", authority: String? = "api.example.com", path: String?,
                     method: HTTPRequest.Method = .get) throws -> CacheKey {
        try key(HTTPRequest(method: method, scheme: scheme, authority: authority, path: path))
    }

    @Test("scheme and host are lowercased, the default port dropped, parameters sorted by name and never dropped")
    func normalisation() throws {
        let first = try key(scheme: "HTTPS", authority: "API.Example.COM:443", path: "/v3/Videos?part=snippet&id=b&id=a&flag")
        #expect(first.url == "https://api.example.com/v3/Videos?flag&id=b&id=a&part=snippet")
        let second = try key(path: "/v3/Videos?id=b&flag&part=snippet&id=a")
        #expect(first.resourceKey == second.resourceKey)
        #expect(try key(path: "/v3/Videos?id=a&flag&part=snippet&id=b").resourceKey != first.resourceKey,
                "the values of one name keep their order: it is meaning (sort keys, id lists)")
        #expect(try key(path: "/v3/items?a=2&a=1").url == "https://api.example.com/v3/items?a=2&a=1")
        #expect(try key(path: "/v3/items?a&a=1").url != key(path: "/v3/items?a=1&a").url)
        #expect(try key(path: "/v3/Videos?part=snippet").resourceKey != first.resourceKey, "parameters are never dropped")
        #expect(try key(path: "/v3/videos?flag&id=a&id=b&part=snippet").resourceKey != first.resourceKey, "paths keep their case")
        #expect(try key(scheme: "http", authority: "api.example.com:80", path: "").url == "http://api.example.com/")
        #expect(try key(authority: "api.example.com:8443", path: "/").url == "https://api.example.com:8443/")
        #expect(try key(authority: "[::1]:443", path: "/x").url == "https://[::1]/x")
        #expect(try key(authority: "[::1]:8080", path: "/x#frag").url == "https://[::1]:8080/x")
        #expect(try key(path: "/x", method: .head).resourceKey != key(path: "/x").resourceKey, "the method is part of the key")
    }

    @Test("sensitive values are redacted from the URL and hashed into a partition, one per credential")
    func credentialPartitions() throws {
        let plain = try key(path: "/v?id=1")
        #expect(plain.credentialPartition == nil)
        let a = try key(path: "/v?id=1&key=AAAA-secret-1")
        let a2 = try key(path: "/v?KEY=AAAA-secret-1&id=1")
        let b = try key(path: "/v?id=1&key=BBBB-secret-2")
        #expect(a.url == "https://api.example.com/v?id=1&key=REDACTED")
        #expect(a.url == b.url)
        #expect(a.resourceKey != b.resourceKey)
        #expect(a.credentialPartition != b.credentialPartition)
        #expect(a.credentialPartition?.count == 64)
        #expect(a2.url == "https://api.example.com/v?KEY=REDACTED&id=1", "names keep their case; sorting is by bytes")
        #expect(!a.resourceKey.contains("AAAA") && !(a.credentialPartition ?? "").contains("AAAA"))

        // Percent-encoded names are recognised; headers partition too.
        #expect(try key(path: "/v?api%5Fkey=zzzz").url == "https://api.example.com/v?api%5Fkey=REDACTED")
        let bearer = try key(HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v?id=1",
                                         headerFields: [.authorization: "Bearer token-1"]))
        let otherBearer = try key(HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v?id=1",
                                              headerFields: [.authorization: "Bearer token-2"]))
        #expect(bearer.url == plain.url)
        #expect(bearer.resourceKey != otherBearer.resourceKey)
        #expect(bearer.resourceKey != plain.resourceKey)
    }

    @Test("variant keys: same values match, a missing header differs from an empty one, names are normalised")
    func variantKeys() {
        func request(_ fields: HTTPFields) -> HTTPRequest {
            HTTPRequest(method: .get, scheme: "https", authority: "a", path: "/", headerFields: fields)
        }
        let vary = VaryFields(HTTPFields([HTTPField(name: .vary, value: "Accept-Language,  accept-encoding "),
                                          HTTPField(name: .vary, value: "Accept-Language")]))
        #expect(vary == .names(["accept-encoding", "accept-language"]))
        #expect(VaryFields(stored: vary.stored) == vary)
        #expect(VaryFields(HTTPFields([HTTPField(name: .vary, value: "Accept, *")])) == .any)
        #expect(VaryFields(HTTPFields()) == .none)
        #expect(CacheKey.variantKey(for: request([:]), vary: []) == "")

        let en = CacheKey.variantKey(for: request([.acceptLanguage: "en"]), vary: vary.names)
        #expect(en == CacheKey.variantKey(for: request([.acceptLanguage: " en"]), vary: vary.names))
        #expect(en != CacheKey.variantKey(for: request([.acceptLanguage: "fr"]), vary: vary.names))
        #expect(CacheKey.variantKey(for: request([:]), vary: ["accept-language"])
                != CacheKey.variantKey(for: request([.acceptLanguage: ""]), vary: ["accept-language"]))
        #expect(CacheKey.variantKey(for: request([:]), vary: ["not a header name"]).count == 64)
    }

    @Test("hostile input never crashes: garbage authorities, paths, percent escapes, ports and header values")
    func hostileInput() throws {
        let authorities = ["", "@", "@@@", ":", "[", "]:", "[::1", "host:", "host:99999999999999999999", "host:-1",
                           "user:pass@", "ÜNICODE.例え:443", String(repeating: "a", count: 10_000), "a:b:c:d"]
        let paths = ["", "?", "??", "?&&&", "?=", "?==&=", "/%", "/%zz?%zz=%zz&key=%", "/?key", "?key=&key=",
                     "#", "/\u{0}?\u{0}=\u{0}", "/?" + String(repeating: "&a=b", count: 2_000), "/ spaces here?a b=c d"]
        for authority in authorities {
            for path in paths {
                let computed = try key(authority: authority, path: path)
                #expect(computed.resourceKey.hasPrefix(computed.url + "\n"))
                #expect(computed.resourceKey.utf8.count == computed.url.utf8.count + 1 + 64)
                #expect(!computed.url.contains("\n"))
            }
        }
        #expect(throws: CacheError.self) { try key(authority: nil, path: "/") }
        #expect(throws: CacheError.self) { try key(scheme: nil, path: "/") }
        #expect(throws: CacheError.self) { try key(path: nil) }

        // Garbage response headers: nothing crashes, and unusable freshness is treated as stale.
        let now = Date(timeIntervalSince1970: 1_795_716_000)
        let garbage = ["max-age", "max-age=", "max-age=-1", "max-age=1e9", "max-age=\"60\"", ",,,", "\"", "=\"",
                       "max-age=99999999999999999999999", "no-cache=\"unterminated", "\\"]
        for value in garbage {
            _ = CacheHeaders.freshUntil(HTTPFields([HTTPField(name: .cacheControl, value: value)]), now: now)
        }
        #expect(CacheHeaders.freshUntil([.cacheControl: "max-age=\"60\""], now: now) == now.addingTimeInterval(60))
        #expect(CacheHeaders.freshUntil([.cacheControl: "max-age=abc"], now: now) == nil)
        #expect(CacheHeaders.freshUntil([.cacheControl: "max-age=99999999999999999999999"], now: now) != nil)
        #expect(CacheHeaders.freshUntil([.expires: "\u{0}garbage"], now: now) == nil)
        #expect(CacheHeaders.freshUntil([.cacheControl: "max-age=60", .age: "not a number"], now: now)
                == now.addingTimeInterval(60))
        #expect(CacheHeaders.freshUntil([.cacheControl: "max-age=60", .age: "120"], now: now) == nil)
    }

    @Test("HTTP dates: IMF-fixdate, RFC 850 and asctime parse; anything else is invalid")
    func httpDates() {
        let expected = Date(timeIntervalSince1970: 784_111_777) // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.format(expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for invalid in ["", "0", "-1", "Sun, 06 Nov 1994", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 29 Feb 2026 08:49:37 GMT",
                        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST",
                        "Sun, 06 Nov 99999 08:49:37 GMT", String(repeating: "9 ", count: 1000)] {
            #expect(HTTPDate.parse(invalid) == nil, "\(invalid.prefix(40))")
        }
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 00:00:00 GMT") != nil)
    }

    @Test("a secret echoed in a response field is redacted at every occurrence, ASCII or not")
    func echoedSecretsRedacted() {
        let ascii = "AIzaSy-echoed-key-1"
        let accented = "clé-secrète-2"
        let storable = CacheHeaders.storableFields(
            [HTTPField.Name("X-Echo")!: "a=\(ascii)&b=\(ascii)", HTTPField.Name("X-Tail")!: "end \(ascii)",
             HTTPField.Name("X-Accent")!: "v=\(accented);", HTTPField.Name("X-Plain")!: "AIzaSy-echoed-key"],
            rules: CacheKey.SecretRules(queryParameters: [], headers: []), secrets: [ascii, accented]
        )
        let stored = storable.stored
        // The same fields as served: parsed names, redacted values, in order.
        #expect(storable.parsed.map { "\($0.name.rawName): \($0.value)" } == stored.map { "\($0.name): \($0.value)" })
        #expect(stored.map { "\($0.name): \($0.value)" } == [
            "X-Echo: a=REDACTED&b=REDACTED", "X-Tail: end REDACTED", "X-Accent: v=REDACTED;",
            "X-Plain: AIzaSy-echoed-key",
        ])
    }

    @Test("a 304 merge replaces same-named fields, keeps the rest, never takes Content-Length or Set-Cookie")
    func merge() {
        let stored = [CacheHeaderField(name: "ETag", value: "\"1\""), CacheHeaderField(name: "Content-Length", value: "10"),
                      CacheHeaderField(name: "Link", value: "<a>"), CacheHeaderField(name: "Link", value: "<b>"),
                      CacheHeaderField(name: "Content-Type", value: "application/json")]
        let merged = CacheHeaders.merge(
            stored: stored,
            notModified: [.eTag: "\"2\"", .contentLength: "0", .setCookie: "s=1", HTTPField.Name("link")!: "<c>",
                          .authorization: "secret"],
            rules: CacheKey.SecretRules(queryParameters: [], headers: CacheConfiguration().sensitiveHeaders), secrets: []
        )
        #expect(merged.map { "\($0.name): \($0.value)" } == [
            "Content-Length: 10", "Content-Type: application/json", "ETag: \"2\"", "link: <c>",
        ])
    }
}
