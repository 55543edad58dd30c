import Foundation
import TollgateCore

/// A Swift type that converts to and from ``DatabaseValue``, as GRDB's protocol of the same name:
/// statement arguments are plain Swift values of these types, and ``Row/decode(_:forColumn:)``
/// reads columns as them.
///
/// ```swift
/// try db.execute(sql: "UPDATE circuits SET state = ? WHERE endpoint = ?", arguments: [state.rawValue, endpoint])
/// let failures = try row.decode(Int.self, forColumn: "consecutive_failures")
/// ```
public protocol DatabaseValueConvertible: Sendable {
    /// The value to bind or store.
    var databaseValue: DatabaseValue { get }

    /// The Swift value of `value`, or nil when `value` is of another kind: a conversion never
    /// truncates a real, never turns a number into text and never reads NULL as zero.
    /// - Parameter value: A value read from a column.
    /// - Returns: The converted value, or nil.
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { self }
    public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Int64: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self) }

    /// An integer, or a real with no fraction that fits; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let integer): integer
        case .real(let real): Int64(exactly: real)
        default: nil
        }
    }
}

extension Int: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }

    /// An integer, or a real with no fraction, that fits an `Int`; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int? {
        Int64.fromDatabaseValue(value).flatMap { Int(exactly: $0) }
    }
}

extension Double: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(self) }

    /// A real, or an integer; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let real): real
        case .integer(let integer): Double(integer)
        default: nil
        }
    }
}

extension Bool: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }

    /// An integer: zero is false, anything else true; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        if case .integer(let integer) = value { integer != 0 } else { nil }
    }
}

extension String: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(self) }

    /// Text only: a number is never turned into text.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .text(let text) = value { text } else { nil }
    }
}

extension Data: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .blob(self) }

    /// A blob, or text as its UTF-8 bytes (as GRDB reads it); nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let data): data
        case .text(let text): Data(text.utf8)
        default: nil
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    /// NULL for nil.
    public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }

    /// `.some(nil)` for NULL, so that decoding an optional reads NULL as nil and still refuses a
    /// value of another kind.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}
