import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// The fake GitHub REST API over real loopback HTTP: per-resource windows announced in
/// `X-RateLimit-*`, 304s that count against nothing, 403 at zero, and the test hooks.
@Suite("FakeGitHubAPI rate-limits like GitHub's REST API")
struct FakeGitHubAPITests {
    /// Half a second past a whole second, so that the window's start at the whole second shows.
    static let start = Date(timeIntervalSince1970: 1_800_000_000.5)
    static let startSecond = 1_800_000_000

    /// Runs `body` with a fake on a manual clock at ``start``, stopping it whatever happens.
    private func withGitHub(
        _ behaviour: FakeGitHubBehaviour = FakeGitHubBehaviour(coreLimit: 10, searchLimit: 3),
        _ body: (FakeGitHubAPI, ManualClock) async throws -> Void
    ) async throws {
        let clock = ManualClock(now: Self.start)
        let api = try await FakeGitHubAPI.start(behaviour: behaviour, now: { clock.now() })
        try await withStopping(api, stop: { await $0.stop() }) { api in
            try await body(api, clock)
        }
    }

    private func get(
        _ api: FakeGitHubAPI, _ path: String, _ query: KeyValuePairs<String, String> = [:], headers: [String: String] = [:]
    ) async throws -> LoopbackHTTP.Answer {
        try await LoopbackHTTP.send(api.url(path, query), headers: headers)
    }

    @Test("core routes count down one resource whose window resets an hour after the first request's whole second")
    func coreHeaders() async throws {
        try await withGitHub { api, clock in
            let repository = try await get(api, "/repos/octocat/hello-world")
            #expect(repository.status == 200)
            #expect(repository.header("X-RateLimit-Limit") == "10")
            #expect(repository.header("X-RateLimit-Remaining") == "9")
            #expect(repository.header("X-RateLimit-Used") == "1")
            #expect(repository.integer("X-RateLimit-Reset") == Self.startSecond + 3_600)
            #expect(repository.header("X-RateLimit-Resource") == "core")
            #expect(repository.json?["full_name"] as? String == "octocat/hello-world")
            #expect(repository.header("Cache-Control") == "private, max-age=60, s-maxage=60")

            clock.advance(by: .seconds(100))
            let user = try await get(api, "/users/octocat")
            #expect(user.status == 200)
            #expect(user.json?["login"] as? String == "octocat")
            #expect(user.header("X-RateLimit-Remaining") == "8")
            #expect(user.integer("X-RateLimit-Reset") == Self.startSecond + 3_600, "the window does not move")

            let issues = try await get(api, "/repos/octocat/hello-world/issues")
            #expect(issues.status == 200)
            let list = try #require(try JSONSerialization.jsonObject(with: issues.body) as? [[String: Any]])
            #expect(list.count == 2)
            #expect(issues.header("X-RateLimit-Remaining") == "7")
            #expect(issues.header("X-RateLimit-Used") == "3")

            #expect(api.remaining(of: "core") == 7)
            #expect(api.used(of: "core") == 3)
            #expect(api.remaining(of: "search") == 3, "core requests leave search alone")
            #expect(api.remaining(of: "graphql") == nil)
            #expect(api.receivedRequests.map(\.target) == [
                "/repos/octocat/hello-world", "/users/octocat", "/repos/octocat/hello-world/issues",
            ])
            #expect(api.receivedRequests.allSatisfy { $0.counted && $0.resource == "core" })
        }
    }

    @Test("search has a limit and a one-minute window of its own, and a search without q is a counted 422")
    func searchResource() async throws {
        try await withGitHub { api, clock in
            let repositories = try await get(api, "/search/repositories", ["q": "tetris language:swift"])
            #expect(repositories.status == 200)
            #expect(repositories.header("X-RateLimit-Resource") == "search")
            #expect(repositories.header("X-RateLimit-Limit") == "3")
            #expect(repositories.header("X-RateLimit-Remaining") == "2")
            #expect(repositories.integer("X-RateLimit-Reset") == Self.startSecond + 60)
            #expect(repositories.json?["total_count"] as? Int == 1)

            clock.advance(by: .seconds(10))
            let issues = try await get(api, "/search/issues", ["q": "is:open"])
            #expect(issues.status == 200)
            #expect(issues.header("X-RateLimit-Remaining") == "1")
            #expect(issues.integer("X-RateLimit-Reset") == Self.startSecond + 60)

            let missing = try await get(api, "/search/issues")
            #expect(missing.status == 422)
            #expect(missing.json?["message"] as? String == "Validation Failed")
            #expect(missing.header("X-RateLimit-Remaining") == "0")

            let refused = try await get(api, "/search/repositories", ["q": "swift"])
            #expect(refused.status == 403)
            #expect(refused.header("X-RateLimit-Resource") == "search")
            #expect(api.remaining(of: "core") == 10, "searches leave core alone")
            #expect(api.receivedRequests.map(\.resource) == ["search", "search", "search", "search"])
        }
    }

    @Test("at zero: 403 with GitHub's body, remaining 0 and the reset; the refused request counts against nothing")
    func exhausted() async throws {
        try await withGitHub(FakeGitHubBehaviour(coreLimit: 2)) { api, _ in
            let first = try await get(api, "/repos/octocat/hello-world")
            _ = try await get(api, "/users/octocat")
            let refused = try await get(api, "/repos/octocat/hello-world")
            #expect(refused.status == 403)
            let message = try #require(refused.json?["message"] as? String)
            #expect(message.hasPrefix("API rate limit exceeded for 127.0.0.1."))
            #expect(refused.json?["documentation_url"] as? String
                == "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting")
            #expect(refused.header("X-RateLimit-Remaining") == "0")
            #expect(refused.header("X-RateLimit-Used") == "2")
            #expect(refused.integer("X-RateLimit-Reset") == Self.startSecond + 3_600)
            #expect(refused.header("X-RateLimit-Resource") == "core")

            // The limit comes before the validators: a conditional request is refused too.
            let etag = try #require(first.header("ETag"))
            let conditional = try await get(api, "/repos/octocat/hello-world", headers: ["If-None-Match": etag])
            #expect(conditional.status == 403)
            #expect(api.receivedRequests.map(\.counted) == [true, true, false, false])
            #expect(api.used(of: "core") == 2)
        }
    }

    @Test("with the 429 setting, a spent resource answers 429 instead of 403")
    func tooManyRequestsSetting() async throws {
        try await withGitHub(FakeGitHubBehaviour(coreLimit: 1, exceededStatus: 429)) { api, _ in
            #expect(try await get(api, "/users/octocat").status == 200)
            let refused = try await get(api, "/users/octocat")
            #expect(refused.status == 429)
            #expect(refused.header("X-RateLimit-Remaining") == "0")
        }
    }

    @Test("when the injected clock reaches X-RateLimit-Reset the count starts again, with a new window")
    func windowReset() async throws {
        try await withGitHub(FakeGitHubBehaviour(coreLimit: 2)) { api, clock in
            _ = try await get(api, "/users/a")
            _ = try await get(api, "/users/b")
            let spent = try await get(api, "/users/c")
            #expect(spent.status == 403)
            let reset = try #require(spent.integer("X-RateLimit-Reset"))
            #expect(reset == Self.startSecond + 3_600)

            clock.set(to: Date(timeIntervalSince1970: TimeInterval(reset - 1)))
            #expect(try await get(api, "/users/c").status == 403, "a second before the reset, still spent")
            #expect(api.remaining(of: "core") == 0)

            clock.set(to: Date(timeIntervalSince1970: TimeInterval(reset) + 0.25))
            #expect(api.remaining(of: "core") == 2)
            let again = try await get(api, "/users/c")
            #expect(again.status == 200)
            #expect(again.header("X-RateLimit-Remaining") == "1")
            #expect(again.header("X-RateLimit-Used") == "1")
            #expect(again.integer("X-RateLimit-Reset") == reset + 3_600, "the new window starts at this request")
        }
    }

    @Test("a matching If-None-Match gets a 304 that counts against nothing, until the resource changes")
    func notModifiedIsFree() async throws {
        try await withGitHub { api, _ in
            let first = try await get(api, "/repos/octocat/hello-world")
            let etag = try #require(first.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count > 2, "a strong entity tag")
            #expect(first.header("X-RateLimit-Remaining") == "9")
            let other = try await get(api, "/repos/octocat/other")
            #expect(other.header("ETag") != etag, "the tag follows the content")

            let revalidated = try await get(api, "/repos/octocat/hello-world", headers: ["If-None-Match": etag])
            #expect(revalidated.status == 304)
            #expect(revalidated.body.isEmpty)
            #expect(revalidated.header("ETag") == etag)
            #expect(revalidated.header("X-RateLimit-Remaining") == "8", "the current numbers, not one fewer")
            #expect(revalidated.header("X-RateLimit-Used") == "2")
            #expect(api.remaining(of: "core") == 8)
            let logged = try #require(api.receivedRequests.last)
            #expect(logged.ifNoneMatch == etag)
            #expect(logged.status == 304 && !logged.counted)

            api.modify(path: "/repos/octocat/hello-world")
            let changed = try await get(api, "/repos/octocat/hello-world", headers: ["If-None-Match": etag])
            #expect(changed.status == 200)
            #expect(changed.header("ETag") != etag)
            #expect(changed.body != first.body)
            #expect(changed.header("X-RateLimit-Remaining") == "7")
        }
    }

    @Test("modify(path:) with a query changes that search's tag only")
    func modifySearch() async throws {
        try await withGitHub(FakeGitHubBehaviour(searchLimit: 10)) { api, _ in
            let bug = try await get(api, "/search/issues", ["q": "bug"])
            let feature = try await get(api, "/search/issues", ["q": "feature"])
            let bugTag = try #require(bug.header("ETag"))
            let featureTag = try #require(feature.header("ETag"))
            api.modify(path: "/search/issues?q=bug")
            #expect(try await get(api, "/search/issues", ["q": "bug"], headers: ["If-None-Match": bugTag]).status == 200)
            #expect(try await get(api, "/search/issues", ["q": "feature"], headers: ["If-None-Match": featureTag]).status == 304)
            #expect(api.remaining(of: "search") == 7, "two searches, the changed one again, and a free 304")
        }
    }

    @Test("consume spends a resource as another client on the same token would, starting the window and stopping at zero")
    func consumeHook() async throws {
        try await withGitHub { api, clock in
            api.consume(resource: "core", requests: 4)
            #expect(api.remaining(of: "core") == 6)
            clock.advance(by: .seconds(30))
            let answer = try await get(api, "/users/octocat")
            #expect(answer.header("X-RateLimit-Remaining") == "5")
            #expect(answer.header("X-RateLimit-Used") == "5")
            #expect(answer.integer("X-RateLimit-Reset") == Self.startSecond + 3_600, "the window began with the other client")

            api.consume(resource: "search", requests: 1)
            #expect(api.remaining(of: "search") == 2)
            api.consume(resource: "graphql", requests: 5)
            #expect(api.remaining(of: "core") == 5, "an unknown resource changes nothing")

            api.consume(resource: "core", requests: 100)
            #expect(api.remaining(of: "core") == 0)
            #expect(api.used(of: "core") == 10, "the count stops at the limit")
            let refused = try await get(api, "/users/octocat")
            #expect(refused.status == 403)
            #expect(api.receivedRequests.count == 2, "consume sends nothing over the wire")
        }
    }

    @Test("/rate_limit lists every resource and counts against nothing")
    func rateLimitEndpoint() async throws {
        try await withGitHub { api, _ in
            _ = try await get(api, "/users/octocat")
            _ = try await get(api, "/search/issues", ["q": "bug"])
            _ = try await get(api, "/search/issues", ["q": "feature"])
            let answer = try await get(api, "/rate_limit")
            #expect(answer.status == 200)
            let resources = try #require(answer.json?["resources"] as? [String: [String: Int]])
            #expect(resources["core"] == ["limit": 10, "used": 1, "remaining": 9, "reset": Self.startSecond + 3_600])
            #expect(resources["search"] == ["limit": 3, "used": 2, "remaining": 1, "reset": Self.startSecond + 60])
            #expect(answer.json?["rate"] as? [String: Int] == resources["core"])
            #expect(answer.header("X-RateLimit-Resource") == "core")
            #expect(answer.header("X-RateLimit-Remaining") == "9")
            _ = try await get(api, "/rate_limit")
            #expect(api.remaining(of: "core") == 9)
            #expect(api.receivedRequests.suffix(2).allSatisfy { !$0.counted })
        }
    }

    @Test("anything else is a 404 Not Found that counts against core, any method included")
    func notFoundCounts() async throws {
        try await withGitHub { api, _ in
            let missing = try await get(api, "/nothing/here")
            #expect(missing.status == 404)
            #expect(missing.json?["message"] as? String == "Not Found")
            #expect(missing.header("X-RateLimit-Remaining") == "9")
            let posted = try await LoopbackHTTP.send(api.url("/repos/octocat/hello-world"), method: "POST", body: Data("{}".utf8))
            #expect(posted.status == 404)
            #expect(posted.header("X-RateLimit-Remaining") == "8")
            #expect(api.remaining(of: "core") == 8)
        }
    }
}
