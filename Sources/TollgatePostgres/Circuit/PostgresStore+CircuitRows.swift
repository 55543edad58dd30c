import Foundation
import Logging
import PostgresNIO
import TollgateCore

/// The circuit rows' statements, on a connection inside a transaction the caller opened.
extension PostgresStore {
    static let circuitColumns = """
        endpoint, state, consecutive_failures, consecutive_rate_limits, failure_threshold, opened_at_ms, \
        open_until_ms, open_duration_ms, probe_owner, probe_lease_until_ms, failed_probes, trips, updated_at_ms
        """

    /// The database's clock now (not the transaction's start, which a lock wait may have left behind).
    func databaseNow(_ connection: PostgresConnection) async throws -> Date {
        let milliseconds = try await connection.firstRow(
            "SELECT tollgate_ms(clock_timestamp())", logger: logger
        )?.decode(Int.self) ?? 0
        return Self.date(milliseconds: milliseconds)
    }

    /// One circuit's row; with `lock`, held FOR UPDATE until the transaction ends, so machines
    /// apply their events to it one after the other.
    func loadCircuit(_ connection: PostgresConnection, endpoint: String, lock: Bool) async throws -> CircuitRecord? {
        let query: PostgresQuery = lock
            ? "SELECT \(unescaped: Self.circuitColumns) FROM circuits WHERE endpoint = \(endpoint) FOR UPDATE"
            : "SELECT \(unescaped: Self.circuitColumns) FROM circuits WHERE endpoint = \(endpoint)"
        return try await connection.firstRow(query, logger: logger).map(Self.circuitRecord)
    }

    /// One circuit's row, unlocked, and the database's clock, in one round trip: the read every
    /// admission makes.
    func loadCircuitWithClock(_ connection: PostgresConnection, endpoint: String) async throws -> (CircuitRecord?, Date) {
        guard let row = try await connection.firstRow("""
            SELECT tollgate_ms(clock_timestamp()) AS now_ms, \(unescaped: Self.circuitColumns)
            FROM (SELECT 1) AS one LEFT JOIN circuits ON circuits.endpoint = \(endpoint)
            """, logger: logger) else {
            throw StoreRefusal.invalidArgument("the circuit of \(endpoint) returned no row")
        }
        let now = Self.date(milliseconds: try row.makeRandomAccess()["now_ms"].decode(Int.self))
        let record = try row.makeRandomAccess()["endpoint"].decode(String?.self) == nil ? nil : try Self.circuitRecord(row)
        return (record, now)
    }

    /// Every circuit's row by endpoint; with `lock`, held FOR UPDATE.
    func loadCircuits(_ connection: PostgresConnection, lock: Bool) async throws -> [CircuitRecord] {
        let query: PostgresQuery = lock
            ? "SELECT \(unescaped: Self.circuitColumns) FROM circuits ORDER BY endpoint FOR UPDATE"
            : "SELECT \(unescaped: Self.circuitColumns) FROM circuits ORDER BY endpoint"
        return try await connection.rows(query, logger: logger).map(Self.circuitRecord)
    }

    /// Writes a machine's record and its transitions. A row that did not exist is inserted only if
    /// no other machine created it meanwhile.
    /// - Returns: False when another machine created the row first: nothing was written, and the
    ///   caller runs its event again on that row.
    func saveCircuit(
        _ connection: PostgresConnection, _ record: CircuitRecord, existed: Bool, transitions: [CircuitTransition]
    ) async throws -> Bool {
        let openedAt = record.openedAt.map(Self.milliseconds(_:))
        let openUntil = record.openUntil.map(Self.milliseconds(_:))
        let openDuration = record.openDuration.map(Self.milliseconds(_:))
        let leaseUntil = record.probeLeaseUntil.map(Self.milliseconds(_:))
        let updatedAt = Self.milliseconds(record.updatedAt)
        // The generation counts state changes, so a machine can tell that what it read is stale.
        let generationStep = transitions.isEmpty ? 0 : 1
        if existed {
            try await connection.run("""
                UPDATE circuits SET state = \(record.state.rawValue), consecutive_failures = \(record.consecutiveFailures),
                    consecutive_rate_limits = \(record.consecutiveRateLimits), failure_threshold = \(record.failureThreshold),
                    opened_at_ms = \(openedAt), open_until_ms = \(openUntil), open_duration_ms = \(openDuration),
                    probe_owner = \(record.probeOwner), probe_lease_until_ms = \(leaseUntil),
                    failed_probes = \(record.failedProbes), trips = \(record.trips), updated_at_ms = \(updatedAt),
                    generation = generation + \(generationStep)
                WHERE endpoint = \(record.endpoint)
                """, logger: logger)
        } else {
            let inserted = try await connection.firstRow("""
                INSERT INTO circuits (\(unescaped: Self.circuitColumns), generation)
                VALUES (\(record.endpoint), \(record.state.rawValue), \(record.consecutiveFailures),
                        \(record.consecutiveRateLimits), \(record.failureThreshold), \(openedAt), \(openUntil),
                        \(openDuration), \(record.probeOwner), \(leaseUntil), \(record.failedProbes), \(record.trips),
                        \(updatedAt), \(generationStep))
                ON CONFLICT (endpoint) DO NOTHING
                RETURNING 1
                """, logger: logger)
            if inserted == nil { return false }
        }
        for transition in transitions {
            try await connection.run("""
                INSERT INTO circuit_transitions (endpoint, at_ms, from_state, to_state, reason)
                VALUES (\(transition.endpoint), \(Self.milliseconds(transition.at)), \(transition.from.rawValue),
                        \(transition.to.rawValue), \(transition.reason))
                """, logger: logger)
        }
        if let last = transitions.last {
            // Delivered at commit to every process that LISTENs; the others poll.
            try await connection.run(
                "SELECT pg_notify(\(Self.circuitChannel), \(last.endpoint + " " + last.to.rawValue))", logger: logger
            )
        }
        return true
    }

    /// Another machine created the circuit's row between this transaction's read and its insert:
    /// the transaction rolls back and runs again, on that row.
    struct CircuitRowCreatedConcurrently: Error {}

    /// Runs one event of the state machine on an endpoint's circuit inside the caller's transaction.
    ///
    /// First without a lock: most calls meet a closed circuit and change nothing, and those are
    /// answered by one read. An event that changes the circuit runs again on the row held FOR
    /// UPDATE, with the database's clock read after the lock is granted, and its result is the one
    /// returned.
    /// - Throws: ``CircuitRowCreatedConcurrently`` (which ``inTransaction(_:_:)`` retries) when
    ///   another machine created the row meanwhile.
    func runCircuitEvent<Result: Sendable>(
        _ connection: PostgresConnection, endpoint: String,
        _ step: @escaping @Sendable (CircuitRecord?, Date) -> (CircuitStateMachine, [CircuitTransition], Result)
    ) async throws -> Result {
        let (unlocked, unlockedNow) = try await loadCircuitWithClock(connection, endpoint: endpoint)
        let (machine, _, result) = step(unlocked, unlockedNow)
        if !machine.hasChanges { return result }
        let record = try await loadCircuit(connection, endpoint: endpoint, lock: true)
        let (lockedMachine, transitions, lockedResult) = step(record, try await databaseNow(connection))
        guard lockedMachine.hasChanges else { return lockedResult }
        guard try await saveCircuit(connection, lockedMachine.record, existed: record != nil, transitions: transitions) else {
            throw CircuitRowCreatedConcurrently()
        }
        return lockedResult
    }

    static func circuitRecord(_ row: PostgresRow) throws -> CircuitRecord {
        let row = row.makeRandomAccess()
        let stateText = try row["state"].decode(String.self)
        guard let state = CircuitState(rawValue: stateText) else {
            throw CircuitRules.unknownState(stateText)
        }
        return CircuitRecord(
            endpoint: try row["endpoint"].decode(String.self), state: state,
            consecutiveFailures: try row["consecutive_failures"].decode(Int.self),
            consecutiveRateLimits: try row["consecutive_rate_limits"].decode(Int.self),
            failureThreshold: try row["failure_threshold"].decode(Int.self),
            openedAt: try row["opened_at_ms"].decode(Int?.self).map(date(milliseconds:)),
            openUntil: try row["open_until_ms"].decode(Int?.self).map(date(milliseconds:)),
            openDuration: try row["open_duration_ms"].decode(Int?.self).map { .milliseconds($0) },
            probeOwner: try row["probe_owner"].decode(String?.self),
            probeLeaseUntil: try row["probe_lease_until_ms"].decode(Int?.self).map(date(milliseconds:)),
            failedProbes: try row["failed_probes"].decode(Int.self),
            trips: try row["trips"].decode(Int.self),
            updatedAt: date(milliseconds: try row["updated_at_ms"].decode(Int.self))
        )
    }

    static func milliseconds(_ date: Date) -> Int {
        SaturatingConversion.int((date.timeIntervalSince1970 * 1000).rounded())
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    static func date(milliseconds: Int) -> Date {
        Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
