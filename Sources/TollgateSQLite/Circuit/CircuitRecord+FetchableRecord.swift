import Foundation
import TollgateCore

/// A `circuits` row, read by column name.
extension CircuitRecord: FetchableRecord {
    /// Reads a `circuits` row.
    /// - Parameter row: A row with the table's columns.
    /// - Throws: ``RowDecodingError`` for a column that is missing or of another type;
    ///   ``StoreRefusal/invalidArgument(_:)`` for a state the table's CHECK does not allow.
    public init(row: Row) throws {
        self.init(
            endpoint: try row.decode(String.self, forColumn: "endpoint"),
            state: try CircuitState(row: row, column: "state"),
            consecutiveFailures: try row.decode(Int.self, forColumn: "consecutive_failures"),
            consecutiveRateLimits: try row.decode(Int.self, forColumn: "consecutive_rate_limits"),
            failureThreshold: try row.decode(Int.self, forColumn: "failure_threshold"),
            openedAt: try row.decodeDate(forColumn: "opened_at_ms"),
            openUntil: try row.decodeDate(forColumn: "open_until_ms"),
            openDuration: try row.decode(Int64?.self, forColumn: "open_duration_ms").map { .milliseconds($0) },
            probeOwner: try row.decode(String?.self, forColumn: "probe_owner"),
            probeLeaseUntil: try row.decodeDate(forColumn: "probe_lease_until_ms"),
            failedProbes: try row.decode(Int.self, forColumn: "failed_probes"),
            trips: try row.decode(Int.self, forColumn: "trips"),
            updatedAt: try row.decodeDate(forColumn: "updated_at_ms") ?? Date(timeIntervalSince1970: 0)
        )
    }
}
