import Foundation
import HTTPTypes
import MetricsTestKit
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

@Suite("Gate metrics")
struct GateMetricsTests {
    @Test("requests by source, units charged, refusals, circuit state and hit rate, per endpoint")
    func metricsFollowTheRequests() async throws {
        // YouTube's own header says must-revalidate, which forbids serving stale (RFC 9111 §4.2.4);
        // max-age=0 without it keeps every answer revalidated and lets a stored one stand in.
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 0
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        try await withStopping(api, stop: { await $0.stop() }) { api in
            let directory = try TemporaryDirectory()
            let metrics = TestMetrics()
            let gate = try Gate(
                store: try SQLiteStore(path: directory.path("metrics.sqlite")), transport: URLSessionTransport(),
                clock: SimulatedClock(base: ManualClock(now: Date(timeIntervalSince1970: 1_800_000_000))), metrics: metrics
            )
            let video = HTTPRequest(url: api.url("videos", ["id": "v1"]))
            _ = try await gate.send(video, endpoint: "videos.list")
            _ = try await gate.send(video, endpoint: "videos.list")
            try await gate.circuit.forceOpen(endpoint: "videos.list", for: .seconds(60))
            _ = try await gate.send(video, endpoint: "videos.list")
            await #expect(throws: TollgateError.self) {
                try await gate.send(HTTPRequest(url: api.url("videos", ["id": "v2"])), endpoint: "videos.list")
            }

            let endpoint = ("endpoint", "videos.list")
            #expect(try metrics.expectCounter("tollgate_requests_total", [endpoint, ("source", "network")]).totalValue == 1)
            #expect(try metrics.expectCounter("tollgate_requests_total", [endpoint, ("source", "revalidated")]).totalValue == 1)
            #expect(try metrics.expectCounter("tollgate_requests_total", [endpoint, ("source", "stale_circuit_open")]).totalValue == 1)
            #expect(try metrics.expectCounter("tollgate_quota_units_total", [endpoint]).totalValue == 2, "the 200, and the 304's 1 unit")
            #expect(try metrics.expectCounter("tollgate_refusals_total", [endpoint, ("reason", "circuit_open")]).totalValue == 2)
            #expect(try metrics.expectGauge("tollgate_cache_hit_rate", [endpoint]).lastValue == 0.5)
            #expect(try metrics.expectGauge("tollgate_circuit_state", [endpoint]).lastValue == 2)
        }
    }
}
