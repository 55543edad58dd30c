import Foundation
import Testing
import TollgateTestSupport
import Tollgate

/// Seed 001's test list, plus the issue's additions, on real files with a manual clock.
@Suite("Circuit breaker")
struct CircuitBreakerTests {
    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock = ManualClock()
    let breaker: CircuitBreaker
    let endpoint = "/api/activities"

    init() throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("circuit.sqlite"))
        breaker = CircuitBreaker(storage: store, clock: clock)
    }

    func fail(_ count: Int, endpoint: String? = nil, status: Int = 503) async throws {
        for _ in 0..<count { try await breaker.recordResult(endpoint: endpoint ?? self.endpoint, status: status) }
    }

    @Test("a circuit starts closed and allows requests")
    func startsClosed() async throws {
        #expect(try await breaker.state(for: endpoint) == .closed)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .allowed)
        #expect(try await breaker.failureCount(for: endpoint) == 0)
        #expect(try await breaker.timeRemaining(for: endpoint) == nil)
    }

    @Test("it stays closed on success, and a success resets the failure count")
    func staysClosedOnSuccess() async throws {
        try await fail(3)
        try await breaker.recordResult(endpoint: endpoint, outcome: .success)
        #expect(try await breaker.failureCount(for: endpoint) == 0)
        for _ in 0..<10 { try await breaker.recordResult(endpoint: endpoint, status: 200) }
        #expect(try await breaker.state(for: endpoint) == .closed)
    }

    @Test("4 failures keep it closed; the 5th opens it")
    func fifthFailureOpens() async throws {
        try await fail(4)
        #expect(try await breaker.state(for: endpoint) == .closed)
        #expect(try await breaker.failureCount(for: endpoint) == 4)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint).isAllowed)
        try await fail(1)
        #expect(try await breaker.state(for: endpoint) == .open)
        #expect(try await breaker.failureCount(for: endpoint) == 5)
    }

    @Test("while open, requests are refused with a retry-after that counts down, as circuitOpen")
    func blockedWhileOpen() async throws {
        try await fail(5)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 60, state: .open))
        clock.advance(by: .seconds(15))
        await #expect(throws: TollgateError.circuitOpen(retryAfter: 45)) {
            try await breaker.checkAllowed(endpoint: endpoint)
        }
        clock.advance(by: .milliseconds(44_500))
        let decision = try await breaker.shouldAllowRequest(endpoint: endpoint)
        #expect(decision.retryAfter == 0.5)
        #expect(TollgateError.circuitOpen(retryAfter: decision.retryAfter ?? 0).description
            == "Service temporarily unavailable due to repeated failures. Please try again in 1 seconds.")
    }

    @Test("endpoints have independent circuits")
    func endpointsAreIndependent() async throws {
        try await fail(5, endpoint: "/api/activities")
        try await fail(4, endpoint: "/api/streams")
        #expect(try await breaker.state(for: "/api/activities") == .open)
        #expect(try await breaker.state(for: "/api/streams") == .closed)
        #expect(try await breaker.shouldAllowRequest(endpoint: "/api/streams") == .allowed)
        #expect(try await breaker.failureCount(for: "/api/streams") == 4)
    }

    @Test("reset closes one endpoint, or every endpoint with nil, and leaves transitions in the history")
    func resetOneAndAll() async throws {
        try await fail(5, endpoint: "/a")
        try await fail(5, endpoint: "/b")
        try await fail(5, endpoint: "/c")
        try await breaker.reset(endpoint: "/a")
        #expect(try await breaker.state(for: "/a") == .closed)
        #expect(try await breaker.failureCount(for: "/a") == 0)
        #expect(try await breaker.state(for: "/b") == .open)
        try await breaker.reset()
        for name in ["/a", "/b", "/c"] {
            #expect(try await breaker.state(for: name) == .closed)
            #expect(try await breaker.shouldAllowRequest(endpoint: name) == .allowed)
        }
        let resets = try await breaker.history().filter { $0.reason == "reset" }
        #expect(resets.map(\.endpoint).sorted() == ["/a", "/b", "/c"])
    }

    @Test("state, failure count and time remaining report the circuit")
    func monitoring() async throws {
        try await fail(2)
        #expect(try await breaker.failureCount(for: endpoint) == 2)
        #expect(try await breaker.timeRemaining(for: endpoint) == nil)
        try await fail(3)
        clock.advance(by: .seconds(20))
        #expect(try await breaker.state(for: endpoint) == .open)
        #expect(try await breaker.timeRemaining(for: endpoint) == 40)
        clock.advance(by: .seconds(40))
        #expect(try await breaker.state(for: endpoint) == .halfOpen)
        #expect(try await breaker.timeRemaining(for: endpoint) == nil)
    }

    @Test("full flow: 5 failures → open → blocked for 60 s → half-open → probe succeeds → closed")
    func fullFlow() async throws {
        for attempt in 1...5 {
            #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .allowed, "attempt \(attempt)")
            try await breaker.recordResult(endpoint: endpoint, error: URLError(.timedOut))
        }
        for second in stride(from: 0, to: 60, by: 10) {
            #expect(try await breaker.shouldAllowRequest(endpoint: endpoint)
                == .refused(retryAfter: TimeInterval(60 - second), state: .open))
            clock.advance(by: .seconds(10))
        }
        let probe = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        #expect(try await breaker.state(for: endpoint) == .halfOpen)
        #expect(try await breaker.recordResult(endpoint: endpoint, status: 200, probe: probe) == .closed)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .allowed)
        #expect(try await breaker.failureCount(for: endpoint) == 0)
        #expect(try await breaker.history(endpoint: endpoint).map(\.to) == [.closed, .halfOpen, .open])
    }

    @Test("5 consecutive 429s open the circuit for 1 hour")
    func rateLimitsOpenForAnHour() async throws {
        try await fail(5, status: 429)
        #expect(try await breaker.timeRemaining(for: endpoint) == 3600)
        clock.advance(by: .seconds(3599))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 1, state: .open))
        clock.advance(by: .seconds(1))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint).probe != nil)
    }

    @Test("403 rateLimitExceeded counts as a rate limit; 403 quotaExceeded, 404 and other 4xx do not count")
    func classifiedStatuses() async throws {
        let rateLimited = Data(#"{"error":{"code":403,"errors":[{"domain":"usageLimits","reason":"rateLimitExceeded"}]}}"#.utf8)
        let quota = Data(#"{"error":{"code":403,"errors":[{"domain":"youtube.quota","reason":"quotaExceeded"}]}}"#.utf8)
        for _ in 0..<10 {
            try await breaker.recordResult(endpoint: endpoint, status: 404)
            try await breaker.recordResult(endpoint: endpoint, status: 403, body: quota)
            try await breaker.recordResult(endpoint: endpoint, status: 400)
        }
        #expect(try await breaker.failureCount(for: endpoint) == 0)
        for _ in 0..<5 { try await breaker.recordResult(endpoint: endpoint, status: 403, body: rateLimited) }
        #expect(try await breaker.state(for: endpoint) == .open)
        #expect(try await breaker.timeRemaining(for: endpoint) == 3600)
    }

    @Test("a failed probe reopens the circuit for another open duration")
    func failedProbeReopens() async throws {
        try await fail(5)
        clock.advance(by: .seconds(60))
        let probe = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        #expect(try await breaker.recordResult(endpoint: endpoint, status: 502, probe: probe) == .open)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 60, state: .open))
        #expect(try await breaker.record(for: endpoint)?.trips == 2)
    }

    @Test("a reopened store, with a new breaker, keeps an open circuit open")
    func reopenedStoreKeepsCircuitOpen() async throws {
        try await fail(5)
        clock.advance(by: .seconds(30))
        let reopened = try SQLiteStore(path: store.locationPath)
        let restarted = CircuitBreaker(storage: reopened, clock: clock)
        #expect(try await restarted.state(for: endpoint) == .open)
        #expect(try await restarted.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 30, state: .open))
    }

    @Test("a probe lease that expires lets the next caller probe; until then others are refused")
    func probeLeaseExpires() async throws {
        try await fail(5)
        clock.advance(by: .seconds(60))
        let abandoned = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        clock.advance(by: .seconds(29))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 1, state: .halfOpen))
        clock.advance(by: .seconds(1))
        let next = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        #expect(next.token != abandoned.token)
        // The abandoned probe's late answer cannot decide for the new one.
        #expect(try await breaker.recordResult(endpoint: endpoint, status: 503, probe: abandoned) == .halfOpen)
        #expect(try await breaker.recordResult(endpoint: endpoint, status: 200, probe: next) == .closed)
    }

    @Test("a wall clock set back an hour leaves at most 60 s to wait, and the probe comes 60 s later")
    func backwardClockJump() async throws {
        try await fail(5)
        clock.advance(by: .seconds(-3600))
        #expect(try await breaker.timeRemaining(for: endpoint) == 60)
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 60, state: .open))
        clock.advance(by: .seconds(60))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint).probe != nil)
    }

    @Test("per-endpoint policies override the threshold and the open duration")
    func perEndpointPolicy() async throws {
        let configured = CircuitBreaker(
            storage: store,
            configuration: CircuitBreakerConfiguration(endpointPolicies: [
                "/fragile": CircuitPolicy(failureThreshold: 2, openDuration: .seconds(10)),
            ]),
            clock: clock
        )
        for _ in 0..<2 { try await configured.recordResult(endpoint: "/fragile", outcome: .failure) }
        for _ in 0..<2 { try await configured.recordResult(endpoint: "/sturdy", outcome: .failure) }
        #expect(try await configured.timeRemaining(for: "/fragile") == 10)
        #expect(try await configured.state(for: "/sturdy") == .closed)
    }

    @Test("force-open refuses requests for the given time, then probes")
    func forceOpen() async throws {
        try await breaker.forceOpen(endpoint: endpoint, for: .seconds(300))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint) == .refused(retryAfter: 300, state: .open))
        clock.advance(by: .seconds(300))
        #expect(try await breaker.shouldAllowRequest(endpoint: endpoint).probe != nil)
        await #expect(throws: StoreRefusal.self) { try await breaker.forceOpen(endpoint: endpoint, for: .seconds(-1)) }
    }
}

extension SQLiteStore {
    /// The file path of a file-backed store.
    var locationPath: String {
        if case .file(let path) = location { return path }
        return ":memory:"
    }
}
