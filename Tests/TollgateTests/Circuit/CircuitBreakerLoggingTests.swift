import Foundation
import Logging
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Circuit breaker log lines")
struct CircuitBreakerLoggingTests {
    @Test("each step logs the seed's line, with the endpoint as metadata and state changes at notice or info")
    func seedLogLines() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("logs.sqlite"))
        let clock = ManualClock()
        let log = LogCapture()
        let breaker = CircuitBreaker(storage: store, clock: clock, logger: log.logger)
        let endpoint = "/api/activities"

        for _ in 0..<5 { try await breaker.recordResult(endpoint: endpoint, outcome: .failure) }
        clock.advance(by: .seconds(15))
        _ = try await breaker.shouldAllowRequest(endpoint: endpoint)
        clock.advance(by: .seconds(45))
        let failedProbe = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        try await breaker.recordResult(endpoint: endpoint, outcome: .failure, probe: failedProbe)
        clock.advance(by: .seconds(60))
        let probe = try #require(try await breaker.shouldAllowRequest(endpoint: endpoint).probe)
        try await breaker.recordResult(endpoint: endpoint, outcome: .success, probe: probe)
        _ = try await breaker.shouldAllowRequest(endpoint: endpoint)

        #expect(log.messages == [
            "Failure 1/5 in CLOSED", "Failure 2/5 in CLOSED", "Failure 3/5 in CLOSED", "Failure 4/5 in CLOSED",
            "Threshold reached (5/5) → OPEN",
            "Circuit OPEN, blocking request (retry in 45s)",
            "Timeout expired, moving to HALF-OPEN", "State: HALF-OPEN, allowing test request",
            "Failure in HALF-OPEN → OPEN (recovery failed)",
            "Timeout expired, moving to HALF-OPEN", "State: HALF-OPEN, allowing test request",
            "Success in HALF-OPEN → CLOSED (recovered)",
            "State: CLOSED, allowing request",
        ])
        #expect(log.entries.allSatisfy { $0.metadata["circuit.endpoint"] == "\(endpoint)" })
        let levels = Dictionary(log.entries.map { ($0.message.description, $0.level) }) { first, _ in first }
        #expect(levels["Failure 1/5 in CLOSED"] == .debug)
        #expect(levels["Threshold reached (5/5) → OPEN"] == .notice)
        #expect(levels["Timeout expired, moving to HALF-OPEN"] == .info)
        #expect(levels["Success in HALF-OPEN → CLOSED (recovered)"] == .notice)
        #expect(levels["State: CLOSED, allowing request"] == .trace)
        let trip = try #require(log.entries.first { $0.message.description.hasPrefix("Threshold") })
        #expect(trip.metadata["circuit.open_seconds"] == "60")
    }
}
