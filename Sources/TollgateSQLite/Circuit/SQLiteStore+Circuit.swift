import Foundation
import TollgateCore

extension SQLiteStore: CircuitStorage {
    public func admitCircuitRequest(endpoint: String, policy: CircuitPolicy, probeToken: String,
                                    at now: Date) async throws -> CircuitAdmission {
        try await writeKeepingRecentEntries { db in
            try CircuitTable.admit(db, endpoint: endpoint, policy: policy, probeToken: probeToken, now: now)
        }
    }

    public func recordCircuitOutcome(_ outcome: CircuitOutcome, endpoint: String, probeToken: String?,
                                     policy: CircuitPolicy, at now: Date) async throws -> CircuitRecording {
        try await writeKeepingRecentEntries { db in
            try CircuitTable.record(db, outcome: outcome, endpoint: endpoint, probeToken: probeToken,
                                    policy: policy, now: now)
        }
    }

    public func circuit(endpoint: String) async throws -> CircuitRecord? {
        try await read { db in try CircuitTable.load(db, endpoint: endpoint) }
    }

    public func allCircuits() async throws -> [CircuitRecord] {
        try await read { db in try CircuitTable.all(db) }
    }

    public func resetCircuits(endpoint: String?, at now: Date) async throws -> [CircuitTransition] {
        try await writeKeepingRecentEntries { db in try CircuitTable.reset(db, endpoint: endpoint, now: now) }
    }

    public func forceOpenCircuit(endpoint: String, duration: Duration, policy: CircuitPolicy,
                                 at now: Date) async throws -> CircuitTransition {
        try await writeKeepingRecentEntries { db in
            try CircuitTable.forceOpen(db, endpoint: endpoint, duration: duration, policy: policy, now: now)
        }
    }

    public func circuitTransitions(endpoint: String?, limit: Int) async throws -> [CircuitTransition] {
        try await read { db in try CircuitTable.transitions(db, endpoint: endpoint, limit: limit) }
    }
}
