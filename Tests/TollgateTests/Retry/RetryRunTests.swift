import Foundation
import HTTPTypes
import Synchronization
import Testing
import TollgateTestSupport
import Tollgate

/// A stand-in for an HTTP response.
private struct Answer: Sendable, Equatable {
    let status: Int
}

private struct Timeout: Error, Equatable {}

/// Counts the attempts an operation saw.
private final class Attempts: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
}

@Suite("Retry policy run")
struct RetryRunTests {
    let noJitter = RetryPolicy(jitter: 0)

    /// An operation answering with `statuses` in turn (the last one repeats).
    private func answering(_ statuses: [Int], retryAfter: RetryAfter? = nil, attempts: Attempts)
        -> (Int) async throws -> AttemptResult<Answer> {
        { _ in
            let status = statuses[min(attempts.next(), statuses.count) - 1]
            return .response(Answer(status: status), status: status, retryAfter: retryAfter,
                             outcome: OutcomeClassifier().outcome(status: status))
        }
    }

    @Test("a 503 then 503 then 200 is retried after 1 s and 2 s, and every retry is logged")
    func retriesUntilSuccess() async throws {
        let clock = SimulatedClock()
        let log = LogCapture()
        let attempts = Attempts()
        let answer = try await noJitter.run(endpoint: "videos.list", method: .get, clock: clock, logger: log.logger,
                                            operation: answering([503, 503, 200], attempts: attempts))
        #expect(answer == Answer(status: 200))
        #expect(attempts.value == 3)
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
        #expect(log.messages.filter { $0.hasPrefix("Retry") }
            == ["Retry 1/3 in 1.0s after status 503", "Retry 2/3 in 2.0s after status 503"])
        #expect(log.messages.filter { $0.hasPrefix("Attempt") } == ["Attempt 1", "Attempt 2", "Attempt 3"])
    }

    @Test("after 3 retries the last answer is returned; a timeout error is retried and rethrown at the end")
    func exhaustsRetries() async throws {
        let clock = SimulatedClock()
        let attempts = Attempts()
        let answer = try await noJitter.run(endpoint: "e", method: .get, clock: clock,
                                            operation: answering([429], attempts: attempts))
        #expect(answer == Answer(status: 429))
        #expect(attempts.value == 4)
        #expect(clock.sleeps == [.seconds(1), .seconds(2), .seconds(4)])

        let timeouts = Attempts()
        await #expect(throws: Timeout()) {
            _ = try await noJitter.run(endpoint: "e", method: .get, clock: SimulatedClock()) { _ -> AttemptResult<Answer> in
                _ = timeouts.next()
                return .failure(Timeout(), trigger: .timeout)
            }
        }
        #expect(timeouts.value == 4)
    }

    @Test("a Retry-After within the maximum is slept; past it, no sleep and the answer comes back with it")
    func retryAfterHandling() async throws {
        let clock = SimulatedClock()
        let attempts = Attempts()
        _ = try await noJitter.run(endpoint: "e", method: .get, clock: clock,
                                   operation: answering([503, 200], retryAfter: .seconds(5), attempts: attempts))
        #expect(clock.sleeps == [.seconds(5)])

        let patient = SimulatedClock()
        let once = Attempts()
        let answer = try await noJitter.run(endpoint: "e", method: .get, clock: patient,
                                            operation: answering([429], retryAfter: .seconds(3600), attempts: once))
        #expect(answer == Answer(status: 429))
        #expect(once.value == 1)
        #expect(patient.sleeps.isEmpty)
    }

    @Test("a POST is not retried unless marked idempotent; a non-retryable status is not retried")
    func idempotencyAndRetryability() async throws {
        let post = Attempts()
        _ = try await noJitter.run(endpoint: "e", method: .post, clock: SimulatedClock(),
                                   operation: answering([503, 200], attempts: post))
        #expect(post.value == 1)
        let marked = Attempts()
        let answer = try await noJitter.run(endpoint: "e", method: .post, markedIdempotent: true, clock: SimulatedClock(),
                                            operation: answering([503, 200], attempts: marked))
        #expect(answer == Answer(status: 200) && marked.value == 2)
        let notFound = Attempts()
        _ = try await noJitter.run(endpoint: "e", method: .get, clock: SimulatedClock(),
                                   operation: answering([404], attempts: notFound))
        #expect(notFound.value == 1)
    }

    @Test("retrying stops as soon as the circuit opens mid-way, and the next run is refused without a call")
    func stopsWhenCircuitOpens() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("retry.sqlite"))
        let clock = SimulatedClock()
        let breaker = CircuitBreaker(storage: store, clock: clock)
        for _ in 0..<3 { try await breaker.recordResult(endpoint: "e", outcome: .failure) }

        let attempts = Attempts()
        let answer = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock,
                                            operation: answering([503], attempts: attempts))
        #expect(answer == Answer(status: 503))
        #expect(attempts.value == 2)  // failures 4 and 5: the 5th opened the circuit
        #expect(clock.sleeps == [.seconds(1)])
        #expect(try await breaker.state(for: "e") == .open)

        let refused = Attempts()
        await #expect(throws: TollgateError.circuitOpen(retryAfter: 60)) {
            _ = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock,
                                       operation: answering([200], attempts: refused))
        }
        #expect(refused.value == 0)
    }

    @Test("when another process opens the circuit during the backoff, the retry is not sent")
    func circuitOpenedDuringSleep() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let base = ManualClock()
        let other = CircuitBreaker(storage: store, clock: base)
        let clock = SimulatedClock(base: base) { _ in try? await other.forceOpen(endpoint: "e", for: .seconds(60)) }
        let breaker = CircuitBreaker(storage: store, clock: clock)
        let attempts = Attempts()
        let answer = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock,
                                            operation: answering([502, 200], attempts: attempts))
        #expect(answer == Answer(status: 502))
        #expect(attempts.value == 1)
    }

    @Test("each attempt's outcome is recorded; a half-open probe that succeeds closes the circuit")
    func recordsOutcomesAndProbes() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let clock = SimulatedClock()
        let breaker = CircuitBreaker(storage: store, clock: clock)
        let attempts = Attempts()
        _ = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock,
                                   operation: answering([503, 503, 200], attempts: attempts))
        #expect(try await breaker.failureCount(for: "e") == 0)  // the success reset the two failures
        #expect(try await breaker.history(endpoint: "e").isEmpty)

        for _ in 0..<5 { try await breaker.recordResult(endpoint: "e", outcome: .failure) }
        clock.base.advance(by: .seconds(60))
        let probe = Attempts()
        _ = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock,
                                   operation: answering([200], attempts: probe))
        #expect(try await breaker.state(for: "e") == .closed)
    }

    @Test("an operation that throws is not retried or recorded, and releases a probe lease it held")
    func operationThrows() async throws {
        let store = try SQLiteStore(location: .inMemory)
        let clock = SimulatedClock()
        let breaker = CircuitBreaker(storage: store, clock: clock)
        for _ in 0..<5 { try await breaker.recordResult(endpoint: "e", outcome: .failure) }
        clock.base.advance(by: .seconds(60))
        await #expect(throws: TollgateError.throttled(retryAfter: 2)) {
            _ = try await noJitter.run(endpoint: "e", method: .get, circuit: breaker, clock: clock)
                { _ -> AttemptResult<Answer> in throw TollgateError.throttled(retryAfter: 2) }
        }
        #expect(try await breaker.failureCount(for: "e") == 5)
        #expect(try await breaker.record(for: "e")?.probeOwner == nil)
        #expect(try await breaker.shouldAllowRequest(endpoint: "e").probe != nil)
    }
}
