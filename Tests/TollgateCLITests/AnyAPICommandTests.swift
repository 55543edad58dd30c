import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// Issue 32's "done when", as a user meets it: `tollgate proxy --api` in front of APIs that are not
/// YouTube, from the shipped description files alone, checked with curl and sqlite3.
@Suite("Any API without Swift: GitHub, an LLM API and a tiered app backend through the proxy")
struct AnyAPICommandTests {
    @Test("GitHub: a 304 GitHub does not count says in RateLimit what GitHub says is left, not one more")
    func gitHubRevalidated() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let github = try await FakeGitHubAPI.start()
        defer { Task { await github.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("github.sqlite")
        let (proxy, base) = try Self.proxy(for: github, database: database)
        #expect(try await offPool { try CurlResponse.fetch("\(base)/repos/apple/swift") }.status == 200)
        github.consume(resource: "core", requests: 100)
        // The client's no-cache makes the gate revalidate what it holds: GitHub's 304, uncounted.
        let revalidated = try await offPool { try CurlResponse.fetch("\(base)/repos/apple/swift", ["-H", "Cache-Control: no-cache"]) }
        #expect(revalidated.status == 200)
        #expect(revalidated.headers["x-tollgate-source"] == "revalidated")
        let announced = try #require(revalidated.headers["x-ratelimit-remaining"].flatMap(Int.init))
        if let age = revalidated.headers["age"].flatMap(Int.init), age > 0 {
            // A slow machine: an answer that is a second old carries no RateLimit (its clients ignore it).
            #expect(revalidated.headers["ratelimit"] == nil)
        } else {
            #expect(AdminListenerCommandTests.policies(revalidated.headers["ratelimit"])["core"]?["r"] == announced,
                    "\(revalidated.headers["ratelimit"] ?? "none") against X-RateLimit-Remaining: \(announced)")
        }
        #expect(proxy.interrupt().status == 0)
        #expect(try CommandRunner.sqliteValue(database, "SELECT remaining FROM quota_windows WHERE bucket = 'core'") == String(announced))
    }

    @Test("GitHub: named by the routes, charged in core and search, following X-RateLimit-Remaining down, paced, and a second proxy sees the same window")
    func gitHub() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let github = try await FakeGitHubAPI.start()
        defer { Task { await github.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("github.sqlite")
        let (first, base) = try Self.proxy(for: github, database: database)

        let repository = try await offPool { try CurlResponse.fetch("\(base)/repos/apple/swift") }
        #expect(repository.status == 200)
        #expect(repository.headers["x-tollgate-endpoint"] == "repos.get")
        // The first answer of GitHub's hour already describes that hour: RateLimit's t counts to
        // GitHub's X-RateLimit-Reset (an hour after this first request), not to the next :00.
        let firstReset = try #require(repository.headers["x-ratelimit-reset"].flatMap(TimeInterval.init))
        let firstSeconds = try #require(AdminListenerCommandTests.policies(repository.headers["ratelimit"])["core"]?["t"])
        #expect(abs(Date().addingTimeInterval(TimeInterval(firstSeconds)).timeIntervalSince1970 - firstReset) < 5,
                "t=\(firstSeconds) against a reset at \(firstReset)")
        let search = try await offPool { try CurlResponse.fetch("\(base)/search/issues?q=bug") }
        #expect(search.headers["x-tollgate-endpoint"] == "search.issues")
        #expect(github.remaining(of: "search") == 29)

        // Another client of the same token spends most of the hour: GitHub says 598 are left
        // after the next answer, and the ledger follows it down.
        github.consume(resource: "core", requests: 4_400)
        let followed = try await offPool { try CurlResponse.fetch("\(base)/users/octocat") }
        #expect(followed.status == 200)
        #expect(github.remaining(of: "core") == 598)
        #expect(AdminListenerCommandTests.policies(followed.headers["ratelimit"])["core"]?["r"] == 598,
                "the answer that said 598 are left says so itself")
        #expect(try CommandRunner.sqliteValue(database, "SELECT units FROM quota_events WHERE kind = 'announced' AND bucket = 'core'") == "4400")

        // 598 left, 500 kept back, an hour to go: well below an even share, so requests are spread
        // out — one goes, the next is told when its slot comes.
        let paced = try await offPool { try CurlResponse.fetch("\(base)/users/mona") }
        #expect(paced.status == 200)
        let waiting = try await offPool { try CurlResponse.fetch("\(base)/users/hubot") }
        #expect(waiting.status == 429, "\(waiting.headers)")
        let retryAfter = try #require(waiting.headers["retry-after"].flatMap(Int.init))
        #expect((20...60).contains(retryAfter), "one slot in about 3,600 s ÷ 97 units, not \(retryAfter) s")
        let sentBefore = github.receivedRequests.count

        // A second proxy on the same file is in the same window, paced the same way.
        let (second, secondBase) = try Self.proxy(for: github, database: database)
        let alsoWaiting = try await offPool { try CurlResponse.fetch("\(secondBase)/users/torvalds") }
        #expect(alsoWaiting.status == 429)
        #expect(github.receivedRequests.count == sentBefore, "a paced request is not sent")
        #expect(first.interrupt().status == 0)
        #expect(second.interrupt().status == 0)

        // quota show: the hour GitHub counts, ending at GitHub's own reset.
        let reset = try #require(github.reset(of: "core"))
        let shown = try CommandRunner.tollgate("quota", "show", "--db", database, "--api", "github-rest")
        #expect(shown.stdout.contains("core: 4,403/5,000 units used · 597 left"), "\(shown.stdout)")
        #expect(shown.stdout.contains("resets \(Self.instant(reset))"), "\(shown.stdout)")
        #expect(shown.stdout.contains("search: 1/30 units used · 29 left"), "\(shown.stdout)")
        #expect(try CommandRunner.sqliteValue(database, "SELECT window || ' ' || units || ' ' || remaining FROM quota_windows WHERE bucket = 'core'")
            == "hour 4403 597")
        // The status dashboard and its JSON show the hour too, not the Pacific day.
        let status = try CommandRunner.tollgate("status", "--db", database)
        #expect(status.stdout.contains("4,403/5,000 · 597 left per hour · resets in"), "\(status.stdout)")
        #expect(try CommandRunner.totalsDifferingFromEvents(database) == "0")
    }

    @Test("GitHub's 403 with X-RateLimit-Remaining: 0 closes core until GitHub's own reset: the next request is refused unsent")
    func gitHubSpent() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let github = try await FakeGitHubAPI.start()
        defer { Task { await github.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("github.sqlite")
        let (proxy, base) = try Self.proxy(for: github, database: database)
        #expect(try await offPool { try CurlResponse.fetch("\(base)/repos/apple/swift") }.status == 200)
        // Another client of the token spends the rest of the hour.
        github.consume(resource: "core", requests: 5_000)
        // GitHub's own answer reaches the client, as PyGithub expects it (no retry); the bucket closes.
        let spent = try await offPool { try CurlResponse.fetch("\(base)/users/octocat") }
        #expect(spent.status == 403, "GitHub's answer, not a retry: \(spent.headers)")
        #expect(spent.headers["x-tollgate-source"] == "network")
        #expect(spent.body.contains("API rate limit exceeded"), "\(spent.body)")
        let sent = github.receivedRequests.count
        let refused = try await offPool { try CurlResponse.fetch("\(base)/users/mona") }
        #expect(refused.status == 429)
        #expect(github.receivedRequests.count == sent, "a closed bucket sends nothing")
        // But /rate_limit, which GitHub does not count, still goes: it is how a client learns when it may go on.
        let rateLimit = try await offPool { try CurlResponse.fetch("\(base)/rate_limit") }
        #expect(rateLimit.status == 200, "\(rateLimit.body)")
        #expect(rateLimit.headers["x-tollgate-units"] == "0")
        #expect(github.receivedRequests.count == sent + 1)
        let reset = try #require(github.reset(of: "core"))
        let retryAfter = try #require(refused.headers["retry-after"].flatMap(Double.init))
        #expect(abs(Date().addingTimeInterval(retryAfter).timeIntervalSince(reset)) < 5, "until GitHub's reset, not :00")
        #expect(proxy.interrupt().status == 0)
        #expect(try CommandRunner.sqliteValue(database, "SELECT COUNT(*) FROM quota_events WHERE kind = 'exhausted' AND bucket = 'core'") == "1")
        #expect(try CommandRunner.sqliteValue(database, "SELECT exhausted || ' ' || remaining FROM quota_windows WHERE bucket = 'core'") == "1 0")
    }

    @Test("The openai SDK reads the proxy's own refusal as a RateLimitError whose code and message are the proxy's")
    func openAIReadsTheRefusal() async throws {
        guard CommandRunner.curlAndSQLiteInstalled(), CommandRunner.isInstalled("python3") else { return }
        guard (try? CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import openai"]))?.status == 0 else {
            Issue.record("the OpenAI Python SDK is needed (pip install openai): .ci/run installs it")
            return
        }
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(requestsPerMinute: 500, tokensPerMinute: 30_000))
        defer { Task { await llm.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("llm.sqlite")
        #expect(try CommandRunner.tollgate("quota", "set-limit", "requests", "0", "--db", database, "--api", "openai-chat").status == 0)
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", llm.baseURL.absoluteString, "--db", database, "--api", "openai-chat"])
        let client = """
            import sys
            from openai import OpenAI, RateLimitError
            client = OpenAI(base_url=sys.argv[1] + "/v1", api_key="sk-test", max_retries=0)
            try:
                client.chat.completions.create(model="fake-1", messages=[{"role": "user", "content": "hi"}])
                print("answered")
            except RateLimitError as error:
                print(error.code)
                print(error.message)
            """
        let result = try await offPool {
            try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", client, base])
        }
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "quota_exceeded", "\(result.stdout)")
        #expect(lines.dropFirst().first?.contains("API quota exceeded: chat.completions costs 1 unit") == true,
                "the proxy's own sentence: \(result.stdout)")
        #expect(llm.totalTokensBilled == 0, "refused before it was sent")
        #expect(proxy.interrupt().status == 0)
    }

    @Test("An LLM API that bills tokens in its body: each answer is billed its actual tokens, and the totals equal the events")
    func llmTokens() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        // The server's limits are the description's, so what it announces never runs below the ledger.
        let llm = try await FakeLLMAPI.start(behaviour: FakeLLMBehaviour(requestsPerMinute: 500, tokensPerMinute: 30_000))
        defer { Task { await llm.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("llm.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", llm.baseURL.absoluteString, "--db", database, "--api", "openai-chat"])
        let prompts = ["Say hello", "Write a haiku about quotas and ledgers", "One"]
        var expected = 0
        for prompt in prompts {
            let body = #"{"model":"fake-1","messages":[{"role":"user","content":"\#(prompt)"}]}"#
            let answer = try await offPool {
                try CurlResponse.fetch("\(base)/v1/chat/completions",
                                       ["-X", "POST", "-H", "Content-Type: application/json", "--data", body])
            }
            #expect(answer.status == 200, "\(answer.body)")
            #expect(answer.headers["x-tollgate-endpoint"] == "chat.completions")
            expected += llm.usage(messages: [prompt], maxTokens: nil).totalTokens
        }
        #expect(proxy.interrupt().status == 0)
        #expect(llm.totalTokensBilled == expected)
        #expect(try CommandRunner.sqliteValue(database, "SELECT SUM(units) FROM quota_usage WHERE bucket = 'tokens' AND endpoint = 'chat.completions'")
            == "\(expected)")
        #expect(try CommandRunner.sqliteValue(database, "SELECT SUM(units) FROM quota_usage WHERE bucket = 'requests' AND endpoint <> '*'") == "3",
                // Across a minute's end the fake's sliding count can announce less than the ledger's new
                // minute: an 'announced' event on '*', which the ledger rightly keeps.
                "\((try? CommandRunner.sqliteValue(database, "SELECT kind, bucket, endpoint, units, detail FROM quota_events")) ?? "")")
        #expect(try CommandRunner.sqliteValue(database, "SELECT COUNT(*) FROM quota_events WHERE kind = 'settle'") == "3")
        #expect(try CommandRunner.totalsDifferingFromEvents(database) == "0")
    }

    @Test("The tiered app backend from its shipped file alone: throttles 10/20/30 a minute and an hourly bucket, in throttle show and quota show")
    func tieredBackend() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let origin = try ScriptedHTTPServer { _ in .init(status: 200, headers: [(name: "Cache-Control", value: "no-store")], body: "[]") }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        let database = directory.path("backend.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", origin.baseURL, "--db", database, "--api", "tiered-backend"])
        for path in ["/api/activities", "/api/activities", "/api/streams/7", "/api/profile"] {
            let answer = try await offPool { try CurlResponse.fetch("\(base)\(path)") }
            #expect(answer.status == 200)
        }
        let (status, stderr) = proxy.interrupt()
        #expect(status == 0)
        // The file's defaults cover what it does not list: no warning that the table is incomplete.
        #expect(!stderr.contains("not in the quota cost table"), "\(stderr)")

        let throttles = try CommandRunner.tollgate("throttle", "show", "--db", database)
        #expect(throttles.stdout.contains("activities: 2/10 in the last 60s · 8 left"), "\(throttles.stdout)")
        #expect(throttles.stdout.contains("streams: 1/20 in the last 60s · 19 left"), "\(throttles.stdout)")
        #expect(throttles.stdout.contains("GET /api/profile: 1/30 in the last 60s · 29 left"), "\(throttles.stdout)")
        let quota = try CommandRunner.tollgate("quota", "show", "--db", database, "--api", "tiered-backend")
        #expect(quota.stdout.contains("server: 4/100 units used · 96 left · limit from configuration · per hour"), "\(quota.stdout)")
        #expect(try CommandRunner.sqliteValue(database, "SELECT window || ' ' || units FROM quota_windows") == "hour 4")
        // A higher tier, as the file's comment says.
        let raised = try CommandRunner.tollgate("quota", "set-limit", "server", "300", "--db", database, "--api", "tiered-backend")
        #expect(raised.stdout.contains("server: limit per hour 300 (admin); 4 used, 296 left in this window"), "\(raised.stdout)\(raised.stderr)")
    }


    /// `tollgate proxy --api github-rest` in front of the fake GitHub, on `database`.
    private static func proxy(for github: FakeGitHubAPI, database: String) throws -> (BackgroundCommand, String) {
        try BackgroundCommand.proxy(["--upstream", github.baseURL.absoluteString, "--db", database, "--api", "github-rest"])
    }

    private static func instant(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
