import Foundation
import TollgateCore

extension SQLiteStore: QuotaTimelineStorage {
    public func quotaTimeline(on day: PacificDay, stepSeconds: Int) async throws -> [QuotaTimelineStep] {
        guard stepSeconds >= 1 else { throw StoreRefusal.invalidArgument("a timeline step must be at least one second") }
        let startMs = SaturatingConversion.int64((day.start.timeIntervalSince1970 * 1000).rounded())
        let stepMs = Int64(stepSeconds) * 1000
        return try await read { db in
            // quota_events has no index by day (schema 4 dropped it): one scan, as the audit makes.
            try db.fetchAll(sql: """
                SELECT bucket, MAX(at_ms - ?, 0) / ? AS step, SUM(units) AS units FROM quota_events
                WHERE pacific_date = ? GROUP BY bucket, step HAVING SUM(units) <> 0 ORDER BY bucket, step
                """, arguments: [startMs, stepMs, day.key]).map { row in
                QuotaTimelineStep(
                    bucket: try row.decode(String.self, forColumn: "bucket"),
                    start: Date(timeIntervalSince1970: TimeInterval(startMs + (try row.decode(Int64.self, forColumn: "step")) * stepMs) / 1000),
                    units: try row.decode(Int.self, forColumn: "units")
                )
            }
        }
    }
}
