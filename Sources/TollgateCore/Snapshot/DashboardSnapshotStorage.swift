import Foundation

/// A store that can describe itself for a dashboard: `tollgate status` and `tollgate dashboard`
/// read one of these, whichever backend holds the state.
public protocol DashboardSnapshotStorage: Sendable {
    /// Reads a ``DashboardSnapshot`` in one consistent read.
    /// - Parameters:
    ///   - now: The instant that decides today's Pacific date, open circuits and throttle windows
    ///     (a store with a clock of its own, such as a database server's, may use that instead).
    ///   - recentEvents: How many ledger events and circuit transitions to include.
    /// - Returns: The snapshot.
    /// - Throws: The backend's error.
    func dashboardSnapshot(at now: Date, recentEvents: Int) async throws -> DashboardSnapshot
}
