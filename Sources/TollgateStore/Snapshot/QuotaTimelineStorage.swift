import Foundation

/// A store that can say how a Pacific day's units were spent over the day, for a burn chart:
/// `/api/snapshot` and the web dashboard read it, whichever backend holds the ledger.
public protocol QuotaTimelineStorage: Sendable {
    /// Sums the ledger's events of one Pacific day per bucket and per step of `stepSeconds` since
    /// the day's start, in one read. The steps of a bucket add up to its usage that day.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - stepSeconds: The length of a step, at least one second.
    /// - Returns: The steps that saw an event, ordered by bucket, then start.
    /// - Throws: `StoreError.invalidArgument` for a step shorter than a second; the backend's error.
    func quotaTimeline(on day: PacificDay, stepSeconds: Int) async throws -> [QuotaTimelineStep]
}

extension SQLiteStore: QuotaTimelineStorage {
    public func quotaTimeline(on day: PacificDay, stepSeconds: Int) async throws -> [QuotaTimelineStep] {
        guard stepSeconds >= 1 else { throw StoreError.invalidArgument("a timeline step must be at least one second") }
        let startMs = Int64((day.start.timeIntervalSince1970 * 1000).rounded())
        let stepMs = Int64(stepSeconds) * 1000
        return try await read { db in
            // quota_events has no index by day (schema 4 dropped it): one scan, as the audit makes.
            try db.fetchAll("""
                SELECT bucket, MAX(at_ms - ?, 0) / ? AS step, SUM(units) FROM quota_events
                WHERE pacific_date = ? GROUP BY bucket, step HAVING SUM(units) <> 0 ORDER BY bucket, step
                """, [.integer(startMs), .integer(stepMs), .text(day.key)]).map { row in
                QuotaTimelineStep(
                    bucket: row[0].string ?? "",
                    start: Date(timeIntervalSince1970: TimeInterval(startMs + (row[1].int64 ?? 0) * stepMs) / 1000),
                    units: row[2].int ?? 0
                )
            }
        }
    }
}
