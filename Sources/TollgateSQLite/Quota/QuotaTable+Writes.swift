import Foundation
import TollgateCore

/// The quota machine's writes (``QuotaWrite``) in SQLite's SQL: the only place the ledger's tables
/// change after a decision, and nothing here decides.
extension QuotaTable {
    /// Makes `writes`, in order, for `bucket`.
    /// - Parameters:
    ///   - bucket: The bucket the writes belong to.
    ///   - nowMs: The time of the operation, stamped on events and rows.
    ///   - reservationID: For a further bucket of a reservation: the reservation its charge is linked to.
    ///   - detail: What the `charge` event says of itself (a batch's count of IDs); for a further
    ///     bucket, the reservation it goes with.
    /// - Returns: The id of the `charge` event written, if one was.
    /// - Throws: `StoreRefusal.invalidArgument` when a stored total changed by hand cannot take the charge.
    @discardableResult
    static func apply(
        _ db: Database, _ writes: [QuotaWrite], bucket: String, nowMs: Int64, reservationID: Int64? = nil,
        detail: String? = nil
    ) throws -> Int64? {
        var chargeID: Int64?
        for write in writes {
            switch write {
            case .createBucket(let limit, let specification):
                try db.cachedStatement(sql: "INSERT INTO quota_buckets (bucket, daily_limit, limit_source, updated_at_ms, window_spec) VALUES (?, ?, 'configuration', ?, ?)").execute(arguments: [bucket, limit, nowMs, specification])
            case .storeLimit(let limit):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET daily_limit = ?, updated_at_ms = ? WHERE bucket = ?").execute(arguments: [limit, nowMs, bucket])
            case .changeWindow(let specification):
                try db.cachedStatement(sql: """
                    UPDATE quota_buckets SET window_spec = ?, announced_key = NULL, announced_reset_ms = NULL,
                        paced_at_ms = NULL, paced_key = NULL, updated_at_ms = ?
                    WHERE bucket = ?
                    """).execute(arguments: [specification, nowMs, bucket])
            case .noteWindow(let period):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET window_key = ?, window_first_key = ?, window_end_ms = ? WHERE bucket = ?").execute(arguments: [period.key, period.firstKey, period.end.millisecondsSince1970, bucket])
            case .event(let kind, let key, let detail):
                try appendEvent(db, atMs: nowMs, key: key, bucket: bucket, endpoint: QuotaRules.wholeBucket, kind: kind,
                                units: 0, detail: detail)
            case .charge(let key, let endpoint, let units):
                chargeID = try charge(db, key: key, bucket: bucket, endpoint: endpoint, units: units, nowMs: nowMs,
                                      reservationID: reservationID,
                                      detail: detail ?? reservationID.map { "charged with reservation \($0)" })
            case .markPaced(let atMs, let key):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET paced_at_ms = ?, paced_key = ? WHERE bucket = ?").execute(arguments: [atMs, key, bucket])
            case .recordWarning(let key, let percent):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET warned_date = ?, warned_percent = ? WHERE bucket = ?").execute(arguments: [key, percent, bucket])
            case .announceReset(let key, let resetMs):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET announced_key = ?, announced_reset_ms = ? WHERE bucket = ?").execute(arguments: [key, resetMs, bucket])
            case .followAnnouncement(let key, let units, let detail):
                try appendEvent(db, atMs: nowMs, key: key, bucket: bucket, endpoint: QuotaRules.wholeBucket,
                                kind: .announced, units: units, detail: detail)
                try db.cachedStatement(sql: """
                    INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, '*', ?, 0)
                    ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units
                    """).execute(arguments: [key, bucket, units])
            case .markExhausted(let key, let untilMs, let endpoint, let detail):
                try db.cachedStatement(sql: "UPDATE quota_buckets SET exhausted_until_ms = ?, updated_at_ms = ? WHERE bucket = ?").execute(arguments: [untilMs, nowMs, bucket])
                try appendEvent(db, atMs: nowMs, key: key, bucket: bucket, endpoint: endpoint, kind: .exhausted, units: 0,
                                detail: detail)
            }
        }
        return chargeID
    }

    /// A `charge` event and the endpoint's total under `key`.
    private static func charge(
        _ db: Database, key: String, bucket: String, endpoint: String, units: Int, nowMs: Int64, reservationID: Int64?,
        detail: String?
    ) throws -> Int64 {
        let id = try appendEvent(
            db, atMs: nowMs, key: key, bucket: bucket, endpoint: endpoint, kind: .charge, units: units,
            reservationID: reservationID, detail: detail
        )
        // The guard keeps the endpoint's total within range even when the file holds a total that
        // no charge could have made (edited by hand): then nothing is written and the whole
        // reservation, event included, rolls back with a typed error. The row is there for every
        // charge but an endpoint's first in a window: a plain UPDATE, and the upsert only when it
        // changed nothing (no row yet, or the guard refused).
        try db.cachedStatement(sql: """
            UPDATE quota_usage SET units = units + ?4, calls = calls + 1
            WHERE pacific_date = ?1 AND bucket = ?2 AND endpoint = ?3 AND units BETWEEN 0 AND ?5 - ?4
            """).execute(key, bucket, endpoint, units, QuotaLimits.maximumUnits)
        if db.changesCount == 0 {
            try db.cachedStatement(sql: """
                INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, ?, ?, 1)
                ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units, calls = calls + 1
                WHERE quota_usage.units BETWEEN 0 AND ? - excluded.units
                """).execute(key, bucket, endpoint, units, QuotaLimits.maximumUnits)
        }
        guard db.changesCount == 1 else {
            let place = reservationID == nil ? "" : " in \(bucket)"
            throw StoreRefusal.invalidArgument(
                "the stored usage of \(endpoint)\(place) in \(key) is outside \(QuotaLimits.rangeDescription) units; "
                    + "the file was changed by hand. Reset the day (tollgate quota reset) to repair it"
            )
        }
        return id
    }
}
