import Foundation
import Testing
import TollgateFakeAPI
import TollgateCore
import TollgateSQLite
import TollgateTestSupport

@Suite("tollgate get and tollgate demo")
struct GetAndDemoCommandTests {
    @Test("get prints the body to stdout and the source and quota to stderr; the 304 path costs YouTube's 1 unit")
    func getRevalidates() async throws {
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let directory = try TemporaryDirectory()
            let path = directory.path("get.sqlite")
            let url = api.url("videos", ["id": "v1", "part": "snippet"]).absoluteString

            let first = try CommandRunner.tollgate("get", url, "--db", path)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.contains("\"revision\":1"))
            #expect(first.stderr.contains("videos.list · status 200 · source network · units charged 1 · 9999 units left today in youtube"))

            let second = try CommandRunner.tollgate("get", url, "--db", path)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(second.stdout == first.stdout)
            #expect(second.stderr.contains("source revalidated · units charged 1 · 9998 units left today in youtube"))
            #expect(api.receivedRequests.map(\.status) == [200, 304])
            #expect(api.unitsUsed == 2)
        }
    }

    @Test("get exits 4 when the circuit is open and 5 when the quota is spent, without reaching the server")
    func getExitCodes() async throws {
        let api = try await FakeYouTubeAPI.start()
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let directory = try TemporaryDirectory()
            let path = directory.path("codes.sqlite")
            let store = try SQLiteStore(path: path)
            _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(600), policy: CircuitPolicy(), at: Date())
            _ = try await store.markQuotaExhausted(bucket: "youtube.search", configuredLimit: 100, endpoint: nil, at: Date())

            let open = try CommandRunner.tollgate("get", api.url("videos", ["id": "v1"]).absoluteString, "--db", path)
            #expect(open.status == 4)
            #expect(open.stderr.contains("Service temporarily unavailable due to repeated failures. Please try again in"))
            let spent = try CommandRunner.tollgate("get", api.url("search", ["q": "swift"]).absoluteString, "--db", path)
            #expect(spent.status == 5)
            #expect(spent.stderr.contains("Daily API quota exceeded: search.list costs 1 unit and 0 units remain today."))
            #expect(api.receivedRequests.isEmpty)
        }
    }

    @Test("get refuses what is not an http(s) URL, and a header without a colon")
    func getValidation() throws {
        let notURL = try CommandRunner.tollgate("get", "ftp://example.com/file")
        #expect(notURL.status != 0)
        #expect(notURL.stderr.contains("is not an http(s) URL"))
        let badHeader = try CommandRunner.tollgate("get", "http://127.0.0.1:9/x", "-H", "NoColonHere")
        #expect(badHeader.status != 0)
        #expect(badHeader.stderr.contains("is not 'Name: value'"))
    }

    @Test("demo tells the whole story on its own database file and exits 0")
    func demo() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("demo.sqlite")
        let result = try CommandRunner.tollgate("demo", "--db", path)
        #expect(result.status == 0, "\(result.stderr)")
        for chapter in ["1. First fetch", "2. Five refreshes", "3. A 429 storm", "4. An hour later", "5. A restart",
                        "6. Quota exhaustion", "Summary", "sqlite3 -header -column \(path)"] {
            #expect(result.stdout.contains(chapter), "missing \(chapter)")
        }
        #expect(result.stdout.contains("95 revalidated"))
        // A 304 costs 1 unit on YouTube: the refreshes save bandwidth, not units…
        #expect(result.stdout.contains("100 requests → 100 reached the API · 100 units charged (100 units without the gate)"),
                "\(result.stdout)")
        #expect(result.stdout.contains("a revalidation saves bandwidth, not units"))
        // …not asking does: every other refresh within fresh_for 10m.
        #expect(result.stdout.contains("2b. Five more refreshes, the app saying fresh_for: 10m"))
        #expect(result.stdout.contains("100 requests → 40 reached the API · 40 units charged (100 units without the gate)"),
                "\(result.stdout)")
        #expect(result.stdout.contains("60 fresh"))
        #expect(result.stdout.contains("cache hit rate 95 %"), "the refresh chapters show their hit rate")
        #expect(result.stdout.contains("opened the circuit for 1 h;"), "the rate-limit duration in whole units")
        #expect(result.stdout.contains("the ledger refused the 101st search"))
        #expect(result.stdout.contains("stale (circuitOpen)"))
        #expect(result.stdout.contains("the circuit is CLOSED again"))
        #expect(result.stdout.contains("stale (quotaExhausted)"))
        // The file it names holds the story.
        let trips = try CommandRunner.sqlite3(path, "SELECT trips FROM circuit_status WHERE endpoint = 'videos.list'")
        #expect(trips.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")

        let again = try CommandRunner.tollgate("demo", "--db", path)
        #expect(again.status != 0)
        #expect(again.stderr.contains("--replace"))
    }

    @Test("demo: freshness that follows the budget stretches on a tight day, and the file opened in dashboard --web draws what happened, in Chromium")
    func demoInTheWebDashboard() async throws {
        guard CommandRunner.isInstalled("curl") else { Issue.record("curl is not installed: .ci/run installs it"); return }
        try #require(HeadlessChromium.executable != nil, "chromium is not installed: .ci/run installs it")
        let directory = try TemporaryDirectory()
        let path = directory.path("demo.sqlite")
        let result = try CommandRunner.tollgate("demo", "--db", path)
        let finished = Date()
        #expect(result.status == 0, "\(result.stderr)")
        // The follow_budget chapter: asked every minute at first, then stretched, and the units lasted.
        let chapter = try #require(result.stdout.components(separatedBy: "2c. Every minute for half an hour").dropFirst().first,
                                   "\(result.stdout)")
        #expect(chapter.contains("600 requests → "), "\(chapter.prefix(600))")
        let moral = try #require(chapter.components(separatedBy: "\n").first { $0.contains("the freshness in force") })
        #expect(moral.contains(" (stretched)") || moral.contains(" (at maximum)"), "\(moral)")
        #expect(moral.contains("of the 1,000 units were left"), "\(moral)")
        let sent = try #require(chapter.components(separatedBy: " reached the API").first?.components(separatedBy: "→ ").last
            .flatMap { Int($0) }, "\(chapter.prefix(300))")
        #expect(sent < 600, "some answers were served without asking")
        // Chapter 2's "without the gate" is what Google counts: every request, a 304 too.
        #expect(result.stdout.contains("100 requests → 100 reached the API · 100 units charged (100 units without the gate)"))

        let early = result.stdout.contains("It is early in the Pacific day")
        try await AdminListenerCommandTests.running(["dashboard", "--web", "127.0.0.1:0", "--db", path]) { command in
            let base = try AdminListenerCommandTests.adminURL(command.firstLine())
            let dom = try await offPool { try HeadlessChromium.dumpDOM(URL(string: "\(base)/")!) }
            let snapshot = try #require(try JSONSerialization.jsonObject(
                with: Data(try await offPool { try CurlResponse.fetch("\(base)/api/snapshot") }.body.utf8)) as? [String: Any])
            let dayStart = try #require((snapshot["day_start"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
            for bucket in ["youtube", "youtube.search"] {
                let chart = try #require(dom.range(of: #"<svg class="chart burn"[^>]*data-bucket="\#(bucket)""#, options: .regularExpression)
                    .map { String(dom[$0.lowerBound...]) }, "no chart for \(bucket)")
                let used = try #require(chart.firstMatch(of: /data-used="(\d+)"/).map { Int($0.1)! })
                let data = try #require(chart.firstMatch(of: /class="used" data-points="([^"]*)"/).map { String($0.1) })
                let points = data.split(separator: " ").map { pair in
                    let parts = pair.split(separator: ":")
                    return (seconds: Double(parts[0]) ?? -1, units: Int(parts[1]) ?? -1)
                }
                #expect(points.map(\.seconds) == points.map(\.seconds).sorted(), "\(bucket): time goes forward: \(data)")
                #expect(points.map(\.units) == points.map(\.units).sorted(), "\(bucket): units never fall: \(data)")
                #expect(points.last?.units == used && used > 0, "\(bucket): \(data)")
                if !early {
                    // Everything happened before the page was drawn: nothing lies in the future.
                    let now = finished.timeIntervalSince(dayStart) + 60
                    #expect(points.allSatisfy { $0.seconds <= now }, "\(bucket): \(data), now \(now)")
                }
            }
            #expect(dom.contains(#"data-bucket="youtube.search""#) && dom.contains(#"data-used="100""#))
            AdminListenerCommandTests.expectCleanInterrupt(command)
        }
    }
}
