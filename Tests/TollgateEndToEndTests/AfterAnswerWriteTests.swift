import Foundation
import HTTPTypes
import Testing
import Tollgate
import TollgateFakeAPI
import TollgateTestSupport

@Suite("A 304's bookkeeping after the answer")
struct AfterAnswerWriteTests {
    @Test("a 304's refund is written after its answer and before the next admission: a 2-unit budget pays for every revalidation",
          arguments: TransportKind.allCases, [true, false])
    func refundBeforeNextAdmission(kind: TransportKind, coalesces: Bool) async throws {
        // 1 unit for the 200; each 304 is charged 1 and refunded. Were a refund still unwritten
        // when the next request is admitted, that request would need a third unit and be refused.
        // Without coalescing, only the admission's wait for the earlier writes keeps this true.
        let harness = try await GateHarness(kind, quotaLimit: 2)
        var configuration = GateHarness.configuration(quotaLimit: 2, throttleLimit: 10_000)
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
            try db.fetchValue("SELECT COALESCE(SUM(revalidations), 0) FROM cache_stats_daily").int ?? -1
        }
        #expect(revalidations == 30)
        let leases = try await harness.store.read { db in try db.fetchValue("SELECT COUNT(*) FROM cache_leases").int ?? -1 }
        #expect(leases == 0)
        await harness.stop()
    }

    @Test("the answer to a 304 is the stored response as its write leaves it: merged headers, Age, body")
    func answerMatchesWrittenEntry() async throws {
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 0
        let harness = try await GateHarness(behaviour: behaviour)
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
        await harness.stop()
    }
}
