import Foundation
import TollgateCore

/// A circuit state read from a column.
extension CircuitState {
    /// A state column: the table's CHECK constraint allows no other value short of a hand edit.
    init(row: Row, column: String) throws {
        let text = try row.decode(String.self, forColumn: column)
        guard let state = CircuitState(rawValue: text) else { throw CircuitRules.unknownState(text) }
        self = state
    }
}
