import Foundation
import TollgateCore

/// A row's column that a record could not read: missing, NULL where a value is required, or of
/// another kind than the record's property.
///
/// It names the column and the statement, never the value (it can hold a secret). It means the
/// file's rows are not what this library writes: a hand edit, or a schema this library does not
/// know.
public struct RowDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong with the column.
    public enum Problem: Sendable, Hashable {
        /// The row has no column of that name; `available` lists the names it has.
        case missingColumn(available: [String])
        /// The column is NULL, and the record needs a value of type `expected`.
        case unexpectedNull(expected: String)
        /// The column holds a value of storage class `found` (`integer`, `real`, `text`, `blob`)
        /// that does not convert to `expected` without loss.
        case mismatch(expected: String, found: String)
    }

    /// The column's name.
    public let column: String
    /// What was wrong with it.
    public let problem: Problem
    /// The statement that returned the row, if known.
    public let sql: String?

    /// Creates an error.
    /// - Parameters:
    ///   - column: The column's name.
    ///   - problem: What was wrong with it.
    ///   - sql: The statement that returned the row.
    public init(column: String, problem: Problem, sql: String? = nil) {
        self.column = column
        self.problem = problem
        self.sql = sql
    }

    public var description: String {
        let what = switch problem {
        case .missingColumn(let available):
            "column \(column) is missing from the row (its columns: \(available.joined(separator: ", ")))"
        case .unexpectedNull(let expected):
            "column \(column) is NULL where a \(expected) is required"
        case .mismatch(let expected, let found):
            "column \(column) holds \(found == "integer" ? "an" : "a") \(found) value, which does not convert to \(expected)"
        }
        let statement = sql.map { " in `\($0.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))`" } ?? ""
        return "The database returned a row this library cannot read: \(what)\(statement). "
            + "Was the file changed by hand or by another program?"
    }
}
