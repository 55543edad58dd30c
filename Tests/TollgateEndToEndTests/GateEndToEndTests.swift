import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

/// A gate over a fresh file, a fake API and a clock whose sleeps pass at once.
struct GateHarness {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15, a Friday
    let directory: TemporaryDirectory
    let path: String
    let store: SQLiteStore
    let api: FakeYouTubeAPI
    let clock: SimulatedClock
    let gate: Gate

    init(
        _ kind: TransportKind = .urlSession,
        quotaLimit: Int = 10_000,
        throttleLimit: Int = 10_000,
        behaviour: FakeAPIBehaviour = FakeAPIBehaviour()
    ) async throws {
        directory = try TemporaryDirectory()
        path = directory.path("gate.sqlite")
        store = try SQLiteStore(path: path)
        api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        clock = SimulatedClock(base: ManualClock(now: Self.start))
        gate = try Gate(store: store, transport: kind.make(), configuration: Self.configuration(quotaLimit: quotaLimit, throttleLimit: throttleLimit), clock: clock)
    }

    static func configuration(quotaLimit: Int, throttleLimit: Int) -> GateConfiguration {
        var configuration = GateConfiguration.youTubeDataAPIv3
        configuration.quota.bucketLimits[QuotaConfiguration.youTubeBucket] = quotaLimit
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: throttleLimit, per: .seconds(60)))
        configuration.retry.jitter = 0
        configuration.maximumThrottleWait = .zero
        return configuration
    }

    func video(_ id: String) -> HTTPRequest {
        HTTPRequest(url: api.url("videos", ["id": id, "part": "snippet"]))
    }

    func stop() async { await api.stop() }
}

@Suite("The gate, end to end over loopback")
struct GateEndToEndTests {
    @Test("a second request sends If-None-Match and gets the body from a 304, charged the 1 unit YouTube charges for it",
          arguments: TransportKind.allCases)
    func revalidationCostsOneUnit(kind: TransportKind) async throws {
        let harness = try await GateHarness(kind)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let first = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(first.source == .network)
            #expect(first.unitsCharged == 1)
            let etag = try #require(first.response.headerFields[.eTag])

            let second = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(second.source == .revalidated)
            #expect(second.unitsCharged == 1, "Google: every request costs at least one point, a 304 too")
            #expect(second.body == first.body)
            #expect(harness.api.receivedRequests.map(\.ifNoneMatch) == [nil, etag])
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304])
            try await harness.gate.flush()
            let usage = try await harness.gate.quota.usage(on: PacificDay(containing: GateHarness.start))
            #expect(usage.map(\.units) == [2])
            #expect(harness.api.unitsUsed == 2, "the ledger counts what the API counts")
        }
    }

    @Test("a 429 storm is retried after 1, 2 and 4 s, then opens the circuit for an hour; the server hears nothing meanwhile",
          arguments: TransportKind.allCases)
    func rateLimitStorm(kind: TransportKind) async throws {
        let harness = try await GateHarness(kind)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            harness.api.updateBehaviour { $0.rateLimitStorm = .init() }

            let first = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(first.status.code == 429)
            #expect(harness.clock.sleeps == [.seconds(1), .seconds(2), .seconds(4)])
            #expect(harness.api.receivedRequests.count == 4)

            // The 5th consecutive rate limit trips the circuit: no retry after it.
            let second = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(second.status.code == 429)
            #expect(harness.api.receivedRequests.count == 5)
            #expect(try await harness.gate.circuit.state(for: "videos.list") == .open)

            let refusal = await #expect(throws: TollgateError.self) {
                try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            }
            #expect((3590...3600).contains(refusal?.retryAfter ?? 0))
            harness.clock.base.advance(by: .seconds(3599))
            await #expect(throws: TollgateError.self) {
                try await harness.gate.send(harness.video("v2"), endpoint: "videos.list")
            }
            #expect(harness.api.receivedRequests.count == 5)

            // An hour later the storm is over: the probe succeeds and the circuit closes.
            harness.api.updateBehaviour { $0.rateLimitStorm = nil }
            harness.clock.base.advance(by: .seconds(2))
            let recovered = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(recovered.status.code == 200)
            #expect(try await harness.gate.circuit.state(for: "videos.list") == .closed)
        }
    }

    @Test("Retry-After from the server wins over the schedule")
    func retryAfterWins() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            harness.api.updateBehaviour { $0.rateLimitStorm = .init(count: 2, retryAfter: "7") }
            let answer = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(answer.status.code == 200)
            #expect(answer.attempts == 3)
            #expect(answer.unitsCharged == 3)
            #expect(harness.clock.sleeps == [.seconds(7), .seconds(7)])
        }
    }

    @Test("with the day's quota spent, a stored answer is served stale; with nothing stored, quotaExceeded")
    func quotaSpent() async throws {
        // YouTube's own header says must-revalidate, which forbids serving stale (RFC 9111 §4.2.4);
        // max-age=0 without it keeps every answer revalidated and lets a stored one stand in.
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 0
        let harness = try await GateHarness(quotaLimit: 3, behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let stored = try await harness.gate.send(harness.video("a"), endpoint: "videos.list")
            _ = try await harness.gate.send(harness.video("b"), endpoint: "videos.list")
            _ = try await harness.gate.send(harness.video("c"), endpoint: "videos.list")
            let sent = harness.api.receivedRequests.count

            let stale = try await harness.gate.send(harness.video("a"), endpoint: "videos.list")
            #expect(stale.source == .stale(.quotaExhausted))
            #expect(stale.body == stored.body)
            #expect(stale.unitsCharged == 0)

            let refusal = await #expect(throws: TollgateError.self) {
                try await harness.gate.send(harness.video("d"), endpoint: "videos.list")
            }
            guard case .quotaExceeded(let endpoint, let cost, let remaining, let resetsAt) = refusal else {
                Issue.record("expected quotaExceeded, got \(String(describing: refusal))")
                return
            }
            #expect(endpoint == "videos.list" && cost == 1 && remaining == 0)
            #expect(resetsAt == PacificDay(containing: GateHarness.start).nextReset)
            #expect(harness.api.receivedRequests.count == sent)
        }
    }

    @Test("the server's 403 quotaExceeded marks the bucket exhausted: no more requests today")
    func serverSaysQuotaSpent() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.dailyQuota = 2
        behaviour.maxAge = 0  // without YouTube's must-revalidate, which forbids serving stale
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let stored = try await harness.gate.send(harness.video("a"), endpoint: "videos.list")
            _ = try await harness.gate.send(harness.video("b"), endpoint: "videos.list")
            harness.api.modify(path: "/youtube/v3/videos", query: "id=a&part=snippet")

            await #expect(throws: TollgateError.self) {
                try await harness.gate.send(harness.video("c"), endpoint: "videos.list")
            }
            #expect(harness.api.receivedRequests.last?.status == 403)
            let status = try await harness.gate.quota.status()
            #expect(status.isExhausted)
            #expect(status.remaining == 0)

            let sent = harness.api.receivedRequests.count
            let stale = try await harness.gate.send(harness.video("a"), endpoint: "videos.list")
            #expect(stale.source == .stale(.quotaExhausted))
            #expect(stale.body == stored.body)
            #expect(harness.api.receivedRequests.count == sent)
        }
    }

    @Test("a second process on the same file sees the open circuit, the spent quota and the full throttle window")
    func secondProcessSeesState() async throws {
        let harness = try await GateHarness(quotaLimit: 10_000, throttleLimit: 2)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let nowMs = String(Int64(GateHarness.start.timeIntervalSince1970 * 1000))
            // Fill the channels.list throttle window, open the videos.list circuit by hand, then spend
            // the day's quota (one bucket for all three endpoints: each refusal comes from the step
            // that runs first for its endpoint).
            _ = try await harness.gate.send(harness.video("t1"), endpoint: "channels.list")
            _ = try await harness.gate.send(harness.video("t2"), endpoint: "channels.list")
            try await harness.gate.circuit.forceOpen(endpoint: "videos.list", for: .seconds(600))
            try await harness.gate.quota.markExhausted(endpoint: "search.list")
            let sent = harness.api.receivedRequests.count

            let cases: [(String, String)] = [("videos.list", "circuitOpen"), ("search.list", "quotaExceeded"), ("channels.list", "throttled")]
            for (endpoint, expected) in cases {
                let results = try await WorkerProcess.runConcurrently("gate-send", count: 1) { _ in
                    [harness.path, nowMs, harness.api.url("videos", ["id": "other"]).absoluteString, endpoint, "10000", "2"]
                }
                #expect(results.first?.status == 0, "\(results.first?.stderr ?? "")")
                #expect(results.first?.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "refused \(expected)")
            }
            #expect(harness.api.receivedRequests.count == sent)
        }
    }

    @Test("a repeated-refresh workload (200 resources, 20 rounds, 2 % changed per round): under 10 % of the units where a 304 is free; on YouTube, where a 304 costs 1, every request is charged as Google charges it",
          arguments: [true, false])
    func repeatedRefreshWorkload(freeNotModified: Bool) async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.notModifiedUnits = freeNotModified ? 0 : 1
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
            if freeNotModified { configuration.quota.setNotModifiedCost(.free) }
            let gate = try Gate(store: harness.store, transport: URLSessionTransport(), configuration: configuration,
                                clock: harness.clock)
            let ids = (0..<200).map { "v\($0)" }
            for round in 0..<20 {
                if round > 0 {
                    for id in ids.shuffled().prefix(4) {
                        harness.api.modify(path: "/youtube/v3/videos", query: "id=\(id)&part=snippet")
                    }
                }
                for id in ids {
                    let answer = try await gate.send(harness.video(id), endpoint: "videos.list")
                    #expect(answer.status.code == 200)
                }
            }
            try await gate.flush()
            let withGate = try await gate.quota.usage(on: PacificDay(containing: GateHarness.start)).map(\.units).reduce(0, +)
            // Without the gate every request is a full GET that costs 1 unit: 200 × 20.
            let withoutGate = 200 * 20 * QuotaConfiguration.youTubeDataAPIv3.effectiveCost(for: "videos.list").units
            if freeNotModified {
                #expect(withGate == 200 + 19 * 4)
                #expect(Double(withGate) < 0.10 * Double(withoutGate))
            } else {
                // Bandwidth saved (3,724 answers were 304s), not units: what saves those is fresh_for.
                #expect(withGate == withoutGate)
                #expect(harness.api.receivedRequests.filter { $0.status == 304 }.count == 19 * 196)
            }
            #expect(harness.api.unitsUsed == withGate, "the ledger counts what the API counts")
        }
    }
}
