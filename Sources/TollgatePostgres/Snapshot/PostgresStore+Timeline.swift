import Foundation
import PostgresNIO
import TollgateCore

/// The burn chart's timeline over PostgreSQL: the same sums as the SQLite store's, by the
/// `quota_events_by_day` index.
extension PostgresStore: QuotaTimelineStorage {
    /// Sums one Pacific day's ledger events per bucket and step.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - stepSeconds: The length of a step, at least one second.
    /// - Returns: The steps that saw an event, ordered by bucket, then start.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` for a step shorter than a second; ``PostgresStoreError``
    ///   when the server fails.
    public func quotaTimeline(on day: PacificDay, stepSeconds: Int) async throws -> [QuotaTimelineStep] {
        guard stepSeconds >= 1 else { throw StoreRefusal.invalidArgument("a timeline step must be at least one second") }
        let startMs = SaturatingConversion.int((day.start.timeIntervalSince1970 * 1000).rounded())
        let stepMs = stepSeconds * 1000
        let dayKey = day.key
        return try await withConnection("reading the quota timeline") { [self] connection in
            try await connection.rows("""
                SELECT bucket, (GREATEST(at_ms - \(startMs), 0) / \(stepMs))::bigint AS step, SUM(units)::bigint
                FROM quota_events WHERE pacific_date = \(dayKey)
                GROUP BY bucket, step HAVING SUM(units) <> 0 ORDER BY bucket, step
                """, logger: logger).map { row in
                let (bucket, step, units) = try row.decode((String, Int, Int).self)
                return QuotaTimelineStep(
                    bucket: bucket, start: Date(timeIntervalSince1970: TimeInterval(startMs + step * stepMs) / 1000),
                    units: units
                )
            }
        }
    }
}
