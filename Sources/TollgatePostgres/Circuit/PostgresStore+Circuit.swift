import Foundation
import PostgresNIO
import TollgateCore

/// The circuit breaker over PostgreSQL: one `circuits` row per endpoint, changed by running the
/// same ``CircuitStateMachine`` as SQLite's store on the row held FOR UPDATE, with the database's
/// clock as "now".
///
/// The half-open probe's lease is that row's `probe_owner` and `probe_lease_until_ms`, compared
/// with the database's clock under the row lock: one probe at a time fleet-wide, and a probe whose
/// machine died frees the circuit when its lease expires. No session advisory lock is involved,
/// so it works behind a transaction-pooling PgBouncer. Each state change bumps the row's
/// `generation` and is sent with `NOTIFY tollgate_circuits` at commit.
///
/// The `at:` parameters are not used: the database's clock decides open-until times and leases,
/// so machines with skewed clocks agree.
extension PostgresStore: CircuitStorage {
    /// Decides whether a request may be sent, and writes back an open → half-open transition and
    /// the probe lease, in one transaction.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - policy: The endpoint's policy.
    ///   - probeToken: The token stored as probe owner if this caller gets the probe.
    ///   - now: Not used: the database's clock decides.
    /// - Returns: The decision, the transitions it caused and the circuit afterwards.
    /// - Throws: `StoreRefusal.invalidArgument` for an empty endpoint or an invalid policy;
    ///   ``PostgresStoreError`` when the server fails.
    public func admitCircuitRequest(endpoint: String, policy: CircuitPolicy, probeToken: String,
                                    at now: Date) async throws -> CircuitAdmission {
        try Self.validateCircuit(endpoint: endpoint, policy: policy)
        return try await changeCircuit("admitting a request to \(endpoint)", endpoint: endpoint) { record, now in
            var machine = CircuitStateMachine(record: record, endpoint: endpoint, policy: policy, now: now)
            let admission = machine.admit(probeToken: probeToken, now: now)
            return (machine, admission.transitions, admission)
        }
    }

    /// Applies a request's outcome to the endpoint's circuit and appends any transition, in one
    /// transaction.
    /// - Parameters:
    ///   - outcome: What the request told about the endpoint.
    ///   - endpoint: The endpoint.
    ///   - probeToken: The probe lease token when the request was the probe, else nil.
    ///   - policy: The endpoint's policy.
    ///   - now: Not used: the database's clock decides.
    /// - Returns: What changed.
    /// - Throws: `StoreRefusal.invalidArgument` for an empty endpoint or an invalid policy;
    ///   ``PostgresStoreError`` when the server fails.
    public func recordCircuitOutcome(_ outcome: CircuitOutcome, endpoint: String, probeToken: String?,
                                     policy: CircuitPolicy, at now: Date) async throws -> CircuitRecording {
        try Self.validateCircuit(endpoint: endpoint, policy: policy)
        return try await changeCircuit("recording an outcome of \(endpoint)", endpoint: endpoint) { record, now in
            var machine = CircuitStateMachine(record: record, endpoint: endpoint, policy: policy, now: now)
            let recording = machine.record(outcome, probeToken: probeToken, now: now)
            return (machine, recording.transitions, recording)
        }
    }

    /// Reads one endpoint's circuit.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: Its row, or nil when the endpoint has never failed.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func circuit(endpoint: String) async throws -> CircuitRecord? {
        try await withConnection("reading the circuit of \(endpoint)") { [self] connection in
            try await loadCircuit(connection, endpoint: endpoint, lock: false)
        }
    }

    /// Reads every stored circuit, ordered by endpoint.
    /// - Returns: The rows.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func allCircuits() async throws -> [CircuitRecord] {
        try await withConnection("reading the circuits") { [self] connection in
            try await loadCircuits(connection, lock: false)
        }
    }

    /// Closes one circuit, or every circuit, and records a reset transition for each one that was
    /// not already closed with nothing counted.
    /// - Parameters:
    ///   - endpoint: The endpoint, or nil for all.
    ///   - now: Not used: the database's clock stamps the transitions.
    /// - Returns: The transitions recorded.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func resetCircuits(endpoint: String?, at now: Date) async throws -> [CircuitTransition] {
        try await inTransaction("resetting circuits") { [self] connection in
            let records: [CircuitRecord]
            if let endpoint {
                records = try await loadCircuit(connection, endpoint: endpoint, lock: true).map { [$0] } ?? []
            } else {
                records = try await loadCircuits(connection, lock: true)
            }
            let now = try await databaseNow(connection)
            var transitions: [CircuitTransition] = []
            for record in records {
                // The stored threshold is kept: a reset changes state, not configuration.
                var machine = CircuitStateMachine(
                    record: record, endpoint: record.endpoint,
                    policy: CircuitPolicy(failureThreshold: record.failureThreshold), now: now
                )
                guard let transition = machine.reset(now: now) else { continue }
                _ = try await saveCircuit(connection, machine.record, existed: true, transitions: [transition])
                transitions.append(transition)
            }
            return transitions
        }
    }

    /// Opens a circuit by hand for `duration`, by the database's clock, and records the transition.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - duration: How long to refuse requests.
    ///   - policy: The endpoint's policy.
    ///   - now: Not used: the database's clock decides.
    /// - Returns: The transition.
    /// - Throws: `StoreRefusal.invalidArgument` for an empty endpoint or a duration that is not
    ///   positive; ``PostgresStoreError`` when the server fails.
    public func forceOpenCircuit(endpoint: String, duration: Duration, policy: CircuitPolicy,
                                 at now: Date) async throws -> CircuitTransition {
        try Self.validateCircuit(endpoint: endpoint, policy: policy)
        try CircuitRules.validateForcedOpen(for: duration)
        return try await changeCircuit("forcing \(endpoint) open", endpoint: endpoint) { record, now in
            var machine = CircuitStateMachine(record: record, endpoint: endpoint, policy: policy, now: now)
            let transition = machine.forceOpen(for: duration, now: now)
            return (machine, [transition], transition)
        }
    }

    /// Reads the transition history, newest first.
    /// - Parameters:
    ///   - endpoint: One endpoint, or nil for all.
    ///   - limit: The most rows to return.
    /// - Returns: The transitions, newest first.
    /// - Throws: ``PostgresStoreError`` when the server fails.
    public func circuitTransitions(endpoint: String?, limit: Int) async throws -> [CircuitTransition] {
        let limit = max(limit, 0)
        return try await withConnection("reading the circuit history") { [self] connection in
            let query: PostgresQuery = if let endpoint {
                """
                SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
                WHERE endpoint = \(endpoint) ORDER BY id DESC LIMIT \(limit)
                """
            } else {
                """
                SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
                ORDER BY id DESC LIMIT \(limit)
                """
            }
            return try await connection.rows(query, logger: logger).map { row in
                let (endpoint, atMs, from, to, reason) = try row.decode((String, Int, String, String, String).self)
                guard let fromState = CircuitState(rawValue: from), let toState = CircuitState(rawValue: to) else {
                    throw CircuitRules.unknownState(CircuitState(rawValue: from) == nil ? from : to)
                }
                return CircuitTransition(
                    endpoint: endpoint, at: Self.date(milliseconds: atMs), from: fromState, to: toState, reason: reason
                )
            }
        }
    }

    /// Runs one event of the state machine on an endpoint's circuit, in its own transaction.
    private func changeCircuit<Result: Sendable>(
        _ operation: String, endpoint: String,
        _ step: @escaping @Sendable (CircuitRecord?, Date) -> (CircuitStateMachine, [CircuitTransition], Result)
    ) async throws -> Result {
        try await inTransaction(operation) { [self] connection in
            try await runCircuitEvent(connection, endpoint: endpoint, step)
        }
    }

    static func validateCircuit(endpoint: String, policy: CircuitPolicy) throws {
        try CircuitRules.validate(endpoint: endpoint, policy: policy)
    }
}
