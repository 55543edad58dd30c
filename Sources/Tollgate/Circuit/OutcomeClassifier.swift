import Foundation

/// Turns an HTTP answer or a transport error into a ``CircuitOutcome``.
///
/// By default (DESIGN.md, "Circuit breaker"):
///
/// | Answer | Outcome |
/// |---|---|
/// | 1xx, 2xx, 3xx | ``CircuitOutcome/success`` |
/// | 429 | ``CircuitOutcome/rateLimited`` |
/// | 403 with reason `rateLimitExceeded` / `userRateLimitExceeded` | ``CircuitOutcome/rateLimited`` |
/// | 403 with reason `quotaExceeded` / `dailyLimitExceeded` | ``CircuitOutcome/neutral`` (the quota ledger's business) |
/// | any other 4xx | ``CircuitOutcome/neutral`` (the request was wrong, the server is fine) |
/// | 5xx | ``CircuitOutcome/failure`` |
/// | timeout, connection error, unknown transport error | ``CircuitOutcome/failure`` |
/// | `CancellationError`, ``TollgateError`` | ``CircuitOutcome/neutral`` (nothing was learned) |
///
/// Every set is configurable, and ``override`` decides first when set.
public struct OutcomeClassifier: Sendable {
    /// Statuses that mean "slow down". `[429]` by default.
    public var rateLimitStatuses: Set<Int>
    /// Error-body reasons that make a 4xx a rate limit.
    public var rateLimitReasons: Set<String>
    /// Error-body reasons that make a 4xx neutral even when a rate-limit reason is also present:
    /// a spent daily quota is the ledger's business, not a sign of a failing server.
    public var quotaReasons: Set<String>
    /// Statuses that count as failures. 500–599 by default.
    public var failureStatuses: Set<Int>
    /// Decides first when it returns non-nil: `(status, body)`.
    public var override: (@Sendable (Int, Data?) -> CircuitOutcome?)?

    /// Creates a classifier.
    /// - Parameters:
    ///   - rateLimitStatuses: Statuses that mean "slow down".
    ///   - rateLimitReasons: Error reasons that make a 4xx a rate limit.
    ///   - quotaReasons: Error reasons that make a 4xx neutral.
    ///   - failureStatuses: Statuses that count as failures.
    ///   - override: A rule that decides first when it returns non-nil.
    public init(
        rateLimitStatuses: Set<Int> = [429],
        rateLimitReasons: Set<String> = ["rateLimitExceeded", "userRateLimitExceeded"],
        quotaReasons: Set<String> = GoogleErrorReasons.dailyQuotaSpent,
        failureStatuses: Set<Int> = Set(500...599),
        override: (@Sendable (Int, Data?) -> CircuitOutcome?)? = nil
    ) {
        self.rateLimitStatuses = rateLimitStatuses
        self.rateLimitReasons = rateLimitReasons
        self.quotaReasons = quotaReasons
        self.failureStatuses = failureStatuses
        self.override = override
    }

    /// Classifies an HTTP answer.
    /// - Parameters:
    ///   - status: The response's status code.
    ///   - body: The response body, read for Google's error reasons on a 4xx; nil when not at hand.
    /// - Returns: The outcome.
    public func outcome(status: Int, body: Data? = nil) -> CircuitOutcome {
        if let decided = override?(status, body) { return decided }
        if rateLimitStatuses.contains(status) { return .rateLimited }
        if failureStatuses.contains(status) { return .failure }
        guard (400...499).contains(status) else { return status >= 500 ? .neutral : .success }
        let reasons = body.map(GoogleErrorReasons.reasons(in:)) ?? []
        if reasons.contains(where: quotaReasons.contains) { return .neutral }
        if reasons.contains(where: rateLimitReasons.contains) { return .rateLimited }
        return .neutral
    }

    /// Classifies an error thrown instead of a response.
    ///
    /// An error conforming to ``CircuitClassifiableError`` decides for itself; cancellation and
    /// Tollgate's own refusals are neutral; `URLError`s and every other error are failures (the
    /// transport could not reach a healthy server).
    /// - Parameter error: The error.
    /// - Returns: The outcome.
    public func outcome(error: any Error) -> CircuitOutcome {
        switch error {
        case let classifiable as any CircuitClassifiableError: classifiable.circuitOutcome
        case is CancellationError, is TollgateError: .neutral
        case let urlError as URLError where urlError.code == .cancelled: .neutral
        default: .failure
        }
    }
}

/// An error that knows what it says about the server's health: transports conform their timeout
/// and connection errors so the circuit and the retry policy classify them without guessing.
public protocol CircuitClassifiableError: Error {
    /// What the error tells the circuit.
    var circuitOutcome: CircuitOutcome { get }
}
