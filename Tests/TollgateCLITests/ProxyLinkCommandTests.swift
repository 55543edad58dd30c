import Foundation
import Testing
import TollgateFakeAPI
import TollgateTestSupport

/// Issue 43's "done when", as a user meets it: GitHub's own Python SDK and `requests` through
/// `tollgate proxy --api github-rest` in front of a GitHub-like origin whose JSON and `Link` name
/// that origin, as GitHub's name https://api.github.com.
@Suite("Links that lead back through the gate: PyGithub and requests through tollgate proxy")
struct ProxyLinkCommandTests {
    /// Starts `tollgate proxy --api github-rest` in front of `github`; returns it with its base URL.
    private static func proxy(_ github: FakeGitHubAPI, database: String) throws -> (BackgroundCommand, String) {
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", github.baseURL.absoluteString, "--db", database,
            "--api", "github-rest",
        ])
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        return (proxy, String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") })))
    }

    private static func python(_ script: String, _ arguments: String...) async throws -> CommandResult {
        try await offPool {
            try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script] + arguments)
        }
    }

    /// Units the ledger charged to endpoints (not the server's announced numbers, kept on `*`).
    private static func unitsCharged(_ database: String) throws -> String {
        try CommandRunner.sqlite3(database, """
            SELECT endpoint || ' ' || SUM(units) FROM quota_usage WHERE endpoint <> '*' GROUP BY endpoint ORDER BY endpoint
            """).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("PyGithub: get_repo, get_issues() across two pages by Link, and search_issues, every request through the proxy and counted; with the origin's gzip too",
          arguments: [false, true])
    func pyGithub(gzips: Bool) async throws {
        guard CommandRunner.isInstalled("python3"), CommandRunner.isInstalled("sqlite3"),
              (try? CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import github"]).status) == 0
        else {
            Issue.record("python3 with PyGithub and sqlite3 are needed: .ci/run installs them")
            return
        }
        var behaviour = FakeGitHubBehaviour()
        // As api.github.com does whenever asked; `requests`, under PyGithub, always asks.
        behaviour.gzipsWhenAsked = gzips
        let github = try await FakeGitHubAPI.start(behaviour: behaviour)
        defer { Task { await github.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("github.sqlite")
        let (proxy, base) = try Self.proxy(github, database: database)

        let script = """
            import json, sys
            from github import Github
            gh = Github(base_url=sys.argv[1])
            repo = gh.get_repo("octocat/hello-world")
            issues = [issue.number for issue in repo.get_issues()]
            found = gh.search_issues("bug")
            titles = [issue.title for issue in found]
            print(json.dumps({"name": repo.full_name, "url": repo.url, "html_url": repo.html_url, "issues": issues,
                              "titles": titles}))
            """
        let result = try await Self.python(script, base)
        #expect(result.status == 0, "\(result.stderr)")
        struct Seen: Decodable {
            let name: String
            let url: String
            let html_url: String
            let issues: [Int]
            let titles: [String]
        }
        let seen = try JSONDecoder().decode(Seen.self, from: Data(result.stdout.utf8))
        #expect(seen.name == "octocat/hello-world")
        #expect(seen.url == "\(base)/repos/octocat/hello-world", "the repository's url names the proxy")
        #expect(seen.html_url == "https://github.com/octocat/hello-world", "another origin, as GitHub sent it")
        #expect(seen.issues == [1, 2, 3, 4], "both pages, the second by the Link's next")
        #expect(seen.titles == ["bug (revision 1)"])

        #expect(proxy.interrupt().status == 0)
        let received = github.receivedRequests
        #expect(received.map(\.path) == [
            "/repos/octocat/hello-world", "/repos/octocat/hello-world/issues", "/repos/octocat/hello-world/issues",
            "/search/issues",
        ])
        #expect(received.map(\.query).contains("page=2"), "\(received.map(\.target))")
        #expect(received.allSatisfy { $0.status == 200 && $0.counted })
        #expect(!gzips || received.allSatisfy { $0.headers["accept-encoding"]?.contains("gzip") == true },
                "the origin was asked for gzip, and so answered compressed")
        // Each one charged by the ledger: the repository and both pages in core, the search in search.
        #expect(try Self.unitsCharged(database) == "repos.get 1\nrepos.issues.list 2\nsearch.issues 1")
    }

    @Test("requests: r.links['next'] names the proxy and following it is charged; a stored page names localhost, then 127.0.0.1, as each client came")
    func requestsLinks() async throws {
        guard CommandRunner.isInstalled("python3"), CommandRunner.isInstalled("sqlite3") else {
            Issue.record("python3 with requests and sqlite3 are needed: .ci/run installs them")
            return
        }
        let github = try await FakeGitHubAPI.start()
        defer { Task { await github.stop() } }
        let directory = try TemporaryDirectory()
        let database = directory.path("github.sqlite")
        let (proxy, base) = try Self.proxy(github, database: database)
        let port = try #require(base.split(separator: ":").last.map(String.init))

        let script = """
            import json, sys, requests
            base, port = sys.argv[1], sys.argv[2]
            first = requests.get(base + "/repos/apple/swift/issues")
            following = first.links["next"]["url"]
            second = requests.get(following)
            local = requests.get("http://localhost:" + port + "/repos/apple/swift/issues")
            numeric = requests.get("http://127.0.0.1:" + port + "/repos/apple/swift/issues")
            print(json.dumps({
                "next": following, "units": second.headers["X-Tollgate-Units"], "source": second.headers["X-Tollgate-Source"],
                "numbers": [issue["number"] for issue in first.json() + second.json()],
                "local_next": local.links["next"]["url"], "local_url": local.json()[0]["url"], "local_source": local.headers["X-Tollgate-Source"],
                "numeric_next": numeric.links["next"]["url"], "numeric_url": numeric.json()[0]["url"],
                "html_url": numeric.json()[0]["html_url"], "etag": numeric.headers["ETag"],
                "revalidated": requests.get(base + "/repos/apple/swift/issues",
                                            headers={"If-None-Match": numeric.headers["ETag"]}).status_code,
            }))
            """
        let result = try await Self.python(script, base, port)
        #expect(result.status == 0, "\(result.stderr)")
        struct Seen: Decodable {
            let next: String
            let units: String
            let source: String
            let numbers: [Int]
            let local_next: String
            let local_url: String
            let local_source: String
            let numeric_next: String
            let numeric_url: String
            let html_url: String
            let etag: String
            let revalidated: Int
        }
        let seen = try JSONDecoder().decode(Seen.self, from: Data(result.stdout.utf8))
        #expect(seen.next == "\(base)/repos/apple/swift/issues?page=2")
        #expect(seen.units == "1", "the second page is charged")
        #expect(seen.source == "network")
        #expect(seen.numbers == [1, 2, 3, 4])
        // The first page, stored once, served under two names.
        #expect(seen.local_source == "cache")
        #expect(seen.local_next == "http://localhost:\(port)/repos/apple/swift/issues?page=2")
        #expect(seen.local_url == "http://localhost:\(port)/repos/apple/swift/issues/1")
        #expect(seen.numeric_next == "http://127.0.0.1:\(port)/repos/apple/swift/issues?page=2")
        #expect(seen.numeric_url == "http://127.0.0.1:\(port)/repos/apple/swift/issues/1")
        #expect(seen.html_url == "https://github.com/apple/swift/issues/1")
        #expect(seen.revalidated == 304, "the client's If-None-Match with the tag it was given")

        #expect(proxy.interrupt().status == 0)
        #expect(github.receivedRequests.map(\.target) == [
            "/repos/apple/swift/issues", "/repos/apple/swift/issues?page=2",
        ], "the client's 304 comes from the fresh page the proxy holds, unsent")
        #expect(try Self.unitsCharged(database) == "repos.issues.list 2", "both pages, and nothing for the client's 304")
    }
}
