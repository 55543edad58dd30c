import Foundation
import TollgateCore

/// Limits the server announces (`RateLimit`, `X-RateLimit-Remaining`…): the ledger follows the
/// server down when it says fewer units are left than the ledger counts, never up.
extension QuotaTable {
    /// Records what the server said. See ``QuotaStorage/recordQuotaAnnouncement(_:)``.
    static func announce(_ db: Database, _ announcement: QuotaAnnouncement) throws -> QuotaAnnouncementOutcome {
        try QuotaRules.validateAnnouncement(announcement)
        let nowMs = announcement.at.millisecondsSince1970
        let (row, _) = try synchronizeBucket(db, announcement.bucket, configuredLimit: announcement.configuredLimit,
                                             window: announcement.window, nowMs: nowMs)
        let (period, movedReset, writes) = QuotaStateMachine.announcedPeriod(
            row, window: announcement.window, resetsAt: announcement.resetsAt, now: announcement.at
        )
        try apply(db, writes, bucket: announcement.bucket, nowMs: nowMs)
        let used = try bucketUnits(db, bucket: announcement.bucket, in: period)
        let (followed, follow) = QuotaStateMachine.follow(
            remaining: announcement.remaining, endpoint: announcement.endpoint, limit: row.limit, period: period, used: used
        )
        try apply(db, follow, bucket: announcement.bucket, nowMs: nowMs)
        return QuotaAnnouncementOutcome(unitsFollowed: followed, movedReset: movedReset, period: period,
                                        unitsUsed: used + followed, limit: row.limit)
    }
}
