import Foundation
import TollgateCore

/// One value stored in or read from an SQLite column.
///
/// Conversions to Swift types (``DatabaseValueConvertible``) never truncate a real or turn a number
/// into text: a value of another kind converts to nil, and ``Row/decode(_:forColumn:)`` throws.
public enum DatabaseValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double-precision float.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob(Data)

    /// The value as an integer, or nil when it is NULL, not a number, or a real with a fraction
    /// (never truncated).
    public var int64: Int64? { Int64.fromDatabaseValue(self) }

    /// The value as an `Int`, or nil when it is NULL, not a number, or a real with a fraction.
    public var int: Int? { Int.fromDatabaseValue(self) }

    /// The value as a double, or nil when it is NULL or not a number.
    public var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        default: nil
        }
    }

    /// The value as text, or nil when it is not text (a number is never turned into text).
    public var string: String? { String.fromDatabaseValue(self) }

    /// The value as bytes, or nil when it is NULL or a number; text gives its UTF-8 bytes.
    public var data: Data? { Data.fromDatabaseValue(self) }

    /// The name of the value's storage class, as SQLite's `typeof()` says it: for messages that
    /// must not show the value itself.
    public var storageClass: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }

    /// Whether the value is SQL NULL.
    public var isNull: Bool { self == .null }
}

extension DatabaseValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByNilLiteral, ExpressibleByBooleanLiteral
{
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
