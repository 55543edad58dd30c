import Foundation
import TollgateCore

/// Costs known only after the answer: a charge made at an estimate is settled at its actual cost.
extension QuotaTable {
    /// Settles one charge. See ``QuotaStorage/settleQuotaCost(reservationID:bucket:actualUnits:at:detail:)``.
    static func settle(
        _ db: Database, reservationID: Int64, bucket: String, actualUnits: Int, at: Date, detail: String?
    ) throws -> QuotaCostSettlement {
        try QuotaRules.validateActualCost(actualUnits, reservationID: reservationID, bucket: bucket)
        // The reservation's own charge, or its further charge in that bucket.
        guard let charge = try db.cachedStatement(sql: """
            SELECT charge.id, charge.pacific_date, charge.endpoint, charge.units,
                   EXISTS (SELECT 1 FROM quota_events AS refund
                           WHERE refund.reservation_id = charge.id AND refund.kind = 'refund') AS refunded,
                   EXISTS (SELECT 1 FROM quota_events AS settle
                           WHERE settle.reservation_id = ? AND settle.kind = 'settle' AND settle.bucket = charge.bucket)
                       AS settled
            FROM quota_events AS charge
            WHERE charge.kind = 'charge' AND charge.bucket = ?
              AND (charge.id = ? OR (charge.reservation_id = ? AND charge.reservation_id IS NOT NULL))
            ORDER BY charge.id LIMIT 1
            """).fetchOne(arguments: [reservationID, bucket, reservationID, reservationID])
        else {
            throw QuotaRules.noCharge(reservationID: reservationID, bucket: bucket)
        }
        if try charge.decode(Bool.self, forColumn: "refunded") || charge.decode(Bool.self, forColumn: "settled") {
            return .alreadySettled
        }
        let key = try charge.decode(String.self, forColumn: "pacific_date")
        let endpoint = try charge.decode(String.self, forColumn: "endpoint")
        let estimate = try charge.decode(Int.self, forColumn: "units")
        let difference = actualUnits - estimate
        try appendEvent(
            db, atMs: at.millisecondsSince1970, key: key, bucket: bucket, endpoint: endpoint, kind: .settle,
            units: difference, reservationID: reservationID,
            detail: QuotaRules.settledDetail(actualUnits: actualUnits, estimate: estimate, source: detail)
        )
        if difference != 0 {
            // The guard keeps the total in range however the file was edited; a refusal rolls back the event too.
            try db.cachedStatement(sql: """
                UPDATE quota_usage SET units = units + ?
                WHERE pacific_date = ? AND bucket = ? AND endpoint = ? AND units + ? BETWEEN 0 AND ?
                """).execute(arguments: [difference, key, bucket, endpoint, difference, QuotaLimits.maximumUnits])
            guard db.changesCount == 1 else {
                throw QuotaRules.settlementOutOfRange(difference: difference, endpoint: endpoint, bucket: bucket, key: key)
            }
        }
        let row = try bucketRow(db, bucket, configuredLimit: 0)
        // A rolling window's usage is more than the charge's slice: all of it counts.
        let period = QuotaRules.settlementPeriod(chargeKey: key, current: row.map { $0.period(in: $0.storedWindow, at: at) })
        let used = try bucketUnits(db, bucket: bucket, in: period)
        return .settled(difference: difference, actualUnits: actualUnits, overLimit: used > (row?.storedLimit ?? 0))
    }
}
