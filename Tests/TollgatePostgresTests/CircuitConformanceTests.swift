import Foundation
import Testing
import TollgateCore
import TollgateSQLite

/// The circuit breaker's store operations, written once and run against every available store.
/// Time passes on a ``ConformanceTime``: the SQLite store is given it, PostgreSQL's `now()` reads
/// it, so an open duration is stepped over rather than waited out.
@Suite("Circuit store conformance")
struct CircuitConformanceTests {
    private let policy = CircuitPolicy(
        failureThreshold: 3, openDuration: .milliseconds(1_500), probeLeaseDuration: .milliseconds(1_500)
    )

    private func trip(_ store: any ConformingStore, endpoint: String = "e", at now: Date = Date()) async throws {
        for _ in 0..<policy.failureThreshold {
            _ = try await store.recordCircuitOutcome(.failure, endpoint: endpoint, probeToken: nil, policy: policy, at: now)
        }
    }

    @Test("a closed circuit allows without writing a row; the threshold's failures open it and it refuses",
          arguments: StoreBackend.available)
    func opensAtTheThreshold(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let first = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "t", at: Date())
            #expect(first.decision == .allowed)
            #expect(try await store.circuit(endpoint: "e") == nil)
            try await trip(store)
            let record = try #require(try await store.circuit(endpoint: "e"))
            #expect(record.state == .open)
            #expect(record.trips == 1)
            let refused = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "t", at: Date())
            guard case .refused(let retryAfter, let state) = refused.decision else {
                Issue.record("allowed while open: \(refused.decision)")
                return
            }
            #expect(state == .open)
            #expect(retryAfter > 0 && retryAfter <= 1.5)
            let history = try await store.circuitTransitions(endpoint: "e", limit: 10)
            #expect(history.map(\.to) == [.open])
        }
    }

    @Test("after the open duration one caller gets the probe, the next is refused, and a successful probe closes it",
          arguments: StoreBackend.available)
    func probesOnce(backend: StoreBackend) async throws {
        let time = ConformanceTime()
        try await backend.withStore(time: time) { store in
            try await trip(store, at: time.now())
            try await time.pass(.milliseconds(1_600))
            let probe = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "p1", at: time.now())
            let token = try #require(probe.decision.probe?.token)
            #expect(token == "p1")
            let second = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "p2", at: time.now())
            #expect(!second.decision.isAllowed)
            let recording = try await store.recordCircuitOutcome(.success, endpoint: "e", probeToken: token, policy: policy, at: time.now())
            #expect(recording.record.state == .closed)
            let history = try await store.circuitTransitions(endpoint: "e", limit: 10)
            #expect(history.map(\.to) == [.closed, .halfOpen, .open])
        }
    }

    @Test("an expired probe lease lets the next caller probe", arguments: StoreBackend.available)
    func expiredLease(backend: StoreBackend) async throws {
        let time = ConformanceTime()
        try await backend.withStore(time: time) { store in
            try await trip(store, at: time.now())
            try await time.pass(.milliseconds(1_600))
            let first = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "dead", at: time.now())
            #expect(first.decision.probe != nil)
            try await time.pass(.milliseconds(1_600))
            let next = try await store.admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "alive", at: time.now())
            #expect(next.decision.probe?.token == "alive")
        }
    }

    @Test("many tasks on several stores admitted at once to a half-open circuit get one probe between them",
          arguments: StoreBackend.available)
    func oneProbeFleetWide(backend: StoreBackend) async throws {
        let time = ConformanceTime()
        let slowLease = CircuitPolicy(
            failureThreshold: 3, openDuration: .milliseconds(400), probeLeaseDuration: .seconds(30)
        )
        try await backend.withStores(count: 4, time: time) { stores in
            for _ in 0..<3 {
                _ = try await stores[0].recordCircuitOutcome(.failure, endpoint: "e", probeToken: nil, policy: slowLease, at: time.now())
            }
            try await time.pass(.milliseconds(450))
            let decisions = try await withThrowingTaskGroup(of: CircuitDecision.self) { group in
                for index in 0..<24 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        try await store.admitCircuitRequest(endpoint: "e", policy: slowLease, probeToken: "t\(index)", at: time.now()).decision
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(decisions.filter { $0.probe != nil }.count == 1)
            #expect(decisions.filter { !$0.isAllowed }.count == 23)
        }
    }

    @Test("failures recorded at once from several stores are all counted", arguments: StoreBackend.available)
    func noLostFailures(backend: StoreBackend) async throws {
        let patient = CircuitPolicy(failureThreshold: 1_000)
        try await backend.withStores(count: 4) { stores in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        _ = try await store.recordCircuitOutcome(.failure, endpoint: "e", probeToken: nil, policy: patient, at: Date())
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await stores[0].circuit(endpoint: "e")?.consecutiveFailures == 40)
        }
    }

    @Test("a circuit opened through one store refuses through another at once", arguments: StoreBackend.available)
    func sharedAcrossStores(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores in
            let transition = try await stores[0].forceOpenCircuit(
                endpoint: "e", duration: .seconds(60), policy: policy, at: Date()
            )
            #expect(transition.to == .open)
            let decision = try await stores[1].admitCircuitRequest(endpoint: "e", policy: policy, probeToken: "t", at: Date()).decision
            #expect(!decision.isAllowed)
            #expect((decision.retryAfter ?? 0) > 55)
        }
    }

    @Test("reset closes one circuit or all, recording a transition for each changed one, and bad input is refused",
          arguments: StoreBackend.available)
    func resetAndInvalidInput(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            try await trip(store, endpoint: "a")
            try await trip(store, endpoint: "b")
            let one = try await store.resetCircuits(endpoint: "a", at: Date())
            #expect(one.map(\.endpoint) == ["a"])
            #expect(try await store.circuit(endpoint: "a")?.state == .closed)
            let all = try await store.resetCircuits(endpoint: nil, at: Date())
            #expect(all.map(\.endpoint) == ["b"])
            #expect(try await store.allCircuits().map(\.state) == [.closed, .closed])
            await #expect(throws: StoreRefusal.self) {
                try await store.admitCircuitRequest(endpoint: "", policy: policy, probeToken: "t", at: Date())
            }
            await #expect(throws: StoreRefusal.self) {
                try await store.forceOpenCircuit(endpoint: "a", duration: .zero, policy: policy, at: Date())
            }
            await #expect(throws: StoreRefusal.self) {
                try await store.recordCircuitOutcome(
                    .failure, endpoint: "a", probeToken: nil, policy: CircuitPolicy(failureThreshold: 0), at: Date()
                )
            }
        }
    }
}
