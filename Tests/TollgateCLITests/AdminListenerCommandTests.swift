import Foundation
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// The operators' listener from the command line (issue 30): `tollgate serve-admin`, `tollgate proxy
/// --admin` and `tollgate dashboard --web`, each run as the built binary in the background and read
/// with real curl.
@Suite("tollgate serve-admin, proxy --admin and dashboard --web")
struct AdminListenerCommandTests {
    /// The base URL (no trailing slash) in the listener's line,
    /// `tollgate admin listening on http://127.0.0.1:PORT/ (dashboard; /metrics, /api/snapshot)`.
    static func adminURL(_ line: String?, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let line = try #require(line, "the command exited before listening", sourceLocation: sourceLocation)
        #expect(line.hasPrefix("tollgate admin listening on http://127.0.0.1:"), "\(line)", sourceLocation: sourceLocation)
        let address = try #require(line.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") },
                                   "\(line)", sourceLocation: sourceLocation)
        return String(address.hasSuffix("/") ? address.dropLast() : address)
    }

    /// Starts `tollgate` with `arguments` in the background and runs `body` with it; the command is
    /// stopped with Ctrl-C however `body` ends, so a failed `#require` leaks no process.
    static func running<Result>(
        _ arguments: [String], environment: [String: String] = [:], _ body: (BackgroundCommand) async throws -> Result
    ) async throws -> Result {
        let command = try BackgroundCommand(CommandRunner.tollgate, arguments, environment: environment)
        return try await withStopping(command, stop: { command in
            if command.process.isRunning { _ = command.signal(SIGINT, within: 10) }
        }, body)
    }

    /// Ctrl-C: the command must exit 0 within ten seconds.
    static func expectCleanInterrupt(_ command: BackgroundCommand, sourceLocation: SourceLocation = #_sourceLocation) {
        let (status, inTime, stderr) = command.signal(SIGINT, within: 10)
        #expect(inTime, "still running ten seconds after SIGINT", sourceLocation: sourceLocation)
        #expect(status == 0, "exit \(status): \(stderr)", sourceLocation: sourceLocation)
    }

    /// `RateLimit`/`RateLimit-Policy` as policy name → integer parameters.
    static func policies(_ field: String?) -> [String: [String: Int]] {
        var policies: [String: [String: Int]] = [:]
        for member in (field ?? "").split(separator: ",") {
            let parts = member.trimmingCharacters(in: .whitespaces).split(separator: ";")
            guard let name = parts.first, name.hasPrefix("\""), name.hasSuffix("\"") else { continue }
            var values: [String: Int] = [:]
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=")
                if pair.count == 2, let value = Int(pair[1]) { values[String(pair[0])] = value }
            }
            policies[String(name.dropFirst().dropLast())] = values
        }
        return policies
    }

    @Test("serve-admin prints its address; /metrics is Prometheus text with a bucket charged beforehand; /api/snapshot is JSON; Ctrl-C exits 0")
    func serveAdmin() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<3 { try await ledger.reserve(endpoint: "videos.list") }
        let eventsBefore = try fixture.value("SELECT COUNT(*) FROM quota_events")

        try await Self.running(["serve-admin", "--listen", "127.0.0.1:0", "--db", fixture.path]) { command in
            let base = try Self.adminURL(command.firstLine())

            let metrics = try await offPool { try CurlResponse.fetch("\(base)/metrics") }
            #expect(metrics.status == 200)
            #expect(metrics.headers["content-type"]?.hasPrefix("text/plain") == true, "\(metrics.headers)")
            #expect(metrics.body.contains("# HELP tollgate_quota_used_units "), "\(metrics.body)")
            #expect(metrics.body.contains("# TYPE tollgate_quota_used_units gauge"), "\(metrics.body)")
            let families = try PrometheusTextParser.parse(metrics.body)
            #expect(families.family("tollgate_quota_used_units")?.type == "gauge")
            #expect(families.family("tollgate_quota_used_units")?.documentation.isEmpty == false)
            #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube"]) == 3)
            #expect(families.value("tollgate_quota_remaining_units", ["bucket": "youtube"]) == 9_997)
            #expect(families.value("tollgate_quota_endpoint_used_units", ["bucket": "youtube", "endpoint": "videos.list"]) == 3)
            #expect(families.value("tollgate_store_up") == 1)
            // No gate runs in this process: none of a proxy's own request counters.
            #expect(families.value("tollgate_requests_total") == nil)

            let snapshot = try await offPool { try CurlResponse.fetch("\(base)/api/snapshot") }
            #expect(snapshot.status == 200)
            #expect(snapshot.headers["content-type"]?.hasPrefix("application/json") == true, "\(snapshot.headers)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(snapshot.body.utf8)) as? [String: Any],
                                    "\(snapshot.body)")
            let top = (json["top_endpoints"] as? [[String: Any]])?.map { "\($0["endpoint"] ?? "")=\($0["units"] ?? "")" }
            #expect(top == ["videos.list=3"], "\(snapshot.body)")
            let burn = try #require((json["burn"] as? [[String: Any]])?.first { $0["bucket"] as? String == "youtube" })
            #expect(burn["used"] as? Int == 3)
            #expect(burn["limit"] as? Int == 10_000)

            let missing = try await offPool { try CurlResponse.fetch("\(base)/nosuch") }
            #expect(missing.status == 404)

            Self.expectCleanInterrupt(command)
        }
        // The listener only reads: nothing was written to the database.
        #expect(try fixture.value("SELECT COUNT(*) FROM quota_events") == eventsBefore)
        #expect(try fixture.value("SELECT units, calls FROM quota_today WHERE endpoint = 'videos.list'") == "3|3")
    }

    @Test("proxy --admin: /metrics counts this process's requests by endpoint; RateLimit's r falls by the units two uncached requests charge")
    func proxyAdmin() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let fixture = try AdminFixture()
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            try await Self.running([
                "proxy", "--listen", "127.0.0.1:0", "--upstream", api.baseURL.absoluteString, "--db", fixture.path,
                "--admin", "127.0.0.1:0",
            ]) { command in
                let banner = try #require(command.firstLine(), "the proxy exited before listening")
                let proxyURL = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") },
                                                   "\(banner)"))
                let admin = try Self.adminURL(command.firstLine())

                let before = try PrometheusTextParser.parse(try await offPool { try CurlResponse.fetch("\(admin)/metrics") }.body)
                #expect(before.value("tollgate_requests_total", ["endpoint": "videos.list"]) ?? 0 == 0)

                var remaining: [Int] = []
                for id in ["v1", "v2"] {
                    let url = "\(proxyURL)/youtube/v3/videos?id=\(id)&part=snippet"
                    let answer = try await offPool { try CurlResponse.fetch(url) }
                    #expect(answer.status == 200)
                    #expect(answer.headers["x-tollgate-source"] == "network")
                    #expect(answer.headers["x-tollgate-units"] == "1")
                    let policy = Self.policies(answer.headers["ratelimit-policy"])
                    #expect(policy["youtube"]?["q"] == 10_000, "\(answer.headers)")
                    #expect(policy["youtube"]?["w"] == 86_400, "\(answer.headers)")
                    let limits = Self.policies(answer.headers["ratelimit"])
                    let r = try #require(limits["youtube"]?["r"], "\(answer.headers)")
                    let t = try #require(limits["youtube"]?["t"], "\(answer.headers)")
                    let untilReset = PacificDay(containing: Date()).nextReset.timeIntervalSinceNow
                    #expect(abs(Double(t) - untilReset) < 5, "t \(t), reset in \(untilReset)")
                    remaining.append(r)
                }
                // Each uncached request charged one unit.
                #expect(remaining == [9_999, 9_998])

                let metrics = try await offPool { try CurlResponse.fetch("\(admin)/metrics") }
                #expect(metrics.status == 200)
                let families = try PrometheusTextParser.parse(metrics.body)
                #expect(families.family("tollgate_requests")?.type == "counter", "\(metrics.body)")
                #expect(families.value("tollgate_requests_total", ["endpoint": "videos.list", "source": "network"]) == 2,
                        "\(metrics.body)")
                #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube"]) == 2)

                Self.expectCleanInterrupt(command)
            }
        }
    }

    @Test("a non-loopback listener without a token is refused with exit 64 and one tollgate: line, before anything opens",
          arguments: [
              (["serve-admin", "--listen", "0.0.0.0:9464"], "--listen 0.0.0.0:9464 is reachable from other machines"),
              (["dashboard", "--web", "192.168.1.20:9465"], "--web 192.168.1.20:9465 is reachable from other machines"),
              (["proxy", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:9", "--admin", "0.0.0.0:9464"],
               "--admin 0.0.0.0:9464 is reachable from other machines"),
          ])
    func nonLoopbackWithoutToken(arguments: [String], message: String) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("refused.sqlite")
        // An empty TOLLGATE_ADMIN_TOKEN is no token.
        let result = try CommandRunner.run(CommandRunner.tollgate, arguments + ["--db", path],
                                           environment: ["TOLLGATE_ADMIN_TOKEN": ""])
        #expect(result.status == 64, "\(result.stderr)")
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("tollgate: ") }, "\(result.stderr)")
        #expect(line.contains(message), "\(line)")
        #expect(line.contains("--admin-token or TOLLGATE_ADMIN_TOKEN"), "\(line)")
        #expect(!FileManager.default.fileExists(atPath: path), "the database was opened")
    }

    @Test("with TOLLGATE_ADMIN_TOKEN (or --admin-token) every request must carry it: 401 without or with a wrong one, 200 with it",
          arguments: [
              (["serve-admin", "--listen", "127.0.0.1:0"], ["TOLLGATE_ADMIN_TOKEN": "s3cret-token"]),
              (["dashboard", "--web", "127.0.0.1:0", "--admin-token", "s3cret-token"], [:]),
          ])
    func tokenEnforced(arguments: [String], environment: [String: String]) async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let fixture = try AdminFixture()
        try await fixture.ledger.reserve(endpoint: "videos.list")
        try await Self.running(arguments + ["--db", fixture.path], environment: environment) { command in
            let base = try Self.adminURL(command.firstLine())
            for path in ["/metrics", "/api/snapshot", "/"] {
                let bare = try await offPool { try CurlResponse.fetch("\(base)\(path)") }
                #expect(bare.status == 401, "\(path): \(bare.status) \(bare.body)")
                #expect(bare.body.contains("A token is required"), "\(path): \(bare.body)")
                let wrong = try await offPool { try CurlResponse.fetch("\(base)\(path)", ["-H", "Authorization: Bearer s3cret"]) }
                #expect(wrong.status == 401, "\(path): \(wrong.status)")
                let bearer = try await offPool {
                    try CurlResponse.fetch("\(base)\(path)", ["-H", "Authorization: Bearer s3cret-token"])
                }
                #expect(bearer.status == 200, "\(path): \(bearer.status) \(bearer.body)")
                let query = try await offPool { try CurlResponse.fetch("\(base)\(path)?token=s3cret-token") }
                #expect(query.status == 200, "\(path): \(query.status) \(query.body)")
            }
            let metrics = try await offPool {
                try CurlResponse.fetch("\(base)/metrics", ["-H", "Authorization: Bearer s3cret-token"])
            }
            #expect(try PrometheusTextParser.parse(metrics.body).value("tollgate_quota_used_units", ["bucket": "youtube"]) == 1)
            Self.expectCleanInterrupt(command)
        }
    }

    @Test("dashboard --web serves the web dashboard: GET / is HTML with SVG charts of the database's buckets")
    func dashboardWeb() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let fixture = try AdminFixture()
        let ledger = try fixture.ledger
        for _ in 0..<5 { try await ledger.reserve(endpoint: "videos.list") }
        try await Self.running(["dashboard", "--web", "127.0.0.1:0", "--db", fixture.path]) { command in
            let base = try Self.adminURL(command.firstLine())
            let page = try await offPool { try CurlResponse.fetch("\(base)/") }
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true, "\(page.headers)")
            #expect(page.body.lowercased().hasPrefix("<!doctype html"), "\(page.body.prefix(200))")
            #expect(page.body.contains("<svg"), "\(page.body.prefix(2000))")
            #expect(page.body.contains("youtube"))
            #expect(page.body.contains("videos.list"))
            // Self-contained: nothing fetched from elsewhere.
            for reference in ["src=\"http", "href=\"http", "@import", "url(http"] {
                #expect(!page.body.contains(reference), "the page loads \(reference)…")
            }

            let metrics = try await offPool { try CurlResponse.fetch("\(base)/metrics") }
            #expect(metrics.status == 200)
            Self.expectCleanInterrupt(command)
        }
    }
}
