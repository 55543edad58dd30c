import Foundation
import TollgateCore

/// A call charged in several buckets: the reservation's own charge event is the primary; each
/// further bucket gets a `charge` event whose `reservation_id` points at it, written in the same
/// transaction, and refunded with it.
extension QuotaTable {
    /// Decides whether `charge`'s bucket can pay, in its own window: its row brought up to date and
    /// its window noted, nothing charged yet (``QuotaDecision/charges`` are written once every
    /// bucket admits).
    static func decideAdditional(
        _ db: Database, _ charge: QuotaBucketCharge, request: QuotaReservationRequest, nowMs: Int64
    ) throws -> QuotaDecision {
        try QuotaRules.validateCost(charge.cost, endpoint: request.endpoint, bucket: charge.bucket)
        let (row, _) = try synchronizeBucket(db, charge.bucket, configuredLimit: charge.configuredLimit,
                                             window: charge.window, nowMs: nowMs)
        let period = row.period(in: charge.window, at: request.at)
        let decision = QuotaStateMachine.decide(QuotaStateMachine.Admission(
            endpoint: request.endpoint, cost: charge.cost, row: row, period: period,
            used: try bucketUnits(db, bucket: charge.bucket, in: period), now: request.at
        ))
        try apply(db, decision.bookkeeping, bucket: charge.bucket, nowMs: nowMs)
        return decision
    }

    /// Refunds the further charges of the reservation `reservationID`, each once.
    static func refundAdditional(_ db: Database, reservationID: Int64, at: Date, reason: String?) throws {
        let linked = try db.cachedStatement(sql: "SELECT id FROM quota_events WHERE reservation_id = ? AND kind = 'charge'").fetchAll(arguments: [reservationID])
        for row in linked {
            let id = try row.decode(Int64.self, forColumn: "id")
            _ = try refund(db, reservationID: id, at: at, reason: reason)
        }
    }
}
