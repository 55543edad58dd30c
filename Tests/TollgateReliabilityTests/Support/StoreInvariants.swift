import Foundation
import Testing
import Tollgate

/// The properties a store's file keeps whatever happened to the processes that wrote it.
enum StoreInvariants {
    /// `PRAGMA integrity_check`'s answer: `ok` for a sound file.
    static func integrity(_ store: SQLiteStore) throws -> String {
        try store.read { db in
            try db.fetchAll(sql: "PRAGMA integrity_check").compactMap { $0[0].string }.joined(separator: "; ")
        }
    }

    /// Circuits whose row is inconsistent in itself or with its last recorded transition: an open
    /// circuit without an open-until time, counters out of range, a row whose state is not the one
    /// its history ends in.
    static func halfWrittenCircuits(_ store: SQLiteStore) throws -> [String] {
        try store.read { db in
            try db.fetchAll(sql: """
                SELECT circuit.endpoint || ': ' || circuit.state FROM circuits AS circuit
                WHERE (circuit.state = 'open' AND (circuit.open_until_ms IS NULL OR circuit.opened_at_ms IS NULL))
                   OR circuit.consecutive_failures < 0
                   OR circuit.consecutive_rate_limits > circuit.consecutive_failures
                   OR (circuit.state = 'closed' AND circuit.consecutive_failures >= circuit.failure_threshold)
                   OR circuit.state <> COALESCE((SELECT last.to_state FROM circuit_transitions AS last
                                                 WHERE last.endpoint = circuit.endpoint
                                                 ORDER BY last.id DESC LIMIT 1), circuit.state)
                """).compactMap { $0[0].string }
        }
    }

    /// Cache totals that differ from the entries, and entries without a body.
    static func cacheInconsistencies(_ store: SQLiteStore) throws -> [String] {
        try store.read { db in
            var problems: [String] = []
            let counted = try db.fetchOne(sql: "SELECT COUNT(*), COALESCE(SUM(body_size), 0) FROM cache_entries")
            let totals = try db.fetchOne(sql: "SELECT entries, body_bytes FROM cache_totals WHERE id = 1")
            if counted?[0].int != totals?[0].int || counted?[1].int != totals?[1].int {
                problems.append("cache_totals \(String(describing: totals?[0].int))/\(String(describing: totals?[1].int)) "
                                + "but entries \(String(describing: counted?[0].int))/\(String(describing: counted?[1].int))")
            }
            let bodiless = try db.fetchValue(sql: """
                SELECT COUNT(*) FROM cache_entries AS entry
                WHERE NOT EXISTS (SELECT 1 FROM cache_bodies AS body WHERE body.entry_id = entry.id)
                """).int ?? 0
            if bodiless > 0 { problems.append("\(bodiless) entries without a body") }
            return problems
        }
    }

    /// Refund events that do not give back exactly one charge's units.
    static func unmatchedRefunds(_ store: SQLiteStore) throws -> Int {
        try store.read { db in
            try db.fetchValue(sql: """
                SELECT COUNT(*) FROM quota_events AS refund
                LEFT JOIN quota_events AS charge ON charge.id = refund.reservation_id AND charge.kind = 'charge'
                WHERE refund.kind = 'refund' AND (charge.id IS NULL OR refund.units <> -charge.units)
                """).int ?? -1
        }
    }

    /// Ids of the events of one kind.
    static func eventIDs(_ store: SQLiteStore, kind: String) throws -> Set<Int64> {
        try store.read { db in
            Set(try db.fetchAll(sql: kind == "refund"
                ? "SELECT reservation_id FROM quota_events WHERE kind = 'refund'"
                : "SELECT id FROM quota_events WHERE kind = 'charge'").compactMap { $0[0].int64 })
        }
    }
}
