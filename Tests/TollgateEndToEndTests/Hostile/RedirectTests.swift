import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateTestSupport

/// A gate over a fresh file with a clock whose sleeps pass at once, for scripted servers.
struct ScriptedGate {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let gate: Gate
    /// The gate's clock when the gate made it: its sleeps pass at once, and its `sleeps` are the
    /// retry delays waited. Nil for a gate on a clock of the test's own.
    let simulatedClock: SimulatedClock?

    init(_ kind: TransportKind, configure: (inout GateConfiguration) -> Void = { _ in }) throws {
        try self.init(transport: kind.make(), configure: configure)
    }

    init(transport: any HTTPTransport, configure: (inout GateConfiguration) -> Void = { _ in }) throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("gate.sqlite"))
        var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
        configure(&configuration)
        let clock = SimulatedClock(base: ManualClock(now: GateHarness.start))
        simulatedClock = clock
        gate = try Gate(store: store, transport: transport, configuration: configuration, clock: clock)
    }

    /// A GET with the credentials an attacker must never see.
    static func withCredentials(_ url: String) -> HTTPRequest {
        var request = HTTPRequest(url: URL(string: url)!)
        request.headerFields[.authorization] = "Bearer ya29.secret-bearer-token-abcdef"
        request.headerFields[HTTPField.Name("X-Goog-Api-Key")!] = "AIzaSy-secret-header-key-123456"
        request.headerFields[HTTPField.Name("X-Tenant-Token")!] = "tenant-secret-token-987654"
        return request
    }
}

extension ScriptedHTTPServer.Request {
    /// Whether any credential of ``ScriptedGate/withCredentials(_:)`` or a `key=` reached this server.
    var carriesCredentials: Bool {
        let everything = target + headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
        return ["secret-bearer-token", "secret-header-key", "tenant-secret-token", "AIzaSy-query-key"]
            .contains { everything.contains($0) }
    }
}

@Suite("Hostile input: redirects never carry credentials to another origin")
struct RedirectTests {
    @Test("a cross-origin redirect is returned as it is by default: the other host receives nothing",
          arguments: TransportKind.allCases)
    func crossOriginReturnedAsIs(kind: TransportKind) async throws {
        let attacker = try ScriptedHTTPServer(host: "127.0.0.2") { _ in .init(body: "attacker's page") }
        defer { attacker.stop() }
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { _ in
            .init(status: 302, headers: [("Location", "\(attacker.baseURL)/collect?key=AIzaSy-query-key")])
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)

        let answer = try await harness.gate.send(
            ScriptedGate.withCredentials("\(origin.baseURL)/videos?id=1&key=AIzaSy-query-key"), endpoint: "videos.list"
        )
        #expect(answer.status.code == 302)
        #expect(answer.response.headerFields[.location]?.hasPrefix(attacker.baseURL) == true)
        #expect(answer.redirects.isEmpty)
        #expect(attacker.requests.isEmpty, "the transport must not follow the redirect itself")
        #expect(origin.requests.count == 1)
    }

    @Test("followed across origins only when asked, then stripped of every credential header and parameter",
          arguments: TransportKind.allCases)
    func crossOriginFollowedWithoutCredentials(kind: TransportKind) async throws {
        let other = try ScriptedHTTPServer(host: "127.0.0.2") { _ in
            .init(headers: [("ETag", "\"other\""), ("Cache-Control", "max-age=600")], body: "the other host's answer")
        }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { _ in
            .init(status: 302, headers: [("Location", "\(other.baseURL)/landing;key=AIzaSy-query-key?id=1&key=AIzaSy-query-key&access_token=AIzaSy-query-key")])
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)
        let request = ScriptedGate.withCredentials("\(origin.baseURL)/videos?id=1&key=AIzaSy-query-key")

        let answer = try await harness.gate.send(
            request, endpoint: "videos.list", options: GateRequestOptions(redirects: .stripCredentialsAcrossOrigins)
        )
        #expect(String(decoding: answer.body, as: UTF8.self) == "the other host's answer")
        #expect(answer.redirects.map(\.host) == ["127.0.0.2"])
        #expect(answer.unitsCharged == 1, "the hop to another origin is not the endpoint's call: charged nothing")
        #expect(answer.attempts == 2)
        let usage = try await harness.gate.quota.usage()
        #expect(usage.first { $0.endpoint == "redirect 127.0.0.2:\(other.port)" }.map { "\($0.units)/\($0.calls)" } == "0/1",
                "\(usage)")
        let received = try #require(other.requests.first)
        #expect(!received.carriesCredentials, "the other host got \(received.target) \(received.headers)")
        #expect(received.target == "/landing?id=1")
        #expect(origin.requests.first?.carriesCredentials == true, "the origin itself gets them")

        // The other host's answer is stored under its own URL, never under the origin's.
        let lookup = try await harness.gate.cache.lookup(request, endpoint: "videos.list")
        #expect(lookup.cachedResponse == nil)
        let again = try await harness.gate.send(
            request, endpoint: "videos.list", options: GateRequestOptions(redirects: .never)
        )
        #expect(again.status.code == 302)
        #expect(origin.requests.count == 2)
    }

    @Test("same-origin redirects are followed hop by hop through the gate, each charged, and loops end",
          arguments: TransportKind.allCases)
    func sameOriginFollowedAndBounded(kind: TransportKind) async throws {
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { request in
            switch request.target {
            case "/old": .init(status: 301, headers: [("Location", "/new")])
            case "/new": .init(headers: [("ETag", "\"n\"")], body: "new place; auth=\(request.header("Authorization") ?? "none")")
            default:
                // /hop/N sends on to /hop/N+1: a chain that never revisits a URL, ended by the limit.
                .init(status: 302, headers: [("Location", "/hop/\((Int(request.target.dropFirst(5)) ?? 0) + 1)")])
            }
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(kind)

        let moved = try await harness.gate.send(ScriptedGate.withCredentials("\(origin.baseURL)/old"), endpoint: "videos.list")
        #expect(moved.status.code == 200)
        #expect(String(decoding: moved.body, as: UTF8.self) == "new place; auth=Bearer ya29.secret-bearer-token-abcdef",
                "a same-origin hop keeps the caller's credentials")
        #expect(moved.redirects.map(\.path) == ["/new"])
        #expect(moved.unitsCharged == 2)
        #expect(moved.attempts == 2)

        let chain = try await harness.gate.send(HTTPRequest(url: URL(string: "\(origin.baseURL)/hop/0")!), endpoint: "videos.list")
        #expect(chain.status.code == 302, "past the limit the last redirect is returned")
        #expect(chain.redirects.count == RedirectPolicy.sameOrigin.maximumRedirects)
        #expect(origin.requests.filter { $0.target.hasPrefix("/hop/") }.count == RedirectPolicy.sameOrigin.maximumRedirects + 1)
    }

    @Test("a 303 after a POST becomes a GET without the body")
    func seeOtherBecomesGet() async throws {
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { request in
            request.target == "/submit"
                ? .init(status: 303, headers: [("Location", "/result")])
                : .init(body: "\(request.method) \(request.body.count)")
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient)
        var post = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: "/submit")
        post.headerFields[.contentType] = "application/json"
        let answer = try await harness.gate.send(post, body: Data("{\"a\":1}".utf8), endpoint: "videos.insert")
        #expect(String(decoding: answer.body, as: UTF8.self) == "GET 0")
    }

    @Test("a redirect that would carry the request's body to another origin is returned as it is, even when asked to follow")
    func bodyNeverCrossesOrigins() async throws {
        let other = try ScriptedHTTPServer(host: "127.0.0.2") { _ in .init(body: "collected") }
        defer { other.stop() }
        let origin = try ScriptedHTTPServer(host: "127.0.0.1") { _ in
            .init(status: 307, headers: [("Location", "\(other.baseURL)/token")])
        }
        defer { origin.stop() }
        let harness = try ScriptedGate(.asyncHTTPClient)
        var post = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1:\(origin.port)", path: "/token")
        post.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let answer = try await harness.gate.send(
            post, body: Data("grant_type=refresh_token&client_secret=s3cr3t-value".utf8), endpoint: "oauth.token",
            options: GateRequestOptions(redirects: .stripCredentialsAcrossOrigins)
        )
        #expect(answer.status.code == 307)
        #expect(other.requests.isEmpty)
    }
}
