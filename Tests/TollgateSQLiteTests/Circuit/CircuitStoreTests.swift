import Foundation
import Testing
import TollgateTestSupport
import TollgateCore
import TollgateSQLite

/// The circuit's store operations on a real file.
@Suite("Circuit store operations")
struct CircuitStoreTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let policy = CircuitPolicy()

    func trip(_ store: SQLiteStore, _ endpoint: String, outcome: CircuitOutcome = .failure, at now: Date) async throws {
        for _ in 0..<5 {
            _ = try await store.recordCircuitOutcome(outcome, endpoint: endpoint, probeToken: nil, policy: policy, at: now)
        }
    }

    @Test("an open circuit survives closing and reopening the store, with its counters and open-until")
    func reopenedStoreKeepsState() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("circuit.sqlite")
        do {
            let store = try SQLiteStore(path: path)
            try await trip(store, "/api/activities", at: start)
        }
        let reopened = try SQLiteStore(path: path)
        let record = try #require(try await reopened.circuit(endpoint: "/api/activities"))
        #expect(record.state == .open && record.consecutiveFailures == 5 && record.trips == 1)
        #expect(record.openedAt == start && record.openUntil == start.addingTimeInterval(60))
        #expect(record.openDuration == .seconds(60))
        let admission = try await reopened.admitCircuitRequest(
            endpoint: "/api/activities", policy: policy, probeToken: "t", at: start.addingTimeInterval(20))
        #expect(admission.decision == .refused(retryAfter: 40, state: .open))
    }

    @Test("every transition is appended to the history with its reason, and the row mirrors the machine")
    func historyIsAppended() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("history.sqlite"))
        try await trip(store, "/api/streams", at: start)
        let probeTime = start.addingTimeInterval(60)
        let admission = try await store.admitCircuitRequest(endpoint: "/api/streams", policy: policy, probeToken: "p1",
                                                            at: probeTime)
        #expect(admission.decision.probe?.token == "p1")
        let stored = try #require(try await store.circuit(endpoint: "/api/streams"))
        #expect(stored.state == .halfOpen && stored.probeOwner == "p1")
        #expect(stored.probeLeaseUntil == probeTime.addingTimeInterval(30))
        _ = try await store.recordCircuitOutcome(.success, endpoint: "/api/streams", probeToken: "p1", policy: policy,
                                                 at: probeTime)

        let history = try await store.circuitTransitions(endpoint: "/api/streams", limit: 10)
        #expect(history.map { "\($0.from.rawValue)→\($0.to.rawValue): \($0.reason)" } == [
            "half_open→closed: probe succeeded (recovered)",
            "open→half_open: open duration elapsed",
            "closed→open: threshold reached (5/5 consecutive failures); open for 60 s",
        ])
        #expect(history.last?.at == start)
        let row = try await store.read { db in
            try db.fetchOne(sql: "SELECT state, consecutive_failures, probe_owner, open_until_ms FROM circuits WHERE endpoint = ?",
                            arguments: ["/api/streams"])
        }
        #expect(row?.values == [.text("closed"), .integer(0), .null, .null])
    }

    @Test("the circuit_status view shows an open circuit's seconds left, and an expired one as half-open")
    func statusView() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("view.sqlite"))
        let now = Date()
        try await trip(store, "/fresh", at: now)
        try await trip(store, "/stale", at: now.addingTimeInterval(-120))
        let rows = try await store.read { db in
            try db.fetchAll(sql: "SELECT endpoint, state, consecutive_failures, failure_threshold, retry_in_seconds, trips "
                + "FROM circuit_status")
        }
        #expect(rows.count == 2)
        #expect(rows[0].values[0...1] == [.text("/fresh"), .text("open")])
        let retryIn = try #require(rows[0][4].int)
        let elapsed = Int(Date().timeIntervalSince(now).rounded(.up))
        #expect((60 - elapsed - 1...60).contains(retryIn))
        #expect(rows[1].values == [.text("/stale"), .text("half_open"), .integer(5), .integer(5), .integer(0), .integer(1)])
    }

    @Test("reset of one endpoint or of all closes them and records a reset transition for each changed circuit")
    func resetOneAndAll() async throws {
        let store = try SQLiteStore(location: .inMemory)
        try await trip(store, "/a", at: start)
        try await trip(store, "/b", at: start)
        _ = try await store.recordCircuitOutcome(.failure, endpoint: "/c", probeToken: nil, policy: policy, at: start)
        _ = try await store.recordCircuitOutcome(.success, endpoint: "/c", probeToken: nil, policy: policy, at: start)

        let one = try await store.resetCircuits(endpoint: "/a", at: start)
        #expect(one.map(\.endpoint) == ["/a"])
        #expect(try await store.circuit(endpoint: "/b")?.state == .open)
        #expect(try await store.resetCircuits(endpoint: "/unknown", at: start).isEmpty)

        let all = try await store.resetCircuits(endpoint: nil, at: start)
        #expect(all.map(\.endpoint) == ["/b"])  // /a is already clean, /c was reset by its success
        #expect(try await store.allCircuits().allSatisfy { $0.state == .closed && $0.consecutiveFailures == 0 })
        #expect(try await store.circuitTransitions(endpoint: nil, limit: 100).filter { $0.reason == "reset" }.count == 2)
    }

    @Test("force-open creates the row when needed and refuses a duration that is not positive")
    func forceOpen() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let transition = try await store.forceOpenCircuit(endpoint: "/x", duration: .seconds(300), policy: policy, at: start)
        #expect(transition.from == .closed && transition.to == .open)
        #expect(try await store.circuit(endpoint: "/x")?.openUntil == start.addingTimeInterval(300))
        await #expect(throws: StoreRefusal.self) {
            _ = try await store.forceOpenCircuit(endpoint: "/x", duration: .zero, policy: policy, at: start)
        }
    }

    @Test("bad input is refused with a typed error and nothing stored changes")
    func badInput() async throws {
        let store = try SQLiteStore(location: .inMemory)
        try await trip(store, "/a", at: start)
        let before = try await store.circuit(endpoint: "/a")
        await #expect(throws: StoreRefusal.invalidArgument("a circuit's endpoint must not be empty")) {
            _ = try await store.recordCircuitOutcome(.failure, endpoint: "", probeToken: nil, policy: policy, at: start)
        }
        await #expect(throws: StoreRefusal.self) {
            _ = try await store.recordCircuitOutcome(.failure, endpoint: "/a", probeToken: nil,
                                                     policy: CircuitPolicy(failureThreshold: 0), at: start)
        }
        #expect(try await store.circuit(endpoint: "/a") == before)
        #expect(try await store.allCircuits().count == 1)
    }

    @Test("the history across endpoints reads newest first, and a rate-limit trip says so")
    func historyOrderAcrossEndpoints() async throws {
        let store = try SQLiteStore(location: .inMemory)
        try await trip(store, "/a", at: start)
        try await trip(store, "/b", outcome: .rateLimited, at: start.addingTimeInterval(1))
        let history = try await store.circuitTransitions(endpoint: nil, limit: 1)
        #expect(history.map(\.endpoint) == ["/b"])
        #expect(history.first?.reason == "threshold reached (5/5 rate-limited consecutive failures); open for 3600 s")
    }
}
