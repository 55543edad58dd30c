import Foundation

/// One value stored in or read from an SQLite column.
public enum DatabaseValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// The value as an integer, or nil when it is NULL or not a number.
    public var int64: Int64? {
        switch self {
        case .integer(let value): value
        case .real(let value): Int64(exactly: value.rounded(.towardZero))
        default: nil
        }
    }

    /// The value as an `Int`, or nil when it is NULL or not a number.
    public var int: Int? { int64.map { Int($0) } }

    /// The value as a double, or nil when it is NULL or not a number.
    public var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        default: nil
        }
    }

    /// The value as text, or nil when it is NULL or a blob.
    public var string: String? {
        switch self {
        case .text(let value): value
        case .integer(let value): String(value)
        case .real(let value): String(value)
        default: nil
        }
    }

    /// The value as bytes, or nil when it is NULL or a number.
    public var data: Data? {
        switch self {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        default: nil
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

extension DatabaseValue {
    /// An integer value.
    public static func int(_ value: Int) -> DatabaseValue { .integer(Int64(value)) }

    /// A text value, or NULL when `value` is nil.
    public static func optionalText(_ value: String?) -> DatabaseValue { value.map { .text($0) } ?? .null }

    /// An integer value, or NULL when `value` is nil.
    public static func optionalInt(_ value: Int64?) -> DatabaseValue { value.map { .integer($0) } ?? .null }
}

/// One row of a query's result, its values in column order.
public struct Row: Sendable, Hashable {
    /// The values, in the order of the query's columns.
    public let values: [DatabaseValue]

    /// Creates a row from its values.
    /// - Parameter values: The values in column order.
    public init(_ values: [DatabaseValue]) { self.values = values }

    /// The value of column `index`, or NULL past the last column.
    public subscript(index: Int) -> DatabaseValue {
        values.indices.contains(index) ? values[index] : .null
    }
}
