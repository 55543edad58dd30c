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
