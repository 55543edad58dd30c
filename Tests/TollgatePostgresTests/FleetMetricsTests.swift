import Foundation
import Testing
import Tollgate
import TollgateAdmin
import TollgatePostgres
import TollgateProxy
import TollgateTestSupport

/// Two proxies over one PostgreSQL database, each with its admin listener, as two machines of a
/// fleet run them: Prometheus's parser reads both, and both report the shared bucket the same.
@Suite("/metrics of a fleet over PostgreSQL",
       .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"))
struct FleetMetricsTests {
    struct Machine {
        let store: PostgresStore
        let gate: Gate
        let proxy: GateProxy
        let admin: AdminServer

        static func start(_ url: String, upstream: URL) async throws -> Machine {
            let store = try await PostgresStore(url: url, logger: PostgresTestDatabase.quietLogger)
            let metrics = ProcessMetrics()
            let gate = try Gate(storage: store, transport: URLSessionTransport(), configuration: .youTubeDataAPIv3,
                                clock: SystemClock(), logger: PostgresTestDatabase.quietLogger, metrics: metrics.factory)
            let proxy = try await GateProxy.start(gate: gate, upstream: upstream,
                                                  listen: try LoopbackAddress(parsing: "127.0.0.1:0"),
                                                  logger: PostgresTestDatabase.quietLogger)
            let admin = try await AdminServer.start(
                listen: try AdminAddress(parsing: "127.0.0.1:0"),
                exposition: MetricsExposition(process: metrics, reader: OperatorsSnapshotReader(storage: store),
                                              logger: PostgresTestDatabase.quietLogger),
                logger: PostgresTestDatabase.quietLogger
            )
            return Machine(store: store, gate: gate, proxy: proxy, admin: admin)
        }

        func stop() async {
            await proxy.stop()
            await admin.stop()
            try? await gate.flush()
            await store.shutdown()
        }

        func get(_ port: Int, _ target: String) async throws -> RawHTTPClient.Answer {
            let head = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
            return try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Result { try RawHTTPClient.exchange(port: port, head) }) }.start()
            }
        }

        func scrape() async throws -> [PrometheusTextParser.Family] {
            let answer = try await get(admin.address.port, "/metrics")
            #expect(answer.status == 200)
            return try PrometheusTextParser.parse(String(decoding: answer.body, as: UTF8.self))
        }
    }

    @Test("both listeners report the same bucket usage after traffic through either; each its own requests")
    func sameUsageFromEither() async throws {
        let origin = try ScriptedHTTPServer { request in
            .init(headers: [("Content-Type", "application/json"), ("ETag", "\"\(request.target.count)\"")], body: "{}")
        }
        defer { origin.stop() }
        try await PostgresTestDatabase.with { database in
            let upstream = URL(string: origin.baseURL)!
            let first = try await Machine.start(database.url, upstream: upstream)
            let second = try await Machine.start(database.url, upstream: upstream)
            do {
                for id in 1...3 {
                    #expect(try await first.get(first.proxy.address.port, "/youtube/v3/videos?id=\(id)").status == 200)
                }
                #expect(try await second.get(second.proxy.address.port, "/youtube/v3/videos?id=99").status == 200)
                #expect(try await second.get(second.proxy.address.port, "/youtube/v3/search?q=x").status == 200)
                try await first.gate.flush()
                try await second.gate.flush()

                let fromFirst = try await first.scrape()
                let fromSecond = try await second.scrape()
                for families in [fromFirst, fromSecond] {
                    #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube"]) == 4)
                    #expect(families.value("tollgate_quota_used_units", ["bucket": "youtube.search"]) == 1)
                    #expect(families.value("tollgate_quota_remaining_units", ["bucket": "youtube"]) == 9_996)
                    #expect(families.value("tollgate_quota_endpoint_used_units", ["bucket": "youtube", "endpoint": "videos.list"]) == 4)
                    #expect(families.value("tollgate_throttle_window_requests", ["endpoint": "videos.list"]) == 4)
                    #expect(families.value("tollgate_store_up") == 1)
                    #expect(families.allSatisfy { $0.type != "unknown" && !$0.documentation.isEmpty })
                }
                // This process's counters stay its own.
                #expect(fromFirst.value("tollgate_requests_total", ["endpoint": "videos.list", "source": "network"]) == 3)
                #expect(fromSecond.value("tollgate_requests_total", ["endpoint": "videos.list", "source": "network"]) == 1)
                #expect(fromFirst.value("tollgate_requests_total", ["endpoint": "search.list", "source": "network"]) == nil)
            } catch {
                await first.stop()
                await second.stop()
                throw error
            }
            await first.stop()
            await second.stop()
        }
    }
}
