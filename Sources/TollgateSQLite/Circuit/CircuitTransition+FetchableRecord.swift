import Foundation
import TollgateCore

/// A `circuit_transitions` row, read by column name.
extension CircuitTransition: FetchableRecord {
    /// Reads a `circuit_transitions` row.
    /// - Parameter row: A row with `endpoint`, `at_ms`, `from_state`, `to_state` and `reason`.
    /// - Throws: ``RowDecodingError`` for a column that is missing or of another type;
    ///   ``StoreRefusal/invalidArgument(_:)`` for an unknown state.
    public init(row: Row) throws {
        self.init(
            endpoint: try row.decode(String.self, forColumn: "endpoint"),
            at: try row.decodeDate(forColumn: "at_ms") ?? Date(timeIntervalSince1970: 0),
            from: try CircuitState(row: row, column: "from_state"),
            to: try CircuitState(row: row, column: "to_state"),
            reason: try row.decode(String.self, forColumn: "reason")
        )
    }
}
