/// What one attempt under ``RetryPolicy/run(endpoint:method:markedIdempotent:circuit:clock:logger:randomNumberGenerator:isolation:operation:)``
/// produced: the value or error to hand back if it is the last, what it tells the circuit, and what
/// the retry policy needs to decide on another attempt.
public struct AttemptResult<Value: Sendable>: Sendable {
    /// What the run returns (or throws) when this attempt is the last.
    public var result: Result<Value, any Error>
    /// What the attempt told the endpoint's circuit.
    public var outcome: CircuitOutcome
    /// What went wrong, for the retry decision; nil when nothing did.
    public var trigger: RetryTrigger?
    /// The server's `Retry-After`, when it sent one.
    public var retryAfter: RetryAfter?

    /// Creates an attempt result.
    /// - Parameters:
    ///   - result: The value or error.
    ///   - outcome: What it told the circuit.
    ///   - trigger: What went wrong, or nil.
    ///   - retryAfter: The server's `Retry-After`.
    public init(result: Result<Value, any Error>, outcome: CircuitOutcome, trigger: RetryTrigger?,
                retryAfter: RetryAfter? = nil) {
        self.result = result
        self.outcome = outcome
        self.trigger = trigger
        self.retryAfter = retryAfter
    }

    /// A successful attempt: nothing to retry.
    /// - Parameters:
    ///   - value: The value.
    ///   - outcome: What it told the circuit; success by default.
    /// - Returns: The result.
    public static func success(_ value: Value, outcome: CircuitOutcome = .success) -> AttemptResult {
        AttemptResult(result: .success(value), outcome: outcome, trigger: nil)
    }

    /// An HTTP answer, of any status: retried when the policy retries its status.
    /// - Parameters:
    ///   - value: The response, returned as is if this attempt is the last.
    ///   - status: Its status code.
    ///   - retryAfter: Its parsed `Retry-After`.
    ///   - outcome: What it told the circuit (see ``OutcomeClassifier``).
    /// - Returns: The result.
    public static func response(_ value: Value, status: Int, retryAfter: RetryAfter? = nil,
                                outcome: CircuitOutcome) -> AttemptResult {
        AttemptResult(result: .success(value), outcome: outcome,
                      trigger: .answer(status: status), retryAfter: retryAfter)
    }

    /// An error instead of an answer.
    /// - Parameters:
    ///   - error: The error, thrown if this attempt is the last.
    ///   - trigger: Its kind: ``RetryTrigger/timeout`` and ``RetryTrigger/connectionError`` are retried.
    ///   - retryAfter: A `Retry-After` the error carries.
    ///   - outcome: What it told the circuit; failure by default.
    /// - Returns: The result.
    public static func failure(_ error: any Error, trigger: RetryTrigger, retryAfter: RetryAfter? = nil,
                               outcome: CircuitOutcome = .failure) -> AttemptResult {
        AttemptResult(result: .failure(error), outcome: outcome, trigger: trigger, retryAfter: retryAfter)
    }
}
