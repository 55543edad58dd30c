import Foundation
import HTTPTypes
import Testing
import TollgateTestSupport
@testable import Tollgate

/// RFC 9111 §5 (Age, Cache-Control, Expires) and RFC 9110 §5.6.7 (HTTP dates): strict parsing,
/// and a seeded fuzz of each parser (never traps, and the invariants the cache relies on hold).
@Suite("RFC 9111 §5: strict parsing of Age, Cache-Control, Expires and Date")
struct RFC9111ParsingTests {
    static let now = Date(timeIntervalSince1970: 1_795_716_000)
    static let future = "Thu, 01 Dec 2039 16:00:00 GMT"

    static func fields(_ pairs: [(HTTPField.Name, String)]) -> HTTPFields {
        HTTPFields(pairs.map { HTTPField(name: $0.0, value: $0.1) })
    }

    static func lifetime(_ pairs: [(HTTPField.Name, String)], status: Int = 200) -> TimeInterval {
        let fields = fields(pairs)
        return CacheHeaders.lifetime(fields, cacheControl: CacheControl(fields), status: status, responseTime: now,
                                     heuristics: .off)
    }

    @Test("§5.3 / RFC 9110 §5.6.7: the three date forms parse; malformed Expires is invalid, so already expired",
          arguments: [
              "Thu, 01 Dec 39 16:00:00 GMT",      // two-digit year in the IMF form
              "Thu 01 Dec 2039 16:00:00 GMT",     // no comma
              "Thu, 01-Dec-2039 16:00:00 GMT",    // dashes in the IMF form
              "Thu,  01 Dec 2039 16:00:00 GMT",   // two spaces
              "Thu, 01 Dec  2039 16:00:00 GMT",
              "Thu, 01 Dec 2039 6:00:00 GMT",     // one-digit hour
              "Thu, 01 dec 2039 16:00:00 GMT",    // month names are case-sensitive
              "thu, 01 Dec 2039 16:00:00 GMT",
              "Thu, 01 Dec 2039 16:00:00 UTC",    // only GMT
              "Thu, 01 Dec 2039 16:00:00 +0000",
              "Thu, 1 Dec 2039 16:00:00 GMT",     // one-digit day
              "Thursday, 01 Dec 2039 16:00:00 GMT",
              "Thu, 01 Dec 2039 16:00 GMT",
              "0", "-1", "",
          ])
    func invalidExpires(_ value: String) {
        #expect(HTTPDate.parse(value, now: Self.now) == nil)
        #expect(Self.lifetime([(.expires, value)]) == 0, "an invalid Expires means already expired")
    }

    @Test("§5.3: the valid forms of a future Expires give a lifetime; several Expires lines mean expired")
    func validAndRepeatedExpires() {
        let expected = Date(timeIntervalSince1970: 2_206_368_000) // 2039-12-01 16:00:00 UTC
        #expect(HTTPDate.parse(Self.future) == expected)
        #expect(HTTPDate.parse("Thursday, 01-Dec-39 16:00:00 GMT", now: Self.now) == expected)
        #expect(HTTPDate.parse("Thu Dec  1 16:00:00 2039") == expected)
        #expect(HTTPDate.parse("  \(Self.future)\t") == expected, "surrounding whitespace is not part of the value")
        // RFC 850's two-digit year: more than 50 years ahead is the previous century.
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", now: Self.now) == Date(timeIntervalSince1970: 784_111_777))
        #expect(Self.lifetime([(.date, HTTPDate.format(Self.now)), (.expires, Self.future)])
                == expected.timeIntervalSince(Self.now))
        #expect(Self.lifetime([(.expires, Self.future), (.expires, Self.future)]) == 0)
        // An invalid Date is ignored: the response time stands in for it.
        #expect(Self.lifetime([(.date, "yesterday"), (.expires, Self.future)]) == expected.timeIntervalSince(Self.now))
    }

    @Test("§5.1: Age takes the first member of a list; a suffix, a sign or a non-number is ignored; too large is 2^31")
    func age() {
        let cases: [(String, Int64?)] = [
            ("7200", 7200), ("7200, 0", 7200), ("0, 7200", 0), (" 60 ", 60), ("007", 7),
            ("7200s", nil), ("-7200", nil), ("+5", nil), ("1.5", nil), ("abc", nil), ("", nil), (", 5", nil),
            ("99999999999999999999999", 2_147_483_648),
        ]
        for (value, expected) in cases {
            #expect(CacheHeaders.ageValue(Self.fields([(.age, value)])) == expected, "Age: \(value)")
        }
        #expect(CacheHeaders.ageValue(Self.fields([(.age, "30"), (.age, "90")])) == 30, "the first line's value")
    }

    @Test("§4.2.3: the initial age is the larger of the apparent age and Age plus the response delay")
    func initialAge() {
        let sent = Self.now.addingTimeInterval(-5)
        let dated = Self.fields([(.date, HTTPDate.format(Self.now.addingTimeInterval(-30))), (.age, "10")])
        #expect(CacheHeaders.initialAge(dated, requestTime: sent, responseTime: Self.now) == 30)
        let aged = Self.fields([(.date, HTTPDate.format(Self.now)), (.age, "100")])
        #expect(CacheHeaders.initialAge(aged, requestTime: sent, responseTime: Self.now) == 105)
        // A Date in the future (a fast server clock) never makes the age negative.
        let ahead = Self.fields([(.date, HTTPDate.format(Self.now.addingTimeInterval(600)))])
        #expect(CacheHeaders.initialAge(ahead, requestTime: Self.now, responseTime: Self.now) == 0)
    }

    @Test("§5.2 and §4.2.1: max-age with leading zeros or quoted counts; duplicates keep the lowest; malformed means stale")
    func maxAge() {
        let cases: [(String, TimeInterval)] = [
            ("max-age=0003600", 3600), ("max-age=\"3600\"", 3600), ("MAX-AGE=60", 60),
            ("max-age=3600, max-age=60", 60), ("max-age=60, max-age=3600", 60),
            ("max-age=60, max-age=abc", 0), ("max-age=-1", 0), ("max-age=1.5", 0), ("max-age=", 0), ("max-age", 0),
            ("max-age =60", 0), ("max-age= 60", 0), ("max-age=\"60", 0), ("max-age=\"6 0\"", 0),
            ("s-maxage=60", 0), // a private cache ignores s-maxage
            ("private, max-age=60, no-transform", 60), ("max-age=99999999999999999999", 2_147_483_648),
        ]
        for (value, expected) in cases {
            #expect(Self.lifetime([(.cacheControl, value)]) == expected, "Cache-Control: \(value)")
        }
        #expect(Self.lifetime([(.cacheControl, "max-age=60"), (.cacheControl, "max-age=30")]) == 30, "across lines")
        #expect(Self.lifetime([(.cacheControl, "max-age=60"), (.expires, "0")]) == 60, "max-age wins over Expires")
    }

    @Test("§5.2: a value parsed again reads the same, however many others were parsed between, and long values too")
    func directivesParsedAgain() {
        let values = ["max-age=60, must-revalidate", "no-cache=\"Set-Cookie\", private", "MAX-AGE=5"]
        let first = values.map { CacheControl(values: [$0]) }
        // More distinct values than are remembered, then the first ones again.
        for index in 0..<600 { _ = CacheControl(values: ["max-age=\(index)"]) }
        let again = values.map { CacheControl(values: [$0]) }
        #expect(again == first)
        // What was remembered is what the text says, not only what an earlier read said.
        #expect(again[0].maxAge == .seconds(60) && again[0].mustRevalidate && !again[0].noCache)
        #expect(again[1].noCache && again[1].isPrivate && again[1].maxAge == nil)
        #expect(again[2].maxAge == .seconds(5))
        for index in [0, 255, 599] {
            #expect(CacheControl(values: ["max-age=\(index)"]).maxAge == .seconds(Int64(index)))
        }
        // Every line counts: a directive on the second is read.
        #expect(CacheControl(values: ["max-age=60", "no-store"]).noStore)
        #expect(!CacheControl(values: ["max-age=60"]).noStore)
        let long = "x-padding=\"\(String(repeating: "a", count: 2_000))\", max-age=42"
        #expect(CacheControl(values: [long]).maxAge == CacheControl(values: ["max-age=42"]).maxAge)
        #expect(CacheControl(values: [long]).contains("x-padding"))
        #expect(CacheControl(values: []).directives.isEmpty)
    }

    @Test("§5.2.2: no-cache with or without field names, must-revalidate and proxy-revalidate are recognised in any case")
    func responseDirectives() {
        for value in ["no-cache", "NO-CACHE", "no-cache=\"Set-Cookie\"", "no-cache=\"Set-Cookie, X-Other\"", "no-cache=Set-Cookie",
                      "max-age=60, no-cache=\"a\""] {
            #expect(CacheControl(values: [value]).noCache, "\(value)")
        }
        #expect(CacheControl(values: ["Must-Revalidate"]).mustRevalidate)
        #expect(CacheControl(values: ["proxy-revalidate"]).proxyRevalidate)
        #expect(!CacheControl(values: ["\"no-cache\""]).noCache, "a quoted string is not a directive name")
        #expect(CacheControl(values: ["stale-if-error=60, stale-while-revalidate=30"]).staleIfError == .seconds(60))
        #expect(CacheControl(values: ["max-stale"]).maxStale == .any)
        #expect(CacheControl(values: ["max-stale=10"]).maxStale == .seconds(10))
        #expect(CacheControl(values: ["max-stale=x"]).maxStale == .invalid)
        #expect(CacheControl(values: ["a=\"x,y\", b"]).directives.keys.sorted() == ["a", "b"], "commas inside quotes")
    }

    @Test("§5.2 / RFC 9110 §5.6.2: a directive name is made of exactly the tchar bytes, every one of them")
    func directiveNamesAreTokens() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        // Not the list separator, the argument's `=` or a quote: those mean something of their own.
        for byte in UInt8(0x21)...UInt8(0x7E) where !"=,\"".utf8.contains(byte) {
            let name = "x" + String(decoding: [byte], as: UTF8.self) + "y"
            let directives = CacheControl(values: [name]).directives
            if tchar.contains(byte) {
                #expect(directives[name.lowercased()] == [.none], "\(name): one name of three tchars")
            } else {
                #expect(directives["x"] == [.malformed], "\(name): the name ends before a non-tchar")
            }
        }
    }

    @Test("RFC 9110 §5.6.3: optional whitespace is spaces and tabs only, trimmed at both ends on scalar boundaries")
    func optionalWhitespace() {
        #expect(" \t\"v1\" \t".trimmingOptionalWhitespace == "\"v1\"")
        #expect("W/\"x\"".trimmingOptionalWhitespace == "W/\"x\"")
        #expect(" \t ".trimmingOptionalWhitespace.isEmpty)
        #expect("".trimmingOptionalWhitespace.isEmpty)
        #expect(" é ".trimmingOptionalWhitespace == "é", "a multi-byte scalar at both ends")
        #expect(" e\u{301}\t".trimmingOptionalWhitespace == "e\u{301}", "a combining mark last")
        #expect("\u{A0}no-cache\u{A0}".trimmingOptionalWhitespace == "\u{A0}no-cache\u{A0}", "not HTTP whitespace")
        #expect(CacheHeaders.weaklyMatch(" W/\"a\"\t", "\"a\""))
        #expect(!CacheHeaders.weaklyMatch("\u{A0}\"a\"", "\"a\""))
    }

    @Test("§4.2.2: the heuristic is 10 % of Date − Last-Modified, capped, only for heuristically cacheable statuses")
    func heuristic() {
        let fields = Self.fields([(.date, HTTPDate.format(Self.now)),
                                  (.lastModified, HTTPDate.format(Self.now.addingTimeInterval(-10_000)))])
        let heuristics = HeuristicFreshness(fraction: 0.1, maximum: 86_400)
        func lifetime(_ status: Int, _ rules: HeuristicFreshness = heuristics, _ fields: HTTPFields = fields) -> TimeInterval {
            CacheHeaders.lifetime(fields, cacheControl: CacheControl(fields), status: status, responseTime: Self.now,
                                  heuristics: rules)
        }
        #expect(lifetime(200) == 1000)
        for status in [203, 204, 300, 301, 308, 404, 405, 410, 414, 501] { #expect(lifetime(status) == 1000, "\(status)") }
        for status in [201, 302, 303, 307, 400, 403, 500, 503] { #expect(lifetime(status) == 0, "\(status)") }
        #expect(lifetime(200, HeuristicFreshness(fraction: 0.1, maximum: 600)) == 600, "capped")
        #expect(lifetime(200, .off) == 0, "turned off")
        var explicit = fields
        explicit[.expires] = "0"
        #expect(lifetime(200, heuristics, explicit) == 0, "an explicit (even invalid) Expires wins over the heuristic")
        var future = fields
        future[.lastModified] = HTTPDate.format(Self.now.addingTimeInterval(60))
        #expect(lifetime(200, heuristics, future) == 0, "a Last-Modified after Date gives nothing")
    }

    // MARK: Fuzz

    static let vocabulary = [
        "max-age", "no-cache", "must-revalidate", "stale-if-error", "max-stale", "min-fresh", "=", "\"", "\\", ",",
        " ", "\t", "0", "60", "007", "-", "99999999999999999999", "Thu", "Thursday", "Dec", "dec", "2039", "39",
        "16:00:00", "6:00:00", "GMT", "UTC", "01", "1", "é",
    ]

    static func randomText(_ random: inout SeededGenerator, maximumTokens: Int = 12) -> String {
        (0..<Int.random(in: 0...maximumTokens, using: &random)).map { _ in
            Bool.random(using: &random)
                ? vocabulary.randomElement(using: &random)!
                : String(UnicodeScalar(UInt8.random(in: 0x20...0x7E, using: &random)))
        }.joined()
    }

    @Test("fuzz: Cache-Control never traps; lifetimes are finite, non-negative and never above 2^31 s")
    func fuzzCacheControl() {
        var random = SeededGenerator(seed: 0x9111)
        for _ in 0..<3000 {
            let values = (0..<Int.random(in: 1...3, using: &random)).map { _ in Self.randomText(&random) }
            let control = CacheControl(values: values)
            let lifetime = Self.lifetime(values.map { (.cacheControl, $0) })
            #expect(lifetime.isFinite && lifetime >= 0 && lifetime <= 2_147_483_648, "\(values)")
            if let maxAge = control.maxAge?.value { #expect(maxAge >= 0 && maxAge <= 2_147_483_648) }
            // Most restrictive: adding a max-age=0 line can only shorten the lifetime to 0.
            #expect(Self.lifetime(values.map { (.cacheControl, $0) } + [(.cacheControl, "max-age=0")]) == 0)
        }
    }

    @Test("fuzz: HTTP dates never trap; whatever parses formats back to the same instant in the IMF form")
    func fuzzDates() {
        var random = SeededGenerator(seed: 0xDA7E5)
        for _ in 0..<3000 {
            let text = Self.randomText(&random)
            if let parsed = HTTPDate.parse(text, now: Self.now) {
                #expect(HTTPDate.parse(HTTPDate.format(parsed)) == parsed, "\(text.debugDescription)")
            }
            // Mutating one byte of a valid date either keeps it valid or makes it invalid, never a trap.
            var bytes = Array(HTTPDate.format(Date(timeIntervalSince1970: TimeInterval(Int64.random(
                in: 0...253_402_300_799, using: &random)))).utf8)
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...127, using: &random)
            _ = HTTPDate.parse(String(decoding: bytes, as: UTF8.self), now: Self.now)
        }
    }

    @Test("fuzz: Age never traps and is either ignored or a value in 0...2^31")
    func fuzzAge() {
        var random = SeededGenerator(seed: 0xA6E)
        for _ in 0..<3000 {
            let value = Self.randomText(&random, maximumTokens: 4)
            if let age = CacheHeaders.ageValue(Self.fields([(.age, value)])) {
                #expect(age >= 0 && age <= 2_147_483_648, "\(value.debugDescription)")
            }
            let initial = CacheHeaders.initialAge(Self.fields([(.age, value), (.date, value)]), requestTime: Self.now,
                                                  responseTime: Self.now)
            #expect(initial >= 0 && initial.isFinite)
        }
    }
}
