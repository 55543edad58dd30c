import Foundation
import HTTPTypes
import Synchronization
import Testing
import Tollgate
import TollgateAsyncHTTPClient
import TollgateTestSupport

/// A gate over a fresh SQLite file, in front of a scripted loopback origin, on simulated time.
final class RFCHarness {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let origin: ScriptedOrigin
    let clock: SimulatedClock
    let gate: Gate

    init(
        quotaLimit: Int = 10_000, transport: TransportKind = .asyncHTTPClient,
        cache: (inout CacheConfiguration) -> Void = { _ in },
        _ handler: @escaping @Sendable (ScriptedOrigin.Received) -> ScriptedOrigin.Answer
    ) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("rfc.sqlite"))
        origin = try ScriptedOrigin(handler)
        clock = SimulatedClock(base: ManualClock(now: Self.start))
        var configuration = GateHarness.configuration(quotaLimit: quotaLimit, throttleLimit: 10_000)
        cache(&configuration.cache)
        gate = try Gate(store: store, transport: transport.make(), configuration: configuration, clock: clock)
    }

    var now: Date { clock.now() }

    func advance(_ seconds: Int) { clock.base.advance(by: .seconds(seconds)) }

    func request(_ path: String, method: HTTPRequest.Method = .get, _ headers: [(String, String)] = []) -> HTTPRequest {
        var request = HTTPRequest(url: origin.url(path))
        request.method = method
        for (name, value) in headers { request.headerFields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return request
    }

    func send(
        _ path: String, method: HTTPRequest.Method = .get, _ headers: [(String, String)] = [],
        options: GateRequestOptions = GateRequestOptions()
    ) async throws -> GateResponse {
        try await gate.send(request(path, method: method, headers), endpoint: "rfc", options: options)
    }

    /// How many requests reached the origin.
    var sent: Int { origin.received.count }

    deinit { origin.stop() }
}

extension GateResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
}

@Suite("RFC 9111 conformance of the library's cache, end to end over loopback", .serialized)
struct RFC9111ConformanceTests {
    // MARK: §3 Storing responses

    @Test("§3: a response without validators is stored, served while fresh, then fetched again in full with no conditional field")
    func storedWithoutValidators() async throws {
        let harness = try RFCHarness { _ in .init(200, [("Cache-Control", "max-age=60")], body: "v1") }
        #expect(try await harness.send("/plain").source == .network)
        let hit = try await harness.send("/plain")
        #expect(hit.source == .cache)
        #expect(hit.text == "v1")
        #expect(harness.sent == 1)
        harness.advance(61)
        harness.origin.answer { _ in .init(200, [("Cache-Control", "max-age=60")], body: "v2") }
        let refetched = try await harness.send("/plain")
        #expect(refetched.source == .network)
        #expect(refetched.text == "v2")
        let second = try #require(harness.origin.received.last)
        #expect(second.header("If-None-Match") == nil && second.header("If-Modified-Since") == nil)
        #expect(try await harness.send("/plain").text == "v2")
        #expect(harness.sent == 2)
    }

    @Test("§3: statuses cacheable by default are stored with heuristic freshness; others only with explicit freshness",
          arguments: [200, 203, 204, 300, 301, 308, 404, 405, 410, 414])
    func cacheableByDefault(status: Int) async throws {
        let lastModified = IMFDate.format(RFCHarness.start.addingTimeInterval(-100_000))
        let harness = try RFCHarness { _ in .init(status, [("Last-Modified", lastModified)], body: status == 204 ? "" : "x") }
        #expect(try await harness.send("/s").status.code == status)
        let second = try await harness.send("/s")
        #expect(second.source == .cache, "\(status) is heuristically cacheable: 10 % of 100,000 s")
        #expect(second.status.code == status)
        #expect(harness.sent == 1)
    }

    @Test("§3: a status not cacheable by default is stored only with max-age or Expires", arguments: [302, 307, 400, 403])
    func notCacheableByDefault(status: Int) async throws {
        let lastModified = IMFDate.format(RFCHarness.start.addingTimeInterval(-100_000))
        let harness = try RFCHarness { _ in .init(status, [("Last-Modified", lastModified)]) }
        _ = try await harness.send("/s")
        #expect(try await harness.send("/s").source == .network)
        #expect(harness.sent == 2)
        harness.origin.answer { _ in .init(status, [("Cache-Control", "max-age=60")]) }
        _ = try await harness.send("/t")
        #expect(try await harness.send("/t").source == .cache)
        #expect(harness.sent == 3)
    }

    // MARK: §4.2.1, §4.2.2 Freshness lifetime

    @Test("§4.2.1: max-age wins over Expires, Expires over the heuristic")
    func lifetimePrecedence() async throws {
        let start = RFCHarness.start
        let harness = try RFCHarness { request in
            switch request.target {
            case "/both": .init(200, [("Date", IMFDate.format(start)), ("Expires", IMFDate.format(start.addingTimeInterval(300))),
                                     ("Cache-Control", "max-age=10")])
            default: .init(200, [("Date", IMFDate.format(start)), ("Expires", IMFDate.format(start.addingTimeInterval(30))),
                                ("Last-Modified", IMFDate.format(start.addingTimeInterval(-100_000)))])
            }
        }
        _ = try await harness.send("/both")
        _ = try await harness.send("/expires")
        harness.advance(11)
        #expect(try await harness.send("/both").source == .network, "max-age=10 beats Expires +300")
        #expect(try await harness.send("/expires").source == .cache)
        harness.advance(20)
        #expect(try await harness.send("/expires").source == .network, "Expires +30 beats the heuristic's 10,000 s")
    }

    @Test("§4.2.2: the heuristic's cap is configurable, and heuristics can be turned off")
    func heuristicConfigurable() async throws {
        let lastModified = IMFDate.format(RFCHarness.start.addingTimeInterval(-36_000))  // 10 % = 3,600 s
        let capped = try RFCHarness(cache: { $0.maxHeuristicFreshness = .seconds(600) }) { _ in
            .init(200, [("Last-Modified", lastModified)])
        }
        _ = try await capped.send("/h")
        capped.advance(599)
        #expect(try await capped.send("/h").source == .cache)
        capped.advance(2)
        let revalidation = try await capped.send("/h")
        #expect(revalidation.source == .network)
        #expect(capped.origin.received.last?.header("If-Modified-Since") == lastModified)

        let off = try RFCHarness(cache: { $0.usesHeuristicFreshness = false }) { _ in
            .init(200, [("Last-Modified", lastModified)])
        }
        _ = try await off.send("/h")
        #expect(try await off.send("/h").source == .network)
    }

    // MARK: §4.2.3 Age

    @Test("§4.2.3: the age counts Date, Age, the response delay and the time stored; every cached answer carries it with the stored Date")
    func currentAge() async throws {
        let date = IMFDate.format(RFCHarness.start.addingTimeInterval(-30))
        let harness = try RFCHarness { _ in .init(200, [("Date", date), ("Age", "10"), ("Cache-Control", "max-age=100")]) }
        _ = try await harness.send("/aged")  // apparent age 30 > Age 10
        harness.advance(20)
        let hit = try await harness.send("/aged")
        #expect(hit.source == .cache)
        #expect(hit.response.headerFields[values: .age] == ["50"])
        #expect(hit.response.headerFields[.date] == date)
        #expect(hit.age == .seconds(50))
        harness.advance(49)
        #expect(try await harness.send("/aged").response.headerFields[.age] == "99")
        harness.advance(1)
        #expect(try await harness.send("/aged").source == .network, "100 s old: stale")

        // The response delay counts: the origin takes 5 s (simulated) to answer, Age 10 → 15.
        let clock = harness.clock
        harness.origin.answer { _ in
            clock.base.advance(by: .seconds(5))
            return .init(200, [("Age", "10"), ("Cache-Control", "max-age=100")])
        }
        _ = try await harness.send("/slow")
        let slow = try await harness.send("/slow")
        #expect(slow.source == .cache)
        #expect(slow.response.headerFields[.age] == "15")
    }

    @Test("§5.3: a malformed Expires means already expired", arguments: [
        "Thu, 01 Dec 39 16:00:00 GMT", "Thu 01 Dec 2039 16:00:00 GMT", "Thu, 01-Dec-2039 16:00:00 GMT",
        "Thu,  01 Dec 2039 16:00:00 GMT", "Thu, 01 Dec 2039 6:00:00 GMT", "0",
    ])
    func malformedExpires(value: String) async throws {
        let harness = try RFCHarness { _ in .init(200, [("Expires", value)]) }
        _ = try await harness.send("/e")
        #expect(try await harness.send("/e").source == .network)
    }

    @Test("§5.3: several Expires lines mean already expired; §4.2.1: of two max-age, the lower wins")
    func repeatedFields() async throws {
        let future = IMFDate.format(RFCHarness.start.addingTimeInterval(3600))
        let harness = try RFCHarness { request in
            request.target == "/expires" ? .init(200, [("Expires", future), ("Expires", future)])
                : .init(200, [("Cache-Control", "max-age=3600"), ("Cache-Control", "max-age=10")])
        }
        _ = try await harness.send("/expires")
        #expect(try await harness.send("/expires").source == .network)
        _ = try await harness.send("/max-age")
        harness.advance(11)
        #expect(try await harness.send("/max-age").source == .network)
    }

    // MARK: §4.2.4, §5.2.2 Serving stale

    @Test("§4.2.4: with no directive, a stale response is served when the origin is unreachable")
    func staleOnErrorByDefault() async throws {
        let harness = try RFCHarness { _ in .init(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=1")], body: "kept") }
        _ = try await harness.send("/r")
        harness.advance(3600)
        harness.origin.answer { _ in .init(0) }
        let stale = try await harness.send("/r")
        #expect(stale.source == .stale(.upstreamFailure))
        #expect(stale.text == "kept")
        #expect(stale.response.headerFields[.age] == "3600")
    }

    @Test("§5.2.2: must-revalidate, proxy-revalidate and no-cache (with field names too) are never served stale when the origin is unreachable",
          arguments: ["max-age=1, must-revalidate", "max-age=1, proxy-revalidate", "no-cache", "max-age=600, no-cache=\"Set-Cookie\""])
    func revalidationDirectivesForbidStale(directives: String) async throws {
        let harness = try RFCHarness { _ in .init(200, [("ETag", "\"1\""), ("Cache-Control", directives)], body: "kept") }
        _ = try await harness.send("/r")
        harness.advance(60)
        harness.origin.answer { _ in .init(0) }
        await #expect(throws: HTTPTransportError.self) { try await harness.send("/r") }
        // An origin that answers 503 is passed on as it is, not replaced by the stored answer.
        harness.origin.answer { _ in .init(503) }
        #expect(try await harness.send("/r").status.code == 503)
    }

    @Test("§4.2.4: a spent quota serves stale only where the directives allow it")
    func quotaSpentRespectsDirectives() async throws {
        let harness = try RFCHarness(quotaLimit: 2) { request in
            .init(200, [("ETag", "\"1\""), ("Cache-Control", request.target == "/strict" ? "max-age=0, must-revalidate" : "max-age=0")])
        }
        _ = try await harness.send("/strict")
        _ = try await harness.send("/lenient")
        #expect(try await harness.send("/lenient").source == .stale(.quotaExhausted))
        await #expect(throws: TollgateError.self) { try await harness.send("/strict") }
        #expect(harness.sent == 2)
    }

    @Test("§4.2.4: an open circuit serves stale only where the directives allow it, else refuses")
    func circuitOpenRespectsDirectives() async throws {
        let harness = try RFCHarness { request in
            .init(200, [("ETag", "\"1\""), ("Cache-Control", request.target == "/strict" ? "no-cache" : "max-age=0")])
        }
        _ = try await harness.send("/strict")
        _ = try await harness.send("/lenient")
        try await harness.gate.circuit.forceOpen(endpoint: "rfc", for: .seconds(60))
        #expect(try await harness.send("/lenient").source == .stale(.circuitOpen))
        let refusal = await #expect(throws: TollgateError.self) { try await harness.send("/strict") }
        #expect(refusal == .circuitOpen(retryAfter: 60))
        #expect(harness.sent == 2)
    }

    @Test("§4.2.4: servesStaleAgainstDirectives is an explicit opt-out for APIs whose every answer says must-revalidate")
    func optOutOfDirectives() async throws {
        let harness = try RFCHarness(quotaLimit: 1, cache: { $0.servesStaleAgainstDirectives = true }) { _ in
            .init(200, [("ETag", "\"1\""), ("Cache-Control", "private, max-age=0, must-revalidate, no-transform")])
        }
        _ = try await harness.send("/youtube")
        #expect(try await harness.send("/youtube").source == .stale(.quotaExhausted))
    }

    @Test("RFC 5861 §4: stale-if-error limits how stale an answer served on an error may be")
    func staleIfError() async throws {
        let harness = try RFCHarness { _ in .init(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=10, stale-if-error=60")]) }
        _ = try await harness.send("/r")
        harness.origin.answer { _ in .init(500) }
        harness.advance(70)  // 60 s stale: within the limit
        #expect(try await harness.send("/r").source == .stale(.upstreamFailure))
        harness.advance(1)   // 61 s stale
        #expect(try await harness.send("/r").status.code == 500)
    }

    @Test("RFC 5861 §3: within stale-while-revalidate the stale answer is served at once and revalidated in the background")
    func staleWhileRevalidate() async throws {
        let harness = try RFCHarness { request in
            request.header("If-None-Match") == "\"1\""
                ? .init(304, [("ETag", "\"1\""), ("Cache-Control", "max-age=100, stale-while-revalidate=30")])
                : .init(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=10, stale-while-revalidate=30")], body: "body")
        }
        _ = try await harness.send("/r")
        harness.advance(20)  // 10 s stale: within the window
        let served = try await harness.send("/r")
        #expect(served.source == .stale(.revalidating))
        #expect(served.text == "body")
        try await harness.gate.flush()  // waits for the background revalidation
        #expect(harness.origin.received.last?.header("If-None-Match") == "\"1\"")
        #expect(harness.sent == 2)
        let fresh = try await harness.send("/r")
        #expect(fresh.source == .cache, "the 304's max-age=100 was merged")
        harness.advance(200)  // 100 s stale: beyond the window, revalidated before answering
        #expect(try await harness.send("/r").source == .revalidated)
        harness.advance(110)  // 10 s stale again: a caller that refuses stale answers waits for the revalidation
        #expect(try await harness.send("/r", options: GateRequestOptions(allowsStale: false)).source == .revalidated)
    }

    // MARK: §5.2.1 Request directives

    @Test("§5.2.1: max-age, min-fresh and max-stale in the request")
    func requestDirectives() async throws {
        let harness = try RFCHarness { _ in .init(200, [("Cache-Control", "max-age=60")]) }
        _ = try await harness.send("/r")
        harness.advance(30)
        #expect(try await harness.send("/r", [("Cache-Control", "max-age=40")]).source == .cache)
        #expect(try await harness.send("/r", [("Cache-Control", "min-fresh=20")]).source == .cache)
        #expect(harness.sent == 1)
        #expect(try await harness.send("/r", [("Cache-Control", "max-age=10")]).source == .network)
        harness.advance(30)
        #expect(try await harness.send("/r", [("Cache-Control", "min-fresh=40")]).source == .network)
        harness.advance(80)  // 20 s stale
        #expect(try await harness.send("/r", [("Cache-Control", "max-stale=30")]).source == .cache)
        #expect(try await harness.send("/r", [("Cache-Control", "max-stale")]).source == .cache)
        #expect(harness.sent == 3)
        #expect(try await harness.send("/r", [("Cache-Control", "max-stale=10")]).source == .network)
    }

    @Test("§5.2.1 and §4.2.4: max-stale never serves a must-revalidate response stale")
    func maxStaleAgainstMustRevalidate() async throws {
        let harness = try RFCHarness { _ in .init(200, [("Cache-Control", "max-age=1, must-revalidate")]) }
        _ = try await harness.send("/r")
        harness.advance(5)
        #expect(try await harness.send("/r", [("Cache-Control", "max-stale")]).source == .network)
    }

    @Test("§5.2.1.4 and §5.4: no-cache, and Pragma: no-cache when there is no Cache-Control, revalidate a fresh response")
    func requestNoCache() async throws {
        let harness = try RFCHarness { _ in .init(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=600")]) }
        _ = try await harness.send("/r")
        #expect(try await harness.send("/r", [("Cache-Control", "no-cache")]).source == .network)
        #expect(try await harness.send("/r", [("Pragma", "no-cache")]).source == .network)
        #expect(try await harness.send("/r", [("Pragma", "no-cache"), ("Cache-Control", "max-age=600")]).source == .cache)
        #expect(harness.origin.received.dropFirst().allSatisfy { $0.header("If-None-Match") == "\"1\"" })
    }

    @Test("§5.2.1.7: only-if-cached answers from the cache or with a 504 made by the gate; nothing reaches the origin")
    func onlyIfCached() async throws {
        let harness = try RFCHarness { _ in .init(200, [("Cache-Control", "max-age=60")], body: "x") }
        let nothing = try await harness.send("/r", [("Cache-Control", "only-if-cached")])
        #expect(nothing.status == .gatewayTimeout)
        #expect(nothing.source == .notCached)
        #expect(harness.sent == 0)
        _ = try await harness.send("/r")
        #expect(try await harness.send("/r", [("Cache-Control", "only-if-cached")]).source == .cache)
        harness.advance(61)
        #expect(try await harness.send("/r", [("Cache-Control", "only-if-cached")]).status == .gatewayTimeout)
        #expect(try await harness.send("/r", [("Cache-Control", "only-if-cached, max-stale")]).text == "x")
        #expect(harness.sent == 1)
    }

    // MARK: §4.4 Invalidation

    @Test("§4.4: a successful unsafe method invalidates the target and the same-origin Location and Content-Location",
          arguments: ["POST", "PUT", "DELETE", "PATCH", "REPORT"])
    func unsafeMethodsInvalidate(method: String) async throws {
        let harness = try RFCHarness { _ in .init() }
        let port = harness.origin.port
        harness.origin.answer { request in
            request.method == "GET"
                ? .init(200, [("Cache-Control", "max-age=600")], body: request.target)
                : .init(201, [("Location", "/items/2"), ("Content-Location", "http://127.0.0.1:\(port)/items/3?b=2&a=1")])
        }
        for path in ["/items", "/items/2", "/items/3?a=1&b=2", "/items/4"] { _ = try await harness.send(path) }
        _ = try await harness.send("/items", method: HTTPRequest.Method(method)!)
        for path in ["/items", "/items/2", "/items/3?a=1&b=2"] {
            #expect(try await harness.send(path).source == .network, "\(method) invalidated \(path)")
        }
        #expect(try await harness.send("/items/4").source == .cache)
    }

    @Test("§4.4: a Location on another origin is not invalidated")
    func crossOriginLocation() async throws {
        let harness = try RFCHarness { _ in .init() }
        let port = harness.origin.port
        harness.origin.answer { request in
            request.method == "GET" ? .init(200, [("Cache-Control", "max-age=600")])
                : .init(201, [("Location", "http://127.0.0.2:\(port)/items/2"), ("Content-Location", "https://127.0.0.1:\(port)/items/2")])
        }
        // The other origin's entry is stored directly: nothing listens on 127.0.0.2.
        let elsewhere = HTTPRequest(url: URL(string: "http://127.0.0.2:\(port)/items/2")!)
        try await harness.gate.cache.storeResponse(HTTPResponse(status: .ok, headerFields: [.cacheControl: "max-age=600"]),
                                                   body: Data(), for: elsewhere, endpoint: "rfc")
        _ = try await harness.send("/items/2")
        _ = try await harness.send("/items", method: .post)
        #expect(try await harness.gate.cache.lookup(elsewhere, endpoint: "rfc").isFreshHit)
        #expect(try await harness.send("/items/2").source == .cache, "https is another origin")
    }

    @Test("§4.4: a failed unsafe method invalidates nothing")
    func failedUnsafeMethod() async throws {
        let harness = try RFCHarness { request in
            request.method == "GET" ? .init(200, [("Cache-Control", "max-age=600")]) : .init(409)
        }
        _ = try await harness.send("/items")
        _ = try await harness.send("/items", method: .post)
        #expect(try await harness.send("/items").source == .cache)
    }

    // MARK: §4.3 Validation

    @Test("§4.3.5: a HEAD 200 with matching validators updates the stored GET; with others it makes it stale")
    func headUpdatesGet() async throws {
        let harness = try RFCHarness { request in
            switch (request.method, request.target) {
            case ("HEAD", "/same"):
                .init(200, [("ETag", "\"1\""), ("Cache-Control", "max-age=600"), ("X-Updated", "yes")], body: "get")
            case ("HEAD", _): .init(200, [("ETag", "\"2\""), ("Cache-Control", "max-age=600")], body: "get")
            default: .init(200, [("ETag", "\"1\""), ("Cache-Control", request.target == "/same" ? "max-age=0" : "max-age=600")],
                           body: "get")
            }
        }
        _ = try await harness.send("/same")
        _ = try await harness.send("/same", method: .head)
        let updated = try await harness.send("/same")
        #expect(updated.source == .cache)
        #expect(updated.text == "get")
        #expect(updated.response.headerFields[HTTPField.Name("X-Updated")!] == "yes")

        _ = try await harness.send("/changed")
        #expect(try await harness.send("/changed").source == .cache)
        _ = try await harness.send("/changed", method: .head)
        #expect(try await harness.send("/changed").source == .network, "a HEAD with another ETag made it stale")
        #expect(harness.origin.received.last?.header("If-None-Match") == "\"1\"")
    }

    @Test("§4.3.2: a request that matches no stored variant still carries their ETags, and a 304 selects one")
    func varyMismatchSendsStoredETags() async throws {
        let harness = try RFCHarness { request in
            request.header("If-None-Match") == "\"en\""
                ? .init(304, [("ETag", "\"en\""), ("Vary", "Accept-Language"), ("Cache-Control", "max-age=60")])
                : .init(200, [("ETag", "\"en\""), ("Vary", "Accept-Language"), ("Cache-Control", "max-age=60")], body: "hello")
        }
        _ = try await harness.send("/greeting", [("Accept-Language", "en")])
        let other = try await harness.send("/greeting", [("Accept-Language", "en-GB")])
        #expect(harness.origin.received.last?.header("If-None-Match") == "\"en\"")
        #expect(other.source == .revalidated)
        #expect(other.text == "hello")
        #expect(try await harness.send("/greeting", [("Accept-Language", "en-GB")]).source == .cache)
        #expect(harness.sent == 2)
    }

    @Test("§4.3.2: when the 304 to the variants' ETags matches nothing stored, the caller's request is sent again without conditions")
    func unmatchedNotModifiedIsResent() async throws {
        let harness = try RFCHarness { request in
            request.header("If-None-Match") != nil
                ? .init(304, [("ETag", "\"gone\""), ("Vary", "Accept-Language")])
                : .init(200, [("ETag", "\"en\""), ("Vary", "Accept-Language"), ("Cache-Control", "max-age=60")], body: "hello")
        }
        _ = try await harness.send("/greeting", [("Accept-Language", "en")])
        let other = try await harness.send("/greeting", [("Accept-Language", "fr")])
        #expect(other.status.code == 200)
        #expect(other.source == .network)
        #expect(other.attempts == 2)
        #expect(harness.origin.received.map { $0.header("If-None-Match") } == [nil, "\"en\"", nil])
    }

    @Test("§4.3.4: a 304 whose ETag names no stored response revises nothing: the request is sent again without conditions")
    func notModifiedWithAnotherTagIsResent() async throws {
        let version = Mutex(1)
        let harness = try RFCHarness { request in
            let current = version.withLock { $0 }
            // A confused server: it answers every conditional request with a 304 carrying its
            // current tag, whether or not that matches the one asked about.
            if request.header("If-None-Match") != nil {
                return .init(304, [("ETag", "\"v\(current)\""), ("Cache-Control", "max-age=0")])
            }
            return .init(200, [("ETag", "\"v\(current)\""), ("Cache-Control", "max-age=0")], body: "body \(current)")
        }
        #expect(try await harness.send("/item").text == "body 1")
        version.withLock { $0 = 2 }
        let answer = try await harness.send("/item")
        #expect(answer.text == "body 2", "the old body is never served under the new tag")
        #expect(answer.source == .network)
        #expect(answer.response.headerFields[.eTag] == "\"v2\"")
        #expect(harness.origin.received.map { $0.header("If-None-Match") } == [nil, "\"v1\"", nil])
        // And the stored response is now the new one: the next 304 confirms it.
        let again = try await harness.send("/item")
        #expect(again.source == .revalidated)
        #expect(again.text == "body 2")
    }

    @Test("an entity tag the parser could not read as sent (8-bit bytes) is never sent back; the date is")
    func damagedTagIsNotSentBack() async throws {
        let harness = try RFCHarness { request in
            if request.header("If-Modified-Since") != nil {
                return .init(304, [("Cache-Control", "max-age=0")])
            }
            return .init(200, [("ETag", "\"caf\u{FFFD}\""), ("Last-Modified", "Tue, 01 Sep 2026 10:00:00 GMT"),
                               ("Cache-Control", "max-age=0")], body: "menu")
        }
        _ = try await harness.send("/menu")
        let second = try await harness.send("/menu")
        #expect(harness.origin.received.last?.header("If-None-Match") == nil)
        #expect(harness.origin.received.last?.header("If-Modified-Since") == "Tue, 01 Sep 2026 10:00:00 GMT")
        #expect(second.source == .revalidated)
        #expect(second.unitsCharged == 1, "the YouTube preset's 304 costs its 1 unit")
    }

    // MARK: §3.1 Headers that are not stored

    @Test("§3.1: hop-by-hop fields and those Connection names are neither stored nor replayed; Set-Cookie is never replayed")
    func unstoredFields() async throws {
        let harness = try RFCHarness { _ in
            .init(200, [("Cache-Control", "max-age=60"), ("Connection", "X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "timeout=5"),
                        ("Set-Cookie", "session=secret"), ("X-Kept", "yes")])
        }
        _ = try await harness.send("/r")
        let hit = try await harness.send("/r")
        #expect(hit.source == .cache)
        let names = Set(hit.response.headerFields.map(\.name.canonicalName))
        #expect(names.isDisjoint(with: ["x-hop", "keep-alive", "connection", "set-cookie"]))
        #expect(names.contains("x-kept"))
        let stored = try await harness.store.read { db in try db.fetchAll(sql: "SELECT headers FROM cache_entries") }
        #expect(stored.allSatisfy { !($0[0].string ?? "").contains("X-Hop") && !($0[0].string ?? "").contains("session=") })
    }
}

enum IMFDate {
    /// IMF-fixdate, formatted independently of the library.
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

extension CacheLookup {
    var isFreshHit: Bool { if case .fresh = self { true } else { false } }
}
