import Foundation
import Logging

/// A per-endpoint circuit breaker whose state lives in the store, shared by every process that
/// opens the same file and kept across restarts (closed → open after 5 failures → half-open → closed).
///
/// Closed → open after `failureThreshold` consecutive failures → half-open once the open duration
/// has passed → closed on a successful probe, open again on a failed one. Half-open admits one
/// probe at a time across all processes, through a lease that expires.
///
/// ```swift
/// let breaker = CircuitBreaker(storage: store, clock: SystemClock())
/// let decision = try await breaker.checkAllowed(endpoint: "videos.list")   // throws circuitOpen
/// let response = try await send(request)
/// try await breaker.recordResult(endpoint: "videos.list", status: response.status, body: body,
///                                probe: decision.probe)
/// ```
public struct CircuitBreaker: Sendable {
    /// The policies and the outcome classifier.
    public let configuration: CircuitBreakerConfiguration
    private let storage: any CircuitStorage
    private let clock: any TollgateClock
    private let logger: Logger

    /// Creates a circuit breaker over a store.
    /// - Parameters:
    ///   - storage: Where circuits are kept: an ``SQLiteStore``.
    ///   - configuration: Policies and classifier.
    ///   - clock: The wall clock for open-until times and leases.
    ///   - logger: Where state changes are logged; the task's current logger by default.
    public init(
        storage: any CircuitStorage,
        configuration: CircuitBreakerConfiguration = CircuitBreakerConfiguration(),
        clock: any TollgateClock,
        logger: Logger = Logger.current
    ) {
        self.storage = storage
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    // MARK: Admission

    /// Decides whether a request to `endpoint` may be sent now.
    ///
    /// When the open duration has passed, the circuit moves to half-open and the first caller — in
    /// any process — gets the probe: record its outcome with ``CircuitDecision/probe``.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: ``CircuitDecision/allowed``, ``CircuitDecision/probe(_:)``, or
    ///   ``CircuitDecision/refused(retryAfter:state:)`` with the seconds to wait.
    /// - Throws: ``StoreError`` for an empty endpoint or an invalid policy, or a storage error.
    public func shouldAllowRequest(endpoint: String) async throws -> CircuitDecision {
        let admission = try await storage.admitCircuitRequest(
            endpoint: endpoint, policy: configuration.policy(for: endpoint),
            probeToken: Self.newProbeToken(), at: clock.now()
        )
        return report(admission, endpoint: endpoint)
    }

    /// Logs an admission that a caller ran itself — the gate, composing the circuit check with the
    /// throttle and the quota in one transaction — exactly as ``shouldAllowRequest(endpoint:)`` does.
    /// - Parameters:
    ///   - admission: The result of the store's admission.
    ///   - endpoint: The endpoint.
    /// - Returns: The admission's decision.
    @discardableResult
    public func report(_ admission: CircuitAdmission, endpoint: String) -> CircuitDecision {
        for transition in admission.transitions { log(transition) }
        let metadata = Self.metadata(endpoint)
        switch admission.decision {
        case .allowed:
            logger.trace("State: CLOSED, allowing request", metadata: metadata)
        case .probe(let probe):
            logger.debug("State: HALF-OPEN, allowing test request", metadata: metadata.merging([
                "circuit.probe_lease_until": "\(probe.leaseUntil)",
            ]) { $1 })
        case .refused(let retryAfter, .halfOpen):
            logger.debug("Circuit HALF-OPEN, probe in flight, blocking request (retry in \(Self.seconds(retryAfter))s)",
                         metadata: metadata)
        case .refused(let retryAfter, _):
            logger.debug("Circuit OPEN, blocking request (retry in \(Self.seconds(retryAfter))s)", metadata: metadata)
        }
        return admission.decision
    }

    /// Like ``shouldAllowRequest(endpoint:)``, but a refusal is thrown.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: ``CircuitDecision/allowed`` or ``CircuitDecision/probe(_:)``.
    /// - Throws: ``TollgateError/circuitOpen(retryAfter:)`` when refused, or a storage error.
    @discardableResult
    public func checkAllowed(endpoint: String) async throws -> CircuitDecision {
        let decision = try await shouldAllowRequest(endpoint: endpoint)
        if let retryAfter = decision.retryAfter { throw TollgateError.circuitOpen(retryAfter: retryAfter) }
        return decision
    }

    // MARK: Outcomes

    /// Records what a request told about `endpoint`.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - outcome: The request's outcome.
    ///   - probe: The probe lease, when the request was the half-open probe.
    /// - Returns: The circuit's state afterwards.
    /// - Throws: ``StoreError`` for an empty endpoint or an invalid policy, or a storage error.
    @discardableResult
    public func recordResult(endpoint: String, outcome: CircuitOutcome, probe: CircuitProbe? = nil) async throws
        -> CircuitState {
        let policy = configuration.policy(for: endpoint)
        let recording = try await storage.recordCircuitOutcome(
            outcome, endpoint: endpoint, probeToken: probe?.token, policy: policy, at: clock.now()
        )
        return report(recording, endpoint: endpoint)
    }

    /// Logs an outcome that a caller recorded itself (the gate, in a composed transaction), exactly
    /// as ``recordResult(endpoint:outcome:probe:)`` does.
    /// - Parameters:
    ///   - recording: The result of the store's recording.
    ///   - endpoint: The endpoint.
    /// - Returns: The circuit's state afterwards.
    @discardableResult
    public func report(_ recording: CircuitRecording, endpoint: String) -> CircuitState {
        let metadata = Self.metadata(endpoint)
        let outcome = recording.outcome
        if recording.transitions.isEmpty, recording.applied, recording.previousState == .closed, outcome.countsAsFailure {
            logger.debug("Failure \(recording.record.consecutiveFailures)/\(recording.record.failureThreshold) in CLOSED",
                         metadata: metadata.merging(["circuit.outcome": "\(outcome.rawValue)"]) { $1 })
        } else if !recording.applied, outcome != .neutral {
            logger.debug("Outcome \(outcome.rawValue) ignored in \(recording.previousState)", metadata: metadata)
        }
        for transition in recording.transitions { log(transition) }
        return recording.record.state
    }

    /// Classifies an HTTP answer with the configured ``OutcomeClassifier`` and records it.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - status: The response's status code.
    ///   - body: The response body, for Google's error reasons on a 4xx.
    ///   - probe: The probe lease, when the request was the half-open probe.
    /// - Returns: The circuit's state afterwards.
    /// - Throws: A storage error.
    @discardableResult
    public func recordResult(endpoint: String, status: Int, body: Data? = nil, probe: CircuitProbe? = nil) async throws
        -> CircuitState {
        try await recordResult(endpoint: endpoint, outcome: configuration.classifier.outcome(status: status, body: body),
                               probe: probe)
    }

    /// Classifies a transport error with the configured ``OutcomeClassifier`` and records it.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - error: The error thrown instead of a response.
    ///   - probe: The probe lease, when the request was the half-open probe.
    /// - Returns: The circuit's state afterwards.
    /// - Throws: A storage error.
    @discardableResult
    public func recordResult(endpoint: String, error: any Error, probe: CircuitProbe? = nil) async throws
        -> CircuitState {
        try await recordResult(endpoint: endpoint, outcome: configuration.classifier.outcome(error: error), probe: probe)
    }

    // MARK: Inspection

    /// The state a request would meet now: an open circuit whose time is up reads as half-open.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The state; closed for an endpoint never seen.
    /// - Throws: A storage error.
    public func state(for endpoint: String) async throws -> CircuitState {
        try await storage.circuit(endpoint: endpoint)?.effectiveState(at: clock.now()) ?? .closed
    }

    /// Consecutive failures counted for `endpoint` (kept while the circuit is open).
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The count; 0 for an endpoint never seen.
    /// - Throws: A storage error.
    public func failureCount(for endpoint: String) async throws -> Int {
        try await storage.circuit(endpoint: endpoint)?.consecutiveFailures ?? 0
    }

    /// How long an open circuit still refuses requests: never more than its open duration, even
    /// when the wall clock was set back.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The seconds left, or nil when the circuit is not open (or its time is up).
    /// - Throws: A storage error.
    public func timeRemaining(for endpoint: String) async throws -> TimeInterval? {
        try await storage.circuit(endpoint: endpoint)?.remainingOpenTime(at: clock.now())
    }

    /// The stored circuit of `endpoint`, for dashboards and the command-line tool.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: The record, or nil for an endpoint never seen.
    /// - Throws: A storage error.
    public func record(for endpoint: String) async throws -> CircuitRecord? {
        try await storage.circuit(endpoint: endpoint)
    }

    /// The transition history, newest first.
    /// - Parameters:
    ///   - endpoint: One endpoint, or nil for all.
    ///   - limit: The most transitions to return.
    /// - Returns: The transitions.
    /// - Throws: A storage error.
    public func history(endpoint: String? = nil, limit: Int = 100) async throws -> [CircuitTransition] {
        try await storage.circuitTransitions(endpoint: endpoint, limit: limit)
    }

    // MARK: Administration

    /// Closes the circuit of `endpoint`, or of every endpoint, and clears its counters and lease.
    /// Each circuit that was not already closed and clean gets a reset transition in the history.
    /// - Parameter endpoint: The endpoint, or nil for all.
    /// - Returns: The transitions recorded; empty when every circuit concerned was already clean.
    /// - Throws: A storage error.
    @discardableResult
    public func reset(endpoint: String? = nil) async throws -> [CircuitTransition] {
        let transitions = try await storage.resetCircuits(endpoint: endpoint, at: clock.now())
        for transition in transitions { log(transition) }
        return transitions
    }

    /// Opens the circuit of `endpoint` by hand for `duration`, whatever its state.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - duration: How long to refuse requests.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for a duration that is not positive, or a
    ///   storage error.
    public func forceOpen(endpoint: String, for duration: Duration) async throws {
        let transition = try await storage.forceOpenCircuit(
            endpoint: endpoint, duration: duration, policy: configuration.policy(for: endpoint), at: clock.now()
        )
        log(transition)
    }

    // MARK: Logging

    private func log(_ transition: CircuitTransition) {
        var metadata = Self.metadata(transition.endpoint)
        metadata["circuit.reason"] = "\(transition.reason)"
        if let openDuration = transition.openDuration {
            metadata["circuit.open_seconds"] = "\(Self.seconds(openDuration.timeInterval))"
        }
        switch transition.cause {
        case .thresholdReached(let failures, let threshold, let rateLimited)?:
            if rateLimited { metadata["circuit.cause"] = "rate_limited" }
            logger.notice("Threshold reached (\(failures)/\(threshold)) → OPEN", metadata: metadata)
        case .openDurationElapsed?:
            logger.info("Timeout expired, moving to HALF-OPEN", metadata: metadata)
        case .probeSucceeded?:
            logger.notice("Success in HALF-OPEN → CLOSED (recovered)", metadata: metadata)
        case .probeFailed?:
            logger.notice("Failure in HALF-OPEN → OPEN (recovery failed)", metadata: metadata)
        case .reset?:
            logger.info("Reset: \(transition.from) → CLOSED", metadata: metadata)
        case .forcedOpen(let duration)?:
            logger.notice("Forced \(transition.from) → OPEN for \(Self.seconds(duration.timeInterval))s",
                          metadata: metadata)
        case nil:
            logger.info("\(transition.from) → \(transition.to)", metadata: metadata)
        }
    }

    private static func metadata(_ endpoint: String) -> Logger.Metadata {
        ["circuit.endpoint": "\(endpoint)"]
    }

    /// Whole seconds, rounded up, as the log lines and ``TollgateError`` show them.
    private static func seconds(_ interval: TimeInterval) -> Int {
        max(0, Int(interval.rounded(.up)))
    }

    /// A new probe-lease token, unique across processes and restarts, for callers that run the
    /// store's admission themselves. Every admission makes one, and almost none is used (only a
    /// half-open circuit takes a probe), so it costs no system call.
    /// - Returns: The token.
    public static func newProbeToken() -> String {
        ProcessUniqueToken.next()
    }
}
