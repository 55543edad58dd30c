import Foundation

/// Why a circuit changed state.
public enum CircuitTransitionCause: Sendable, Hashable, CustomStringConvertible {
    /// Consecutive failures reached the threshold in closed.
    case thresholdReached(failures: Int, threshold: Int, rateLimited: Bool)
    /// The open duration passed; the next caller may probe.
    case openDurationElapsed
    /// The half-open probe succeeded.
    case probeSucceeded
    /// The half-open probe failed.
    case probeFailed(rateLimited: Bool)
    /// An operator or the application reset the circuit.
    case reset
    /// An operator or the application opened the circuit by hand.
    case forcedOpen(duration: Duration)

    /// The reason as the history table stores it.
    public var description: String {
        switch self {
        case .thresholdReached(let failures, let threshold, let rateLimited):
            "threshold reached (\(failures)/\(threshold)\(rateLimited ? " rate-limited" : "") consecutive failures)"
        case .openDurationElapsed:
            "open duration elapsed"
        case .probeSucceeded:
            "probe succeeded (recovered)"
        case .probeFailed(let rateLimited):
            rateLimited ? "probe rate-limited (recovery failed)" : "probe failed (recovery failed)"
        case .reset:
            "reset"
        case .forcedOpen:
            "forced open"
        }
    }
}

/// One change of a circuit's state: a row of the append-only `circuit_transitions` table.
public struct CircuitTransition: Sendable, Hashable {
    /// The endpoint whose circuit changed.
    public var endpoint: String
    /// When it changed.
    public var at: Date
    /// The state before.
    public var from: CircuitState
    /// The state after.
    public var to: CircuitState
    /// Why, in the words stored in the history table, with the open duration for a transition into
    /// open ("threshold reached (5/5 consecutive failures); open for 60 s").
    public var reason: String
    /// Why, as a value: set on transitions that just happened, nil on rows read back from history.
    public var cause: CircuitTransitionCause?
    /// For a transition into ``CircuitState/open``: how long it stays open.
    public var openDuration: Duration?

    /// Creates a transition that just happened.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - at: When.
    ///   - from: The state before.
    ///   - to: The state after.
    ///   - cause: Why.
    ///   - openDuration: How long it stays open, for a transition into open.
    public init(endpoint: String, at: Date, from: CircuitState, to: CircuitState,
                cause: CircuitTransitionCause, openDuration: Duration? = nil) {
        self.endpoint = endpoint
        self.at = at
        self.from = from
        self.to = to
        self.reason = cause.description
            + (openDuration.map { "; open for \(Int($0.timeInterval.rounded(.up))) s" } ?? "")
        self.cause = cause
        self.openDuration = openDuration
    }

    /// Creates a transition read back from the history table.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - at: When.
    ///   - from: The state before.
    ///   - to: The state after.
    ///   - reason: The stored reason.
    public init(endpoint: String, at: Date, from: CircuitState, to: CircuitState, reason: String) {
        self.endpoint = endpoint
        self.at = at
        self.from = from
        self.to = to
        self.reason = reason
        self.cause = nil
        self.openDuration = nil
    }
}
