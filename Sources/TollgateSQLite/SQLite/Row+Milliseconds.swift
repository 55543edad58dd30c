import Foundation
import TollgateCore

extension Row {
    /// A time stored as milliseconds since 1970, as every table stores its times.
    /// - Parameter column: The column's name.
    /// - Returns: The time, or nil when the column is NULL.
    /// - Throws: ``RowDecodingError`` when the column is missing or not an integer.
    func decodeDate(forColumn column: String) throws(RowDecodingError) -> Date? {
        try decode(Int64?.self, forColumn: column).map { Date(timeIntervalSince1970: TimeInterval($0) / 1000) }
    }
}
