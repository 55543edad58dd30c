import Foundation
import TollgateCore

/// The SQL of the circuit breaker's operations, at the level of one connection inside a
/// transaction the caller opened, so the gate can compose a circuit check with the throttle and the
/// quota reservation in a single `BEGIN IMMEDIATE`.
enum CircuitTable {
    private static let columns = """
        endpoint, state, consecutive_failures, consecutive_rate_limits, failure_threshold, opened_at_ms, \
        open_until_ms, open_duration_ms, probe_owner, probe_lease_until_ms, failed_probes, trips, updated_at_ms
        """
    // Interpolated once: a text built per call is hashed and compared in full by the statement cache.
    private static let selectByEndpoint = "SELECT \(columns) FROM circuits WHERE endpoint = ?"

    /// Admission: load, decide, write back. Must run inside a write transaction.
    static func admit(_ db: Database, endpoint: String, policy: CircuitPolicy, probeToken: String,
                      now: Date) throws -> CircuitAdmission {
        try validate(endpoint: endpoint, policy: policy)
        var machine = CircuitStateMachine(record: try load(db, endpoint: endpoint), endpoint: endpoint,
                                          policy: policy, now: now)
        let admission = machine.admit(probeToken: probeToken, now: now)
        try persist(db, machine: machine, transitions: admission.transitions)
        return admission
    }

    /// Outcome: load, apply, write back with its transitions. Must run inside a write transaction.
    static func record(_ db: Database, outcome: CircuitOutcome, endpoint: String, probeToken: String?,
                       policy: CircuitPolicy, now: Date) throws -> CircuitRecording {
        try validate(endpoint: endpoint, policy: policy)
        var machine = CircuitStateMachine(record: try load(db, endpoint: endpoint), endpoint: endpoint,
                                          policy: policy, now: now)
        let recording = machine.record(outcome, probeToken: probeToken, now: now)
        try persist(db, machine: machine, transitions: recording.transitions)
        return recording
    }

    /// Reset of one circuit or all. Must run inside a write transaction.
    static func reset(_ db: Database, endpoint: String?, now: Date) throws -> [CircuitTransition] {
        let records: [CircuitRecord]
        if let endpoint {
            records = try load(db, endpoint: endpoint).map { [$0] } ?? []
        } else {
            records = try all(db)
        }
        var transitions: [CircuitTransition] = []
        for record in records {
            // The stored threshold is kept: a reset changes state, not configuration.
            var machine = CircuitStateMachine(record: record, endpoint: record.endpoint,
                                              policy: CircuitPolicy(failureThreshold: record.failureThreshold), now: now)
            guard let transition = machine.reset(now: now) else { continue }
            try persist(db, machine: machine, transitions: [transition])
            transitions.append(transition)
        }
        return transitions
    }

    /// Manual opening. Must run inside a write transaction.
    static func forceOpen(_ db: Database, endpoint: String, duration: Duration, policy: CircuitPolicy,
                          now: Date) throws -> CircuitTransition {
        try validate(endpoint: endpoint, policy: policy)
        try CircuitRules.validateForcedOpen(for: duration)
        var machine = CircuitStateMachine(record: try load(db, endpoint: endpoint), endpoint: endpoint,
                                          policy: policy, now: now)
        let transition = machine.forceOpen(for: duration, now: now)
        try persist(db, machine: machine, transitions: [transition])
        return transition
    }

    /// One circuit's row, by primary key: as the connection remembers it when nothing committed
    /// since it last read or wrote it (see ``RememberedRows``).
    static func load(_ db: Database, endpoint: String) throws -> CircuitRecord? {
        if let remembered = db.rememberedRows.circuit(endpoint) { return remembered }
        let record = try CircuitRecord.fetchOne(db.cachedStatement(sql: selectByEndpoint), arguments: [endpoint])
        db.rememberedRows.remember(circuit: record, for: endpoint)
        return record
    }

    /// Every circuit, by endpoint.
    static func all(_ db: Database) throws -> [CircuitRecord] {
        try CircuitRecord.fetchAll(db, sql: "SELECT \(columns) FROM circuits ORDER BY endpoint")
    }

    /// History rows, newest first, through the (endpoint, id) index when an endpoint is given.
    static func transitions(_ db: Database, endpoint: String?, limit: Int) throws -> [CircuitTransition] {
        if let endpoint {
            return try CircuitTransition.fetchAll(db, sql: """
                SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
                WHERE endpoint = ? ORDER BY id DESC LIMIT ?
                """, arguments: [endpoint, max(limit, 0)])
        }
        return try CircuitTransition.fetchAll(db, sql: """
            SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
            ORDER BY id DESC LIMIT ?
            """, arguments: [max(limit, 0)])
    }

    // MARK: Writing

    private static func persist(_ db: Database, machine: CircuitStateMachine, transitions: [CircuitTransition]) throws {
        guard machine.hasChanges else { return }
        try save(db, machine.record)
        for transition in transitions {
            try db.cachedStatement(sql: """
                INSERT INTO circuit_transitions (endpoint, at_ms, from_state, to_state, reason) VALUES (?, ?, ?, ?, ?)
                """).execute(arguments: [transition.endpoint, milliseconds(transition.at),
                      transition.from.rawValue, transition.to.rawValue, transition.reason])
        }
    }

    private static func save(_ db: Database, _ record: CircuitRecord) throws {
        // Read again next time: the row holds the record's times in milliseconds, not as they are here.
        db.rememberedRows.forgetCircuit(record.endpoint)
        try db.cachedStatement(sql: """
            INSERT INTO circuits (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (endpoint) DO UPDATE SET
                state = excluded.state, consecutive_failures = excluded.consecutive_failures,
                consecutive_rate_limits = excluded.consecutive_rate_limits,
                failure_threshold = excluded.failure_threshold, opened_at_ms = excluded.opened_at_ms,
                open_until_ms = excluded.open_until_ms, open_duration_ms = excluded.open_duration_ms,
                probe_owner = excluded.probe_owner, probe_lease_until_ms = excluded.probe_lease_until_ms,
                failed_probes = excluded.failed_probes, trips = excluded.trips, updated_at_ms = excluded.updated_at_ms
            """).execute(arguments: [
                record.endpoint, record.state.rawValue, record.consecutiveFailures,
                record.consecutiveRateLimits, record.failureThreshold,
                record.openedAt.map(milliseconds), record.openUntil.map(milliseconds),
                record.openDuration.map(milliseconds), record.probeOwner,
                record.probeLeaseUntil.map(milliseconds), record.failedProbes,
                record.trips, milliseconds(record.updatedAt),
            ])
    }

    private static func validate(endpoint: String, policy: CircuitPolicy) throws {
        try CircuitRules.validate(endpoint: endpoint, policy: policy)
    }

    // MARK: Time

    static func milliseconds(_ date: Date) -> Int64 {
        SaturatingConversion.int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
