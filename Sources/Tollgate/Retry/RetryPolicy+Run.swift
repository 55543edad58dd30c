import Foundation
import HTTPTypes
import Logging

extension RetryPolicy {
    /// Runs `operation` under this policy: attempts, records each attempt's outcome in the circuit,
    /// and sleeps on `clock` between attempts.
    ///
    /// Before every attempt the circuit is consulted. When it refuses the **first** attempt, the
    /// run throws ``TollgateError/circuitOpen(retryAfter:)`` and `operation` is never called. When
    /// the circuit opens **mid-way** (an attempt's failure tripped it, or it refuses a retry), the
    /// run stops at once and hands back the last attempt's own result — its response or its error
    /// — because that is what actually happened to this request; the next request meets the open
    /// circuit. The same holds when retries are spent, the failure is not retryable, the method
    /// is not idempotent, or a `Retry-After` exceeds ``maximumDelay`` (no sleep: the answer with
    /// its `Retry-After` goes back to the caller).
    ///
    /// If `operation` throws, the error propagates at once, unrecorded (the attempt never reached
    /// the server: a throttle or quota refusal, say); a probe lease it held is released.
    ///
    /// A cancelled task makes no further attempt: the sleep before a retry ends at once, and an
    /// attempt not yet begun is not begun (`CancellationError`). An attempt already running is
    /// `operation`'s to finish or abandon.
    /// - Parameters:
    ///   - endpoint: The endpoint, for the circuit and the logs.
    ///   - method: The request's method, for the idempotency rule.
    ///   - markedIdempotent: Whether the caller vouches that repeating the request is safe.
    ///   - circuit: The endpoint's circuit breaker, or nil to retry without one.
    ///   - clock: Where the run sleeps between attempts.
    ///   - logger: Where attempts and retries are logged.
    ///   - randomNumberGenerator: The jitter's random source.
    ///   - isolation: The caller's actor, on which `operation` runs.
    ///   - operation: One attempt, given its number from 1.
    /// - Returns: The value of the last attempt.
    /// - Throws: ``TollgateError/circuitOpen(retryAfter:)`` when the circuit refuses the first
    ///   attempt, the last attempt's error, what `operation` throws, `CancellationError` when
    ///   cancelled during a sleep or before an attempt, or a storage error from the circuit.
    public func run<Value: Sendable>(
        endpoint: String,
        method: HTTPRequest.Method,
        markedIdempotent: Bool = false,
        circuit: CircuitBreaker? = nil,
        clock: any TollgateClock,
        logger: Logger = Logger.current,
        randomNumberGenerator: some RandomNumberGenerator = SystemRandomNumberGenerator(),
        isolation: isolated (any Actor)? = #isolation,
        operation: (_ attempt: Int) async throws -> AttemptResult<Value>
    ) async throws -> Value {
        var generator = randomNumberGenerator
        var attempt = 1
        var lastResult: AttemptResult<Value>?
        let baseMetadata: Logger.Metadata = ["retry.endpoint": "\(endpoint)", "retry.method": "\(method.rawValue)"]
        while true {
            // A caller that has gone (a cancelled task) spends nothing more: not even a zero-length wait's attempt.
            try Task.checkCancellation()
            var metadata = baseMetadata
            metadata["retry.attempt"] = "\(attempt)"
            var probe: CircuitProbe?
            if let circuit {
                let decision = try await circuit.shouldAllowRequest(endpoint: endpoint)
                if let retryAfter = decision.retryAfter {
                    // A retry meets a refusal when another process tripped the circuit during the sleep.
                    guard let lastResult else { throw TollgateError.circuitOpen(retryAfter: retryAfter) }
                    logger.debug("Not retrying after attempt \(attempt - 1): \(RetryStopReason.circuitOpen)",
                                metadata: baseMetadata)
                    return try lastResult.result.get()
                }
                probe = decision.probe
            }
            logger.debug("Attempt \(attempt)", metadata: metadata)

            let result: AttemptResult<Value>
            do {
                result = try await operation(attempt)
            } catch {
                if let circuit, let probe {
                    // Releasing the lease is best effort: it expires on its own if this write fails.
                    _ = try? await circuit.recordResult(endpoint: endpoint, outcome: .neutral, probe: probe)
                }
                throw error
            }
            lastResult = result
            var circuitState = CircuitState.closed
            if let circuit {
                circuitState = try await circuit.recordResult(endpoint: endpoint, outcome: result.outcome, probe: probe)
            }

            guard let trigger = result.trigger else { return try result.result.get() }
            let stop: RetryStopReason?
            var wait = Duration.zero
            if let reason = stopReason(for: trigger, method: method, markedIdempotent: markedIdempotent,
                                       circuit: circuitState) {
                stop = reason
            } else {
                switch delay(forRetry: attempt, retryAfter: result.retryAfter, now: clock.now(), using: &generator) {
                case .wait(let duration):
                    stop = nil
                    wait = duration
                case .giveUp(let reason):
                    stop = reason
                }
            }
            metadata["retry.trigger"] = "\(Self.describe(trigger))"
            if let stop {
                if attempt > 1 || stop != .notRetryable {
                    logger.debug("Not retrying after attempt \(attempt): \(stop)", metadata: metadata)
                }
                return try result.result.get()
            }
            logger.debug("Retry \(attempt)/\(maximumRetries) in \(Self.describe(wait)) after \(Self.describe(trigger))",
                        metadata: metadata)
            try await clock.sleep(for: wait)
            attempt += 1
        }
    }

    private static func describe(_ trigger: RetryTrigger) -> String {
        switch trigger {
        case .status(let status): "status \(status)"
        case .timeout: "timeout"
        case .connectionError: "connection error"
        case .other: "error"
        }
    }

    private static func describe(_ duration: Duration) -> String {
        String(format: "%.1fs", duration.timeInterval)
    }
}
