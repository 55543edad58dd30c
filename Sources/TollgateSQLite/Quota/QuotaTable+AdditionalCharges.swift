import Foundation
import TollgateCore

/// A call charged in several buckets: the reservation's own charge event is the primary; each
/// further bucket gets a `charge` event whose `reservation_id` points at it, written in the same
/// transaction, and refunded with it.
extension QuotaTable {
    /// Whether a further bucket can pay its charge.
    enum AdditionalCheck {
        /// It can, in this window.
        case canPay(QuotaPeriod)
        /// It cannot.
        case refused(QuotaRefusal)
    }

    /// Whether `charge`'s bucket can pay, in its own window. Writes nothing but the bucket's row.
    static func checkAdditional(
        _ db: Database, _ charge: QuotaBucketCharge, request: QuotaReservationRequest, day: PacificDay, nowMs: Int64
    ) throws -> AdditionalCheck {
        try QuotaRules.validateCost(charge.cost, endpoint: request.endpoint, bucket: charge.bucket)
        let row = try synchronizeBucket(db, charge.bucket, configuredLimit: charge.configuredLimit, window: charge.window,
                                        nowMs: nowMs)
        let period = row.period(in: charge.window, at: request.at)
        try noteWindow(db, charge.bucket, row: row, period: period)
        let used = try bucketUnits(db, bucket: charge.bucket, in: period)
        func refusal(_ reason: QuotaRefusal.Reason) -> AdditionalCheck {
            .refused(QuotaRefusal(reason: reason, bucket: charge.bucket, endpoint: request.endpoint, cost: charge.cost,
                                  day: day, bucketUnitsUsed: used, limit: row.limit, period: period))
        }
        if row.isExhausted(in: period, nowMs: nowMs) { return refusal(.exhaustedByServer) }
        let (usedAfter, overflow) = used.addingReportingOverflow(charge.cost)
        guard !overflow, usedAfter <= row.limit else { return refusal(.overBudget) }
        return .canPay(period)
    }

    /// Writes `charge` for the reservation `reservationID`, in its bucket's window.
    static func chargeAdditional(
        _ db: Database, _ charge: QuotaBucketCharge, endpoint: String, reservationID: Int64, period: QuotaPeriod,
        nowMs: Int64
    ) throws {
        try appendEvent(
            db, atMs: nowMs, key: period.key, bucket: charge.bucket, endpoint: endpoint, kind: .charge, units: charge.cost,
            reservationID: reservationID, detail: "charged with reservation \(reservationID)"
        )
        try db.cachedStatement(sql: """
            INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, ?, ?, 1)
            ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units, calls = calls + 1
            WHERE quota_usage.units BETWEEN 0 AND ? - excluded.units
            """).execute(arguments: [period.key, charge.bucket, endpoint, charge.cost, QuotaLimits.maximumUnits])
        guard db.changesCount == 1 else {
            throw StoreRefusal.invalidArgument(
                "the stored usage of \(endpoint) in \(charge.bucket) in \(period.key) is outside \(QuotaLimits.rangeDescription) "
                    + "units; the file was changed by hand. Reset the day (tollgate quota reset) to repair it"
            )
        }
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
