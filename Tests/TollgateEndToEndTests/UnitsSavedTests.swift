import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// Issue 39, over loopback with the clock injected: what a 304 really costs on each API, and the
/// freshness the app chooses (`fresh_for`) saving the units a revalidation would not.
@Suite("Units saved for real: what a 304 costs, and freshness the app chooses")
struct UnitsSavedTests {
    /// A gate over `harness`'s file, fake API and clock, with a configuration of the test's own.
    private static func gate(_ harness: GateHarness, _ configure: (inout GateConfiguration) -> Void) throws -> Gate {
        var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
        configure(&configuration)
        return try Gate(store: harness.store, transport: URLSessionTransport(), configuration: configuration,
                        clock: harness.clock)
    }

    private static func units(_ gate: Gate, endpoint: String) async throws -> Int {
        try await gate.flush()
        return try await gate.quota.usage(on: PacificDay(containing: GateHarness.start))
            .filter { $0.endpoint == endpoint }.map(\.units).reduce(0, +)
    }

    @Test("a 304 is charged what the API documents: 1 of a 100-unit search on YouTube, nothing where it is free, all where it is full")
    func notModifiedCosts() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.quotaModel = .singlePool
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            for (cost, expected) in [(NotModifiedCost.units(1), 1), (.free, 0), (.full, 100)] {
                let gate = try Self.gate(harness) { configuration in
                    configuration.quota = .youTubeDataAPIv3SinglePool
                    configuration.quota.endpointCosts["search.list"]?.notModifiedCost = cost
                }
                let request = HTTPRequest(url: harness.api.url("search", ["q": "cost \(cost)", "part": "snippet"]))
                let first = try await gate.send(request, endpoint: "search.list")
                #expect(first.unitsCharged == 100)
                let before = try await Self.units(gate, endpoint: "search.list")
                let second = try await gate.send(request, endpoint: "search.list")
                #expect(second.source == .revalidated)
                #expect(second.unitsCharged == expected, "\(cost)")
                #expect(try await Self.units(gate, endpoint: "search.list") - before == expected, "\(cost)")
                #expect(try await gate.quota.discrepancies().isEmpty)
            }
        }
    }

    @Test("fresh_for 5m on videos.list, origin saying max-age=0, must-revalidate: 20 GETs in a minute reach it once and cost 1 unit; after 5 minutes the next one revalidates")
    func freshForServesWithoutAsking() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.gate(harness) { $0.endpointFreshFor["videos.list"] = ChosenFreshness(.seconds(300)) }
            var sources: [ResponseSource] = []
            for _ in 0..<20 {
                let answer = try await gate.send(harness.video("v1"), endpoint: "videos.list")
                sources.append(answer.source)
                if answer.source == .fresh {
                    #expect(answer.unitsCharged == 0)
                    #expect(answer.response.headerFields[.age] != nil, "a served answer says how old it is")
                }
                harness.clock.base.advance(by: .seconds(3))
            }
            #expect(sources == [.network] + Array(repeating: .fresh, count: 19))
            #expect(harness.api.receivedRequests.count == 1)
            #expect(harness.api.receivedRequests.first.map { $0.headers["cache-control"] ?? "" } == "",
                    "the request as the app sent it")
            #expect(try await Self.units(gate, endpoint: "videos.list") == 1)

            // Five minutes after it was stored (by the write after the first answer, which the
            // second request waited for, 3 s in): asked again (a 304, 1 unit on YouTube), then fresh again.
            harness.clock.base.set(to: GateHarness.start.addingTimeInterval(299))
            #expect(try await gate.send(harness.video("v1"), endpoint: "videos.list").source == .fresh)
            harness.clock.base.set(to: GateHarness.start.addingTimeInterval(303))
            let revalidated = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(revalidated.source == .revalidated)
            #expect(revalidated.unitsCharged == 1)
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304])
            harness.clock.base.advance(by: .seconds(299))
            #expect(try await gate.send(harness.video("v1"), endpoint: "videos.list").source == .fresh,
                    "fresh for 5 minutes after the revalidation")
            #expect(try await Self.units(gate, endpoint: "videos.list") == 2)
            let stats = try await harness.store.cacheStatistics(pacificDate: nil)
            #expect(stats.map(\.counts.hits).reduce(0, +) == 21, "the answers served fresh are hits")
        }
    }

    @Test("with nothing chosen the cache is RFC 9111: max-age=0, must-revalidate is asked every time")
    func nothingChosen() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.gate(harness) { $0.endpointFreshFor["other.list"] = ChosenFreshness(.seconds(300)) }
            for _ in 0..<3 { _ = try await gate.send(harness.video("v1"), endpoint: "videos.list") }
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304, 304])
        }
    }

    @Test("a request's own freshness wins over the configuration's, and a request's no-cache still asks")
    func perRequest() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.gate(harness) { $0.freshFor = ChosenFreshness(.seconds(10)) }
            _ = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            harness.clock.base.advance(by: .seconds(60))
            let longer = try await gate.send(harness.video("v1"), endpoint: "videos.list",
                                             options: GateRequestOptions(freshFor: .seconds(3600)))
            #expect(longer.source == .fresh)
            var reload = harness.video("v1")
            reload.headerFields[.cacheControl] = "no-cache"
            let asked = try await gate.send(reload, endpoint: "videos.list", options: GateRequestOptions(freshFor: .seconds(3600)))
            #expect(asked.source == .revalidated)
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304])
        }
    }

    @Test("stale_if_error: past fresh_for, a must-revalidate answer stands in for an outage for that long, and not after")
    func staleIfError() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            var retry = RetryPolicy.default
            retry.maximumRetries = 0
            let chosen = try Self.gate(harness) { configuration in
                configuration.retry = retry
                configuration.endpointFreshFor["videos.list"] = ChosenFreshness(.seconds(300), staleIfError: .seconds(3600))
            }
            let plain = try Self.gate(harness) { configuration in
                configuration.retry = retry
                configuration.endpointFreshFor["videos.list"] = ChosenFreshness(.seconds(300))
            }
            _ = try await chosen.send(harness.video("v1"), endpoint: "videos.list")
            try await chosen.flush()
            harness.api.updateBehaviour { $0.outage = .init() }
            harness.clock.base.advance(by: .seconds(600))
            let served = try await chosen.send(harness.video("v1"), endpoint: "videos.list")
            #expect(served.source == .stale(.upstreamFailure))
            #expect(served.body.isEmpty == false)
            // Without it, the answer's must-revalidate forbids serving it stale (RFC 9111 §4.2.4).
            #expect(try await plain.send(harness.video("v1"), endpoint: "videos.list").status.code == 503)
            harness.clock.base.advance(by: .seconds(3600))
            let late = try await chosen.send(harness.video("v1"), endpoint: "videos.list")
            #expect(late.source == .network, "past fresh_for and stale_if_error: the server's answer")
            #expect(late.status.code == 503)
        }
    }

    @Test("stale_while_revalidate: past fresh_for, the stored answer is served at once while the gate revalidates it")
    func staleWhileRevalidate() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.gate(harness) {
                $0.endpointFreshFor["videos.list"] = ChosenFreshness(.seconds(300), staleWhileRevalidate: .seconds(60))
            }
            _ = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            try await gate.flush()
            harness.clock.base.advance(by: .seconds(330))
            let served = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(served.source == .stale(.revalidating))
            try await gate.flush()
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304], "revalidated in the background")
            #expect(try await gate.send(harness.video("v1"), endpoint: "videos.list").source == .fresh)
            harness.clock.base.advance(by: .seconds(400))
            #expect(try await gate.send(harness.video("v1"), endpoint: "videos.list").source == .revalidated,
                    "past both windows: asked before answering")
        }
    }

    @Test("nothing the app chooses serves an answer the server marked no-store")
    func neverNoStore() async throws {
        let origin = try ScriptedHTTPServer { _ in
            .init(status: 200, headers: [(name: "Cache-Control", value: "no-store"), (name: "ETag", value: "\"a\"")], body: "secret")
        }
        defer { origin.stop() }
        let directory = try TemporaryDirectory()
        var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
        configuration.freshFor = ChosenFreshness(.seconds(3600))
        let gate = try Gate(store: SQLiteStore(path: directory.path("gate.sqlite")), transport: URLSessionTransport(),
                            configuration: configuration, clock: SimulatedClock(base: ManualClock(now: GateHarness.start)))
        let request = HTTPRequest(url: URL(string: origin.baseURL + "/private")!)
        for _ in 0..<3 {
            let answer = try await gate.send(request, endpoint: "private")
            #expect(answer.source == .network)
        }
        try await gate.flush()
        #expect(origin.requests.count == 3)
    }
}
