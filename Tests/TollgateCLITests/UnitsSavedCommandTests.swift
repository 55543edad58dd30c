import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// Issue 39's "done when", as a user meets it: `tollgate proxy` charging a 304 what the API says it
/// costs, and a description's `fresh_for` answering without asking, checked with curl and sqlite3.
@Suite("Units saved for real: a 304's cost and fresh_for through the proxy")
struct UnitsSavedCommandTests {
    /// The shipped YouTube description, as a file a user would copy.
    private static var youTubeDescription: String {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            return try String(contentsOf: root.appending(path: "APIs/youtube-v3.yaml"), encoding: .utf8)
        }
    }

    @Test("YouTube: a 200 then a 304 for the same URL are charged 1 + 1 units, and quota_today agrees; on GitHub the 304 costs 0")
    func notModifiedCharged() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let directory = try TemporaryDirectory()
        let youtube = try await FakeYouTubeAPI.start()
        defer { Task { await youtube.stop() } }
        let database = directory.path("youtube.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", youtube.baseURL.absoluteString, "--db", database])
        let url = "\(base)/youtube/v3/videos?id=v1&part=snippet"
        let first = try await offPool { try CurlResponse.fetch(url) }
        #expect(first.headers["x-tollgate-units"] == "1")
        let second = try await offPool { try CurlResponse.fetch(url) }
        #expect(second.headers["x-tollgate-source"] == "revalidated")
        #expect(second.headers["x-tollgate-units"] == "1", "Google charges every request at least one unit")
        #expect(youtube.receivedRequests.map(\.status) == [200, 304])
        #expect(proxy.interrupt().status == 0)
        #expect(try CommandRunner.sqliteValue(database, "SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'") == "2|2")
        #expect(youtube.unitsUsed == 2, "what the fake YouTube counted")

        let github = try await FakeGitHubAPI.start()
        defer { Task { await github.stop() } }
        let githubDatabase = directory.path("github.sqlite")
        let (gitHubProxy, gitHubBase) = try BackgroundCommand.proxy(["--upstream", github.baseURL.absoluteString, "--db", githubDatabase,
                                                         "--api", "github-rest"])
        let repository = try await offPool { try CurlResponse.fetch("\(gitHubBase)/repos/apple/swift") }
        #expect(repository.headers["x-tollgate-units"] == "1")
        // GitHub's answers are fresh for a minute: the client asks for a revalidation.
        let again = try await offPool { try CurlResponse.fetch("\(gitHubBase)/repos/apple/swift", ["-H", "Cache-Control: no-cache"]) }
        #expect(again.headers["x-tollgate-source"] == "revalidated")
        #expect(again.headers["x-tollgate-units"] == "0", "GitHub does not count a 304")
        #expect(github.receivedRequests.map(\.status) == [200, 304])
        #expect(gitHubProxy.interrupt().status == 0)
        #expect(try CommandRunner.sqliteValue(githubDatabase, "SELECT SUM(units), SUM(calls) FROM quota_usage WHERE endpoint = 'repos.get'")
            == "1|2")
    }

    @Test("a description with fresh_for: 5m on videos.list: 20 GETs within a minute reach the origin once and cost 1 unit")
    func freshFor() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let directory = try TemporaryDirectory()
        let file = directory.path("youtube-fresh.yaml")
        let text = try Self.youTubeDescription
        #expect(text.contains("  videos.list: {cost: 1, batch: "))
        try text.replacingOccurrences(of: "  videos.list: {cost: 1, batch: ", with: "  videos.list: {cost: 1, fresh_for: 5m, batch: ")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let shown = try CommandRunner.tollgate("api", "show", "--api", file)
        #expect(shown.stdout.contains("videos.list: 1 in youtube, fresh for 300s"), "\(shown.stdout)")

        let youtube = try await FakeYouTubeAPI.start()
        defer { Task { await youtube.stop() } }
        let database = directory.path("fresh.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", youtube.baseURL.absoluteString, "--db", database, "--api", file])
        let url = "\(base)/youtube/v3/videos?id=v1&part=snippet"
        var sources: [String] = []
        for _ in 0..<20 {
            let answer = try await offPool { try CurlResponse.fetch(url) }
            #expect(answer.status == 200)
            sources.append(answer.headers["x-tollgate-source"] ?? "-")
            if answer.headers["x-tollgate-source"] == "fresh" {
                #expect(answer.headers["age"] != nil)
                #expect(answer.headers["x-tollgate-units"] == "0")
            }
        }
        #expect(sources == ["network"] + Array(repeating: "fresh", count: 19))
        #expect(youtube.receivedRequests.count == 1, "the origin's max-age=0, must-revalidate is not asked again")
        #expect(youtube.receivedRequests.first?.headers["cache-control"] == nil)
        #expect(proxy.interrupt().status == 0)
        #expect(try CommandRunner.sqliteValue(database, "SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'") == "1|1")
        let quota = try CommandRunner.tollgate("quota", "show", "--db", database, "--api", file)
        #expect(quota.stdout.contains("videos.list: fresh for 300 s now · fresh_for 300s · fixed"), "\(quota.stdout)")

        // Following the budget: at this rate the day lasts, so the minimum is in force, and why.
        let following = directory.path("youtube-budget.yaml")
        try text.replacingOccurrences(of: "  cost: 1\n", with: "  cost: 1\n  fresh_for: {min: 1m, max: 1h, follow_budget: true}\n")
            .write(toFile: following, atomically: true, encoding: .utf8)
        let budget = try CommandRunner.tollgate("quota", "show", "--db", database, "--api", following)
        #expect(budget.stdout.contains("every endpoint: fresh for 60 s now · fresh_for {min: 60s, max: 3600s, follow_budget: true} · follows youtube: the budget lasts at this rate"),
                "\(budget.stdout)\(budget.stderr)")
    }

    @Test("the freshness in force per endpoint and why: proxy --admin's /metrics and page, status and dashboard --web with --api")
    func freshnessShown() async throws {
        guard CommandRunner.curlAndSQLiteInstalled() else { return }
        let directory = try TemporaryDirectory()
        let file = directory.path("youtube-budget.yaml")
        let text = try Self.youTubeDescription
        try #require(text.contains("  videos.list: {cost: 1, batch: "), "the shipped line this test edits has changed")
        try text.replacingOccurrences(of: "  videos.list: {cost: 1, batch: ",
                                      with: "  videos.list: {cost: 1, fresh_for: {min: 1m, max: 1h, follow_budget: true}, batch: ")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let youtube = try await FakeYouTubeAPI.start()
        defer { Task { await youtube.stop() } }
        let database = directory.path("budget.sqlite")
        let (proxy, base) = try BackgroundCommand.proxy(["--upstream", youtube.baseURL.absoluteString, "--db", database,
                                                         "--api", file, "--admin", "127.0.0.1:0"])
        let admin = try AdminListenerCommandTests.adminURL(proxy.firstLine())
        let url = "\(base)/youtube/v3/videos?id=v1&part=snippet"
        #expect(try await offPool { try CurlResponse.fetch(url) }.headers["x-tollgate-source"] == "network")
        #expect(try await offPool { try CurlResponse.fetch(url) }.headers["x-tollgate-source"] == "fresh")
        let metrics = try PrometheusTextParser.parse(try await offPool { try CurlResponse.fetch("\(admin)/metrics") }.body)
        #expect(metrics.value("tollgate_freshness_seconds", ["endpoint": "videos.list", "bucket": "youtube", "reason": "budget_lasts"])
            == 60, "\(metrics.family("tollgate_freshness_seconds").map { "\($0)" } ?? "no freshness family")")
        let page = try await offPool { try CurlResponse.fetch("\(admin)/") }.body
        #expect(page.contains("Freshness in force (fresh_for)") && page.contains("by this gate at "), "\(page.suffix(3000))")
        #expect(proxy.interrupt().status == 0)

        let status = try CommandRunner.tollgate("status", "--db", database, "--api", file)
        #expect(status.stdout.contains("videos.list: fresh for 60 s · fresh_for {min: 60s, max: 3600s, follow_budget: true} · "
            + "follows youtube: the budget lasts at this rate (decided from the ledger now)"), "\(status.stdout)\(status.stderr)")
        let json = try CommandRunner.tollgate("status", "--json", "--db", database, "--api", file)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rows = try #require(object["freshness"] as? [[String: Any]], "\(json.stdout)")
        #expect(rows.first?["endpoint"] as? String == "videos.list")
        #expect(rows.first?["reason"] as? String == "budget_lasts")
        #expect(rows.first?["decided_by"] as? String == "ledger")
        #expect((rows.first?["lifetime_seconds"] as? NSNumber)?.doubleValue == 60)
        let plain = try CommandRunner.tollgate("status", "--json", "--db", database)
        #expect(!plain.stdout.contains("freshness"), "without --api nothing is known of the freshness")

        try await AdminListenerCommandTests.running(["dashboard", "--web", "127.0.0.1:0", "--db", database, "--api", file]) { command in
            let web = try AdminListenerCommandTests.adminURL(command.firstLine())
            let page = try await offPool { try CurlResponse.fetch("\(web)/") }.body
            #expect(page.contains("Freshness in force (fresh_for)") && page.contains("from the ledger now"))
            AdminListenerCommandTests.expectCleanInterrupt(command)
        }
    }

    @Test("api check reads the deprecated refund_not_modified and says what to write instead")
    func deprecatedKey() throws {
        let directory = try TemporaryDirectory()
        let file = directory.path("old.yaml")
        try """
        api: Old
        buckets:
          b: {limit: 100}
        defaults: {bucket: b, refund_not_modified: true}
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let checked = try CommandRunner.tollgate("api", "check", file)
        #expect(checked.status == 0)
        #expect(checked.stderr.contains("defaults.refund_not_modified is deprecated; write not_modified_cost: 0"), "\(checked.stderr)")
        let shown = try CommandRunner.tollgate("api", "show", "--api", file)
        #expect(shown.stdout.contains("a 304 is free"), "\(shown.stdout)")
    }
}
