import Foundation
import TollgateCore

/// Limits the server announces (`RateLimit`, `X-RateLimit-Remaining`…): the ledger follows the
/// server down when it says fewer units are left than the ledger counts, never up.
extension QuotaTable {
    /// Records what the server said. See ``QuotaStorage/recordQuotaAnnouncement(_:)``.
    static func announce(_ db: Database, _ announcement: QuotaAnnouncement) throws -> QuotaAnnouncementOutcome {
        try QuotaRules.validateAnnouncement(announcement)
        let now = announcement.at
        let nowMs = now.millisecondsSince1970
        let row = try synchronizeBucket(db, announcement.bucket, configuredLimit: announcement.configuredLimit,
                                        window: announcement.window, nowMs: nowMs)
        var period = row.period(in: announcement.window, at: now)
        var movedReset = false
        // A reset more than a second from the window's end moves it; a rolling window has no end to move.
        if let reset = announcement.resetsAt, QuotaRules.announcedResetMovesEnd(reset, of: period, now: now) {
            period = QuotaPeriod(key: period.key, start: period.start, end: reset)
            movedReset = true
            try db.cachedStatement(sql: "UPDATE quota_buckets SET announced_key = ?, announced_reset_ms = ? WHERE bucket = ?").execute(arguments: [period.key, reset.millisecondsSince1970, announcement.bucket])
        }
        try noteWindow(db, announcement.bucket, row: row, period: period)
        let used = try bucketUnits(db, bucket: announcement.bucket, in: period)
        let followed = QuotaRules.unitsToFollow(announcedRemaining: announcement.remaining, limit: row.limit, used: used)
        guard followed > 0 else {
            return QuotaAnnouncementOutcome(unitsFollowed: 0, movedReset: movedReset, period: period, unitsUsed: used,
                                            limit: row.limit)
        }
        try appendEvent(
            db, atMs: nowMs, key: period.key, bucket: announcement.bucket, endpoint: "*", kind: .announced,
            units: followed,
            detail: QuotaRules.announcedDetail(remaining: announcement.remaining, endpoint: announcement.endpoint,
                                               counted: QuotaLimits.remaining(limit: row.limit, used: used))
        )
        try db.cachedStatement(sql: """
            INSERT INTO quota_usage (pacific_date, bucket, endpoint, units, calls) VALUES (?, ?, '*', ?, 0)
            ON CONFLICT (pacific_date, bucket, endpoint) DO UPDATE SET units = units + excluded.units
            """).execute(arguments: [period.key, announcement.bucket, followed])
        return QuotaAnnouncementOutcome(unitsFollowed: followed, movedReset: movedReset, period: period,
                                        unitsUsed: used + followed, limit: row.limit)
    }
}
