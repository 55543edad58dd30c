import Foundation

/// The circuit breaker's store operations, each one transaction.
///
/// ``SQLiteStore`` implements them over the `circuits` and `circuit_transitions` tables; another
/// backend implements the same operations by running ``CircuitStateMachine`` inside its own
/// transaction, so the ``CircuitRecord`` rules never differ between backends.
public protocol CircuitStorage: Sendable {
    /// Loads the endpoint's circuit, decides whether a request may be sent, and writes back any
    /// transition (open → half-open) and probe lease, in one write transaction.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - policy: The endpoint's policy.
    ///   - probeToken: The token stored as probe owner if this caller gets the probe.
    ///   - now: The current time.
    /// - Returns: The decision, the transitions it caused and the circuit afterwards.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for an empty endpoint or an invalid policy, or
    ///   the backend's error.
    func admitCircuitRequest(endpoint: String, policy: CircuitPolicy, probeToken: String, at now: Date) async throws
        -> CircuitAdmission

    /// Applies a request's outcome to the endpoint's circuit and appends any transition to the
    /// history, in one write transaction.
    /// - Parameters:
    ///   - outcome: What the request told about the endpoint.
    ///   - endpoint: The endpoint.
    ///   - probeToken: The probe lease token when the request was a probe, else nil.
    ///   - policy: The endpoint's policy.
    ///   - now: The current time.
    /// - Returns: What changed.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for an empty endpoint or an invalid policy, or
    ///   the backend's error.
    func recordCircuitOutcome(_ outcome: CircuitOutcome, endpoint: String, probeToken: String?,
                              policy: CircuitPolicy, at now: Date) async throws -> CircuitRecording

    /// Reads one endpoint's circuit.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: Its row, or nil when the endpoint has never failed (its circuit is closed).
    /// - Throws: The backend's error.
    func circuit(endpoint: String) async throws -> CircuitRecord?

    /// Reads every stored circuit, ordered by endpoint.
    /// - Returns: The rows.
    /// - Throws: The backend's error.
    func allCircuits() async throws -> [CircuitRecord]

    /// Closes one circuit, or every circuit, clearing counters and leases, and records a reset
    /// transition for each one that was not already closed with nothing counted.
    /// - Parameters:
    ///   - endpoint: The endpoint, or nil for all.
    ///   - now: The current time.
    /// - Returns: The transitions recorded.
    /// - Throws: The backend's error.
    func resetCircuits(endpoint: String?, at now: Date) async throws -> [CircuitTransition]

    /// Opens a circuit by hand for `duration`, and records the transition.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - duration: How long to refuse requests.
    ///   - policy: The endpoint's policy (for the threshold stored in the row).
    ///   - now: The current time.
    /// - Returns: The transition.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for an empty endpoint or a duration that is not
    ///   positive, or the backend's error.
    func forceOpenCircuit(endpoint: String, duration: Duration, policy: CircuitPolicy, at now: Date) async throws
        -> CircuitTransition

    /// Reads the transition history, newest first.
    /// - Parameters:
    ///   - endpoint: One endpoint, or nil for all.
    ///   - limit: The most rows to return.
    /// - Returns: The transitions, newest first.
    /// - Throws: The backend's error.
    func circuitTransitions(endpoint: String?, limit: Int) async throws -> [CircuitTransition]
}
