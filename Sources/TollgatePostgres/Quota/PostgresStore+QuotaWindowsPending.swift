import Foundation
import TollgateCore

// TEMPORARY, until the PostgreSQL implementation of windows lands (branch i32-postgres): these
// operations refuse on PostgreSQL rather than pretend.
extension PostgresStore {
    public func recordQuotaAnnouncement(_ announcement: QuotaAnnouncement) async throws -> QuotaAnnouncementOutcome {
        throw StoreRefusal.invalidArgument("announced limits are not yet kept in PostgreSQL")
    }

    public func settleQuotaCost(
        reservationID: Int64, bucket: String, actualUnits: Int, at: Date, detail: String?
    ) async throws -> QuotaCostSettlement {
        throw StoreRefusal.invalidArgument("settled costs are not yet kept in PostgreSQL")
    }

    public func quotaBucketStatus(
        bucket: String, configuredLimit: Int, window: QuotaWindow, at: Date
    ) async throws -> QuotaBucketStatus {
        try await quotaBucketStatus(bucket: bucket, configuredLimit: configuredLimit, at: at)
    }

    public func quotaWindows(at: Date) async throws -> [QuotaBucketStatus] { [] }
}
