import Foundation
import TollgateCore

extension QuotaTable {
    /// Sets a bucket's count for a day to what the provider says (its console), with one event
    /// for the difference: a `charge` when the provider counted more, a `reset` when less, on the
    /// endpoint `*`, so the totals still equal the events and nothing is edited silently.
    static func reconcile(
        _ db: Database, bucket: String, used: Int, configuredLimit: Int, day: PacificDay, at: Date
    ) throws -> QuotaReconciliation {
        try QuotaRules.validateReconciledCount(used)
        _ = try synchronizeBucket(db, bucket, configuredLimit: configuredLimit, window: nil, nowMs: at.millisecondsSince1970)
        let before = try bucketUnits(db, bucket: bucket, day: day)
        let adjustment = used - before   // both within ±maximumUnits: no overflow
        try appendEvent(
            db, atMs: at.millisecondsSince1970, day: day, bucket: bucket, endpoint: "*",
            kind: adjustment >= 0 ? .charge : .reset, units: adjustment,
            detail: "reconciled with the provider's count: \(used) units used (the ledger had \(before))"
        )
        if adjustment != 0 {
            try db.execute(sql: """
                INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, '*', ?, 0)
                ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units
                """, arguments: [day.key, bucket, adjustment])
        }
        return QuotaReconciliation(day: day, bucket: bucket, countedBefore: before, used: used)
    }

    /// Net units charged to each bucket since `since` (charges less refunds and resets of
    /// charges in the window), for the burn rate.
    static func burn(_ db: Database, since: Date, until: Date) throws -> [QuotaBurn] {
        let windowSeconds = max(1, Int(until.timeIntervalSince(since).rounded()))
        return try db.fetchAll(sql: """
            SELECT bucket, MAX(COALESCE(SUM(MIN(MAX(units, -?), ?)), 0), 0) AS units FROM quota_events
            WHERE at_ms >= ? AND at_ms <= ? AND kind IN ('charge', 'refund', 'settle') AND endpoint <> '*'
            GROUP BY bucket ORDER BY bucket
            """, arguments: [QuotaLimits.maximumUnits, QuotaLimits.maximumUnits, since.millisecondsSince1970,
                  until.millisecondsSince1970]
        ).map { row in
            QuotaBurn(bucket: try row.decode(String.self, forColumn: "bucket"),
                      units: try row.decode(Int.self, forColumn: "units"), windowSeconds: windowSeconds)
        }
    }
}
