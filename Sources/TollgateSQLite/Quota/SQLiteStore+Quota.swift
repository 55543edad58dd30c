import Foundation
import TollgateCore

extension SQLiteStore: QuotaStorage {
    public func reserveQuota(_ request: QuotaReservationRequest) async throws -> QuotaReservationOutcome {
        try await writeKeepingRecentEntries { db in try QuotaTable.reserve(db, request) }
    }

    public func refundQuota(reservationID: Int64, at: Date, reason: String?) async throws -> QuotaRefundOutcome {
        try await writeKeepingRecentEntries { db in try QuotaTable.refund(db, reservationID: reservationID, at: at, reason: reason) }
    }

    public func markQuotaExhausted(
        bucket: String, configuredLimit: Int, endpoint: String?, at: Date
    ) async throws -> QuotaExhaustion {
        try await writeKeepingRecentEntries { db in
            try QuotaTable.markExhausted(db, bucket: bucket, configuredLimit: configuredLimit, endpoint: endpoint, at: at)
        }
    }

    public func recordQuotaAnnouncement(_ announcement: QuotaAnnouncement) async throws -> QuotaAnnouncementOutcome {
        try await writeKeepingRecentEntries { db in try QuotaTable.announce(db, announcement) }
    }

    public func settleQuotaCost(
        reservationID: Int64, bucket: String, actualUnits: Int, at: Date, detail: String?
    ) async throws -> QuotaCostSettlement {
        try await writeKeepingRecentEntries { db in
            try QuotaTable.settle(db, reservationID: reservationID, bucket: bucket, actualUnits: actualUnits, at: at,
                                  detail: detail)
        }
    }

    public func quotaBucketStatus(
        bucket: String, configuredLimit: Int, window: QuotaWindow, at: Date
    ) async throws -> QuotaBucketStatus {
        try await read { db in
            try QuotaTable.status(db, bucket: bucket, configuredLimit: configuredLimit, window: window, at: at)
        }
    }

    public func quotaWindows(at: Date) async throws -> [QuotaBucketStatus] {
        try await read { db in try QuotaTable.windows(db, at: at) }
    }

    public func quotaUsage(on day: PacificDay) async throws -> [QuotaUsage] {
        try await read { db in try QuotaTable.usage(db, on: day) }
    }

    public func quotaBatchUsage(on day: PacificDay) async throws -> [QuotaBatchUsage] {
        try await read { db in try QuotaTable.batchUsage(db, on: day) }
    }

    public func quotaBucketStatus(bucket: String, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus {
        try await read { db in try QuotaTable.status(db, bucket: bucket, configuredLimit: configuredLimit, at: at) }
    }

    public func setQuotaLimit(bucket: String, limit: Int?, configuredLimit: Int, at: Date) async throws -> QuotaBucketStatus {
        try await writeKeepingRecentEntries { db in
            try QuotaTable.setLimit(db, bucket: bucket, limit: limit, configuredLimit: configuredLimit, at: at)
        }
    }

    public func resetQuotaDay(_ day: PacificDay, bucket: String, at: Date) async throws -> QuotaDayReset {
        try await writeKeepingRecentEntries { db in try QuotaTable.resetDay(db, day, bucket: bucket, at: at) }
    }

    public func quotaLedgerDiscrepancies() async throws -> [QuotaLedgerDiscrepancy] {
        try await read { db in try QuotaTable.discrepancies(db) }
    }

    public func reconcileQuota(
        bucket: String, used: Int, configuredLimit: Int, day: PacificDay, at: Date
    ) async throws -> QuotaReconciliation {
        try await writeKeepingRecentEntries { db in
            try QuotaTable.reconcile(db, bucket: bucket, used: used, configuredLimit: configuredLimit, day: day, at: at)
        }
    }

    public func quotaBurn(since: Date, until: Date) async throws -> [QuotaBurn] {
        try await read { db in try QuotaTable.burn(db, since: since, until: until) }
    }

    public func quotaEndpointCharged(_ endpoint: String) async throws -> Bool {
        // quota_usage holds one row per day and endpoint: small enough to scan once per process.
        try await read { db in
            try db.fetchValue(sql: "SELECT EXISTS (SELECT 1 FROM quota_usage WHERE endpoint = ?)", arguments: [endpoint]).int == 1
        }
    }
}
