import Foundation

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

    /// One circuit's row, by primary key.
    static func load(_ db: Database, endpoint: String) throws -> CircuitRecord? {
        try db.fetchOne(selectByEndpoint, [.text(endpoint)]).map(decode)
    }

    /// Every circuit, by endpoint.
    static func all(_ db: Database) throws -> [CircuitRecord] {
        try db.fetchAll("SELECT \(columns) FROM circuits ORDER BY endpoint").map(decode)
    }

    /// History rows, newest first, through the (endpoint, id) index when an endpoint is given.
    static func transitions(_ db: Database, endpoint: String?, limit: Int) throws -> [CircuitTransition] {
        let rows: [Row]
        if let endpoint {
            rows = try db.fetchAll("""
                SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
                WHERE endpoint = ? ORDER BY id DESC LIMIT ?
                """, [.text(endpoint), .int(max(limit, 0))])
        } else {
            rows = try db.fetchAll("""
                SELECT endpoint, at_ms, from_state, to_state, reason FROM circuit_transitions
                ORDER BY id DESC LIMIT ?
                """, [.int(max(limit, 0))])
        }
        return try rows.map { row in
            CircuitTransition(endpoint: row[0].string ?? "", at: date(row[1]) ?? Date(timeIntervalSince1970: 0),
                              from: try state(row[2]), to: try state(row[3]), reason: row[4].string ?? "")
        }
    }

    // MARK: Writing

    private static func persist(_ db: Database, machine: CircuitStateMachine, transitions: [CircuitTransition]) throws {
        guard machine.hasChanges else { return }
        try save(db, machine.record)
        for transition in transitions {
            try db.execute("""
                INSERT INTO circuit_transitions (endpoint, at_ms, from_state, to_state, reason) VALUES (?, ?, ?, ?, ?)
                """, [.text(transition.endpoint), .integer(milliseconds(transition.at)),
                      .text(transition.from.rawValue), .text(transition.to.rawValue), .text(transition.reason)])
        }
    }

    private static func save(_ db: Database, _ record: CircuitRecord) throws {
        try db.execute("""
            INSERT INTO circuits (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (endpoint) DO UPDATE SET
                state = excluded.state, consecutive_failures = excluded.consecutive_failures,
                consecutive_rate_limits = excluded.consecutive_rate_limits,
                failure_threshold = excluded.failure_threshold, opened_at_ms = excluded.opened_at_ms,
                open_until_ms = excluded.open_until_ms, open_duration_ms = excluded.open_duration_ms,
                probe_owner = excluded.probe_owner, probe_lease_until_ms = excluded.probe_lease_until_ms,
                failed_probes = excluded.failed_probes, trips = excluded.trips, updated_at_ms = excluded.updated_at_ms
            """, [
                .text(record.endpoint), .text(record.state.rawValue), .int(record.consecutiveFailures),
                .int(record.consecutiveRateLimits), .int(record.failureThreshold),
                .optionalInt(record.openedAt.map(milliseconds)), .optionalInt(record.openUntil.map(milliseconds)),
                .optionalInt(record.openDuration.map(milliseconds)), .optionalText(record.probeOwner),
                .optionalInt(record.probeLeaseUntil.map(milliseconds)), .int(record.failedProbes),
                .int(record.trips), .integer(milliseconds(record.updatedAt)),
            ])
    }

    // MARK: Decoding

    private static func decode(_ row: Row) throws -> CircuitRecord {
        CircuitRecord(
            endpoint: row[0].string ?? "", state: try state(row[1]), consecutiveFailures: row[2].int ?? 0,
            consecutiveRateLimits: row[3].int ?? 0, failureThreshold: row[4].int ?? 5, openedAt: date(row[5]),
            openUntil: date(row[6]), openDuration: row[7].int64.map { .milliseconds($0) },
            probeOwner: row[8].string, probeLeaseUntil: date(row[9]), failedProbes: row[10].int ?? 0,
            trips: row[11].int ?? 0, updatedAt: date(row[12]) ?? Date(timeIntervalSince1970: 0)
        )
    }

    private static func state(_ value: DatabaseValue) throws -> CircuitState {
        // The table's CHECK constraint makes any other value impossible short of a hand-edited file.
        guard let text = value.string, let state = CircuitState(rawValue: text) else {
            throw CircuitRules.unknownState(value.string)
        }
        return state
    }

    private static func validate(endpoint: String, policy: CircuitPolicy) throws {
        try CircuitRules.validate(endpoint: endpoint, policy: policy)
    }

    // MARK: Time

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    static func date(_ value: DatabaseValue) -> Date? {
        value.int64.map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
    }
}
