import Foundation
import Testing
import TollgateTestSupport

@Suite("tollgate api, and --api on proxy, get and quota show")
struct APIDescriptionCommandTests {
    static let backend = """
        # An app's backend with tiers: per-endpoint throttles under one budget.
        api: Tiered app backend
        buckets:
          server: {limit: 300, window: day}
        defaults:
          bucket: server
          throttle: {requests: 30, per: 60s}
        routes:
          - {method: GET, path: /api/activities, endpoint: activities}
          - {method: GET, path: "/api/streams/{id}", endpoint: streams}
        endpoints:
          activities: {throttle: {requests: 10, per: 60s}}
          streams: {throttle: {requests: 20, per: 60s}, cost: 2}
        """

    @Test("api check says valid or names the file, line and key, exit 64; api show prints the one in force")
    func checkAndShow() throws {
        let directory = try TemporaryDirectory()
        let good = directory.path("backend.yaml")
        try Data(Self.backend.utf8).write(to: URL(fileURLWithPath: good))
        let checked = try CommandRunner.tollgate("api", "check", good)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("valid — Tiered app backend: 1 bucket(s), 2 route(s), 2 endpoint(s)"))

        let bad = directory.path("bad.yaml")
        try Data("api: X\nbuckets:\n  b: {limit: 10}\ndefaults: {bucket: b}\nendpoints:\n  e: {cots: 1}\n".utf8)
            .write(to: URL(fileURLWithPath: bad))
        let refused = try CommandRunner.tollgate("api", "check", bad)
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("bad.yaml:6:7: endpoints.e.cots: unknown key"), "\(refused.stderr)")

        let shown = try CommandRunner.tollgate("api", "show", "--api", good)
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("GET /api/streams/{id} → streams"))
        #expect(shown.stdout.contains("streams: 2 in server, throttle 20/min"))
        let preset = try CommandRunner.tollgate("api", "show")
        #expect(preset.stdout.hasPrefix("YouTube Data API v3"))
        #expect(preset.stdout.contains("  403 with reason quotaExceeded"), "\(preset.stdout)")
        let github = try CommandRunner.tollgate("api", "show", "--api", "github-rest")
        #expect(github.stdout.contains("core: 5,000 units per hour, follows the server's announced 'core' requests limit, "
            + "paces its last units keeping 10% back"), "\(github.stdout)")
        #expect(github.stdout.contains("  403 with X-RateLimit-Remaining: 0"), "\(github.stdout)")
        #expect(github.stdout.contains("Links pointed at the proxy: Link, Location, Content-Location and the JSON bodies of application/json"),
                "\(github.stdout)")
    }

    @Test("proxy --api names requests by the file's routes, throttles and charges by its rules; quota show --api agrees")
    func proxyFollowsTheFile() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        let directory = try TemporaryDirectory()
        let file = directory.path("backend.yaml")
        try Data(Self.backend.utf8).write(to: URL(fileURLWithPath: file))
        let database = directory.path("backend.sqlite")
        let origin = try ScriptedHTTPServer { _ in .init(status: 200, headers: [(name: "Cache-Control", value: "no-store")], body: "[]") }
        defer { origin.stop() }
        let proxy = try BackgroundCommand(CommandRunner.tollgate, [
            "proxy", "--listen", "127.0.0.1:0", "--upstream", origin.baseURL, "--db", database, "--api", file,
        ])
        let banner = try #require(proxy.firstLine(), "the proxy exited before listening")
        let base = String(try #require(banner.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }))
        for _ in 0..<3 {
            let answer = try await offPool { try CurlResponse.fetch("\(base)/api/streams/42") }
            #expect(answer.headers["x-tollgate-endpoint"] == "streams")
            #expect(answer.headers["x-tollgate-units"] == "2")
        }
        let other = try await offPool { try CurlResponse.fetch("\(base)/api/other") }
        #expect(other.headers["x-tollgate-endpoint"] == "GET /api/other")
        let (status, stderr) = proxy.interrupt()
        #expect(status == 0, "\(stderr)")

        let throttles = try CommandRunner.tollgate("throttle", "show", "--db", database)
        #expect(throttles.stdout.contains("streams: 3/20 in the last 60s · 17 left"), "\(throttles.stdout)")
        let quota = try CommandRunner.tollgate("quota", "show", "--db", database, "--api", file)
        #expect(quota.stdout.contains("server: 7/300 units used · 293 left"), "\(quota.stdout)")
    }
}
