/// What one request told the circuit about its endpoint's health.
public enum CircuitOutcome: String, Sendable, Hashable, CaseIterable {
    /// The server answered normally (2xx, 3xx): in closed, the failure count resets; in half-open,
    /// the circuit closes.
    case success
    /// The server is failing: a 5xx, a timeout or a network error. Counts towards the threshold.
    case failure
    /// The server asked us to slow down: 429, or 403 `rateLimitExceeded`. Counts as a failure, and a
    /// trip made entirely of rate limits opens for the policy's rate-limit duration.
    case rateLimited = "rate_limited"
    /// Says nothing about the server's health (a 404, a 400, a spent daily quota): not counted.
    case neutral

    /// Whether the outcome counts towards the failure threshold.
    public var countsAsFailure: Bool {
        self == .failure || self == .rateLimited
    }
}
