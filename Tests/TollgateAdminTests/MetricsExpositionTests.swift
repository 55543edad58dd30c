import Foundation
import Testing
import Tollgate
import TollgateAdmin
import TollgateSQLite
import TollgateTestSupport

@Suite("/metrics, read by Prometheus's own text parser")
struct MetricsExpositionTests {
    @Test("every family has HELP and TYPE, bounded labels, this process's counters and the store's quota, circuits and throttles")
    func proxyMetricsParse() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in

            #expect(try await harness.get("/youtube/v3/videos?id=1").status == 200)
            let second = try await harness.get("/youtube/v3/videos?id=1")
            #expect(second.headers["x-tollgate-source"] == "revalidated")
            #expect(try await harness.get("/youtube/v3/search?q=cats").status == 200)
            try await harness.gate.flush()

            let answer = try await harness.admin("/metrics")
            #expect(answer.status == 200)
            #expect(answer.headers["content-type"] == MetricsExposition.contentType)
            let text = String(decoding: answer.body, as: UTF8.self)
            let families = try PrometheusTextParser.parse(text)

            // Every family: tollgate_*, typed, documented, once; labels from a bounded set.
            #expect(Set(families.map(\.name)).count == families.count, "a family appears twice: \(families.map(\.name))")
            let allowedLabels: Set<String> = ["endpoint", "bucket", "source", "reason", "state", "result", "le"]
            for family in families {
                #expect(family.name.hasPrefix("tollgate_"), "\(family.name)")
                #expect(family.type != "unknown", "\(family.name) has no TYPE line")
                #expect(!family.documentation.isEmpty, "\(family.name) has no HELP line")
                for sample in family.samples {
                    #expect(Set(sample.labels.keys).isSubset(of: allowedLabels), "\(sample.name) \(sample.labels)")
                }
            }

            // This process: answers by source, upstream latency, no retries.
            #expect(families.value("tollgate_requests_total", ["endpoint": "videos.list", "source": "network"]) == 1)
            #expect(families.value("tollgate_requests_total", ["endpoint": "videos.list", "source": "revalidated"]) == 1)
            #expect(families.value("tollgate_requests_total", ["endpoint": "search.list", "source": "network"]) == 1)
            #expect(families.family("tollgate_upstream_latency_seconds")?.type == "histogram")
            #expect(families.value("tollgate_upstream_latency_seconds_count", ["endpoint": "videos.list"]) == 2)
            #expect(families.value("tollgate_retries_total", ["endpoint": "videos.list"]) == nil)

            // The store, at this scrape: units used (the 200 and the 304's 1 unit), limits, reset, throttles.
            let snapshot = try await harness.store.dashboardSnapshot(at: Date(), recentEvents: 0)
            let youtube = try #require(snapshot.buckets.first { $0.bucket == "youtube" })
            #expect(youtube.used == 2)
            #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube"]) == 2)
            #expect(families.value("tollgate_quota_limit_units", ["bucket": "youtube"]) == Double(youtube.limit))
            #expect(families.value("tollgate_quota_remaining_units", ["bucket": "youtube"]) == Double(youtube.remaining))
            #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube.search"]) == 1)
            #expect(families.value("tollgate_quota_endpoint_used_units", ["bucket": "youtube", "endpoint": "videos.list"]) == 2)
            let reset = try #require(families.value("tollgate_quota_reset_seconds"))
            #expect(abs(reset - snapshot.resetsAt.timeIntervalSinceNow) < 5)
            #expect(families.value("tollgate_quota_burn_rate_units_per_hour", ["bucket": "youtube"]) == 2)
            let exhaustion = try #require(families.value("tollgate_quota_exhaustion_forecast_seconds", ["bucket": "youtube"]))
            #expect(abs(exhaustion - Double(youtube.remaining) / 2 * 3600) < 1)
            #expect(families.value("tollgate_throttle_window_requests", ["endpoint": "videos.list"]) == 2)
            #expect(families.value("tollgate_store_up") == 1)
        }
    }

    @Test("each circuit is one 0/1 gauge per state, with the seconds until its retry")
    func circuitStates() async throws {
        let origin = try ScriptedHTTPServer { _ in .init(status: 500, body: "down") }
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in
            try await harness.gate.circuit.forceOpen(endpoint: "videos.list", for: .seconds(120))

            let refused = try await harness.get("/youtube/v3/videos?id=1")
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"].flatMap(Int.init).map { (100...120).contains($0) } == true)

            let families = try PrometheusTextParser.parse(String(decoding: try await harness.admin("/metrics").body, as: UTF8.self))
            #expect(families.value("tollgate_circuit_state", ["endpoint": "videos.list", "state": "open"]) == 1)
            #expect(families.value("tollgate_circuit_state", ["endpoint": "videos.list", "state": "closed"]) == 0)
            #expect(families.value("tollgate_circuit_state", ["endpoint": "videos.list", "state": "half_open"]) == 0)
            let retry = try #require(families.value("tollgate_circuit_retry_seconds", ["endpoint": "videos.list"]))
            #expect((100...120).contains(retry))
            #expect(families.value("tollgate_refusals_total", ["endpoint": "videos.list", "reason": "circuit_open"]) == 1)
        }
    }

    @Test("the freshness in force per endpoint and why, as the proxy's gate serves by it: /metrics, /api/snapshot and the page")
    func freshnessInForce() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.endpointFreshFor["videos.list"] = ChosenFreshness(minimum: .seconds(60), maximum: .seconds(3600),
                                                                        followsBudget: true)
        configuration.freshFor = ChosenFreshness(.seconds(300))
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!, configuration: configuration) { harness in
            #expect(try await harness.get("/youtube/v3/videos?id=1").status == 200)
            let again = try await harness.get("/youtube/v3/videos?id=1")
            #expect(again.headers["x-tollgate-source"] == "fresh")
            try await harness.gate.flush()
            let served = await harness.gate.freshnessInForce(try #require(configuration.endpointFreshFor["videos.list"]),
                                                             endpoint: "videos.list")
            #expect(served.reason == .budgetLasts && served.lifetime == .seconds(60))

            let families = try PrometheusTextParser.parse(String(decoding: try await harness.admin("/metrics").body, as: UTF8.self))
            #expect(families.family("tollgate_freshness_seconds")?.type == "gauge")
            #expect(families.value("tollgate_freshness_seconds",
                                   ["endpoint": "videos.list", "bucket": "youtube", "reason": "budget_lasts"]) == 60)
            #expect(families.value("tollgate_freshness_seconds", ["endpoint": "*", "bucket": "youtube", "reason": "fixed"]) == 300)
            #expect(families.family("tollgate_freshness_seconds")?.samples.count == 2)

            let json = try await harness.admin("/api/snapshot")
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            decoder.dateDecodingStrategy = .iso8601
            let snapshot = try decoder.decode(OperatorsSnapshot.self, from: json.body)
            let rows = try #require(snapshot.dashboard.freshness)
            #expect(rows.map(\.endpoint) == ["*", "videos.list"])
            #expect(rows.last?.decidedBy == .gate)
            // The JSON's dates are whole seconds.
            #expect(rows.last?.decidedAt.map { abs($0.timeIntervalSince(served.decidedAt)) < 1 } == true)
            #expect(rows.last?.why == "follows youtube: the budget lasts at this rate")

            let page = String(decoding: try await harness.admin("/").body, as: UTF8.self)
            #expect(page.contains("Freshness in force (fresh_for)"))
            #expect(page.contains("<td>videos.list</td><td>youtube</td><td class=\"num\">1m 0s</td><td>{min: 60s, max: 3600s, follow_budget: true}</td>"),
                    "\(page)")
            #expect(page.contains("follows youtube: the budget lasts at this rate"))
        }

        // Nothing chosen: no freshness family, no card.
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!) { harness in
            let families = try PrometheusTextParser.parse(String(decoding: try await harness.admin("/metrics").body, as: UTF8.self))
            #expect(families.family("tollgate_freshness_seconds") == nil)
            #expect(!String(decoding: try await harness.admin("/").body, as: UTF8.self).contains("Freshness in force"))
        }
    }

    @Test("a charge stamped after the reader's now (a writer whose clock runs ahead) is drawn where it was stamped, never back at now")
    func burnMovesForward() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ahead.sqlite"), logger: quiet)
        let day = PacificDay(key: "2026-11-20")!
        let writer = ManualClock(now: day.start.addingTimeInterval(11 * 3600))
        let ledger = try QuotaLedger(storage: store, configuration: GateConfiguration.youTubeDataAPIv3.quota, clock: writer, logger: quiet)
        for _ in 0..<100 { try await ledger.reserve(endpoint: "search.list") }
        let reader = OperatorsSnapshotReader(storage: store, clock: ManualClock(now: day.start.addingTimeInterval(10 * 3600)))
        let snapshot = try await reader.read()
        let search = try #require(snapshot.burn.first { $0.bucket == "youtube.search" })
        let seconds = search.points.map(\.secondsSinceMidnight)
        #expect(seconds == seconds.sorted(), "time only moves forward: \(search.points)")
        #expect(search.points.map(\.cumulativeUnits) == search.points.map(\.cumulativeUnits).sorted(), "units never fall")
        #expect(search.points.last?.cumulativeUnits == 100)
        #expect(search.points.last.map { $0.secondsSinceMidnight > 11 * 3600 } == true, "\(search.points)")
    }

    @Test("a token guards every path; a non-loopback address without one is refused before it binds")
    func token() async throws {
        let origin = try etagOrigin()
        defer { origin.stop() }
        try await ProxyWithAdmin.with(upstream: URL(string: origin.baseURL)!, token: "s3cret") { harness in
            let bare = try await harness.admin("/metrics")
            #expect(bare.status == 401)
            #expect(bare.headers["www-authenticate"] == #"Bearer realm="tollgate""#)
            let wrong = try await harness.admin("/metrics", headers: ["Authorization: Bearer wrong"])
            #expect(wrong.status == 401)
            let right = try await harness.admin("/metrics", headers: ["Authorization: Bearer s3cret"])
            #expect(right.status == 200)
            let page = try await harness.admin("/?token=s3cret")
            #expect(page.status == 200)
            let snapshot = try await harness.admin("/api/snapshot")
            #expect(snapshot.status == 401)
        }

        let directory = try TemporaryDirectory()
        let reader = OperatorsSnapshotReader(storage: try SQLiteStore(path: directory.path("t.sqlite"), logger: quiet))
        await #expect(throws: AdminServerError.tokenRequired("0.0.0.0:0")) {
            _ = try await AdminServer.start(listen: try AdminAddress(parsing: "0.0.0.0:0"),
                                            exposition: MetricsExposition(process: nil, reader: reader))
        }
    }
}
