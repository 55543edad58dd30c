import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

@Suite("An answer's writes after the answer")
struct AfterAnswerWriteTests {
    /// A gate over the harness's store on the wall clock: the server's Date header is the wall
    /// clock's, so freshness lifetimes only mean what they say on it.
    static func wallClockGate(_ harness: GateHarness) throws -> Gate {
        try Gate(store: harness.store, transport: URLSessionTransport(),
                 configuration: GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000), clock: SystemClock())
    }

    @Test("a free 304's refund is written after its answer and before the next admission: a 2-unit budget pays for every revalidation",
          arguments: TransportKind.allCases, [true, false])
    func refundBeforeNextAdmission(kind: TransportKind, coalesces: Bool) async throws {
        // 1 unit for the 200; each 304 of an API that does not charge it (GitHub's rule) is charged
        // 1 and refunded. Were a refund still unwritten when the next request is admitted, that
        // request would need a third unit and be refused. Without coalescing, only the admission's
        // wait for the earlier writes keeps this true.
        let harness = try await GateHarness(kind, quotaLimit: 2)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            var configuration = GateHarness.configuration(quotaLimit: 2, throttleLimit: 10_000)
            configuration.quota.setNotModifiedCost(.free)
            configuration.cache.coalescesRequests = coalesces
            let gate = try Gate(store: harness.store, transport: kind.make(), configuration: configuration, clock: harness.clock)
            let first = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(first.source == .network)
            for _ in 0..<30 {
                let answer = try await gate.send(harness.video("v1"), endpoint: "videos.list")
                #expect(answer.source == .revalidated)
                #expect(answer.unitsCharged == 0)
                #expect(answer.body == first.body)
            }
            try await gate.flush()
            let day = PacificDay(containing: GateHarness.start)
            #expect(try await gate.quota.usage(on: day).map(\.units) == [1])
            #expect(try await gate.quota.discrepancies().isEmpty)
            #expect(harness.api.receivedRequests.map(\.status) == [200] + Array(repeating: 304, count: 30))
            // Every revision reached the file: 30 revalidations counted, the lease given back.
            let revalidations = try await harness.store.read { db in
                try db.fetchValue(sql: "SELECT COALESCE(SUM(revalidations), 0) FROM cache_stats_daily").int ?? -1
            }
            #expect(revalidations == 30)
            let leases = try await harness.store.read { db in try db.fetchValue(sql: "SELECT COUNT(*) FROM cache_leases").int ?? -1 }
            #expect(leases == 0)
        }
    }

    @Test("a 304 that costs 1 of a 100-unit call is settled after its answer and before the next admission",
          arguments: [true, false])
    func settlementBeforeNextAdmission(coalesces: Bool) async throws {
        // 100 units for the 200, then each revalidation is admitted at 100 and settled at 1: 230
        // units pay for 30 of them. Were a settlement still unwritten when the next request is
        // admitted, 99 more units would be missing and that request refused.
        var behaviour = FakeAPIBehaviour()
        behaviour.quotaModel = .singlePool
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            var configuration = GateHarness.configuration(quotaLimit: 10_000, throttleLimit: 10_000)
            configuration.quota = .youTubeDataAPIv3SinglePool
            configuration.quota.bucketLimits[QuotaConfiguration.youTubeBucket] = 230
            configuration.cache.coalescesRequests = coalesces
            let gate = try Gate(store: harness.store, transport: URLSessionTransport(), configuration: configuration,
                                clock: harness.clock)
            let request = HTTPRequest(url: harness.api.url("search", ["q": "settle", "part": "snippet"]))
            #expect(try await gate.send(request, endpoint: "search.list").unitsCharged == 100)
            for _ in 0..<30 {
                let answer = try await gate.send(request, endpoint: "search.list")
                #expect(answer.source == .revalidated)
                #expect(answer.unitsCharged == 1)
            }
            try await gate.flush()
            #expect(try await gate.quota.usage(on: PacificDay(containing: GateHarness.start)).map(\.units) == [130])
            #expect(try await gate.quota.discrepancies().isEmpty)
            #expect(harness.api.unitsUsed == 130, "what the fake YouTube counted")
        }
    }

    @Test("the answer to a 304 is the stored response as its write leaves it: merged headers, Age, body")
    func answerMatchesWrittenEntry() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 0
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            _ = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            try await harness.clock.sleep(for: .seconds(30))
            let revalidated = try await harness.gate.send(harness.video("v1"), endpoint: "videos.list")
            #expect(revalidated.source == .revalidated)
            try await harness.gate.flush()
            // Read at the same instant as the answer (the clock moves only when told): the same age.
            let lookup = try await harness.gate.cache.lookup(harness.video("v1"), endpoint: "videos.list")
            let stored = try #require(lookup.cachedResponse)
            #expect(stored.headerFields == revalidated.response.headerFields)
            #expect(stored.age == revalidated.age)
            #expect(stored.body == revalidated.body)
        }
    }

    @Test("a 304 that makes the entry fresh again: the very next request is a fresh hit, not another revalidation")
    func freshRightAfterRevalidation() async throws {
        // max-age=2 on the wall clock (the Date has whole seconds, so up to one of them is age
        // already), and two real seconds and a bit between rounds to let the entry go stale.
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 2
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.wallClockGate(harness)
            _ = try await gate.send(harness.video("v1"), endpoint: "videos.list")
            for _ in 0..<2 {
                try await Task.sleep(for: .milliseconds(2_100))
                let revalidated = try await gate.send(harness.video("v1"), endpoint: "videos.list")
                #expect(revalidated.source == .revalidated)
                // Sent while the revision may still be on its way to the file: the lookup waits for it.
                let next = try await gate.send(harness.video("v1"), endpoint: "videos.list")
                #expect(next.source == .cache)
            }
            #expect(harness.api.receivedRequests.map(\.status) == [200, 304, 304])
        }
    }

    @Test("a 200 is stored just after its answer: the very next request for it is a fresh hit, and the file has it after flush")
    func storedRightAfterAnswer() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 60
        let harness = try await GateHarness(behaviour: behaviour)
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            let gate = try Self.wallClockGate(harness)
            for id in 0..<10 {
                let first = try await gate.send(harness.video("v\(id)"), endpoint: "videos.list")
                #expect(first.source == .network)
                let next = try await gate.send(harness.video("v\(id)"), endpoint: "videos.list")
                #expect(next.source == .cache)
                #expect(next.body == first.body)
            }
            #expect(harness.api.receivedRequests.count == 10)
            try await gate.flush()
            #expect(try await harness.store.cacheTotals().entries == 10)
            #expect(try await gate.quota.usage().map(\.units) == [10])
        }
    }

    @Test("another process's coalescing lease is not a ledger failure: under fail-open the request still pays when it goes")
    func anotherProcessLeaseUnderFailOpen() async throws {
        let harness = try await GateHarness()
        try await withStopping(harness, stop: { await $0.stop() }) { harness in
            var configuration = GateHarness.configuration(quotaLimit: 100, throttleLimit: 10_000)
            configuration.ledgerFailurePolicy = .failOpen
            configuration.cache.coalescingWait = .milliseconds(200)
            let gate = try Gate(store: harness.store, transport: URLSessionTransport(), configuration: configuration,
                                clock: harness.clock)
            let request = harness.video("v1")
            // Another process leads this resource's fetch (its lease runs 30 s) and never answers.
            let startedMs = Int64(GateHarness.start.timeIntervalSince1970 * 1000)
            let theirs = CoalescingLease(holder: "another process", startedMs: startedMs, expiresMs: startedMs + 30_000)
            _ = try await harness.store.acquireCoalescingLease(resourceKey: try gate.cache.key(for: request).resourceKey,
                                                               lease: theirs)

            let answer = try await gate.send(request, endpoint: "videos.list")
            #expect(answer.source == .network)
            #expect(answer.unitsCharged == 1)
            try await gate.flush()
            #expect(try await gate.quota.usage(on: PacificDay(containing: GateHarness.start)).map(\.units) == [1])
            #expect(harness.api.receivedRequests.count == 1)
        }
    }
}
