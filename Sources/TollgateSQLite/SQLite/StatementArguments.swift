import TollgateCore

/// The values bound to a statement's `?` placeholders, in order, written as plain Swift values
/// (GRDB's `StatementArguments`): `[endpoint, nowMs, etag]`, where `nil` binds NULL.
public struct StatementArguments: Sendable, Hashable, ExpressibleByArrayLiteral {
    /// The values, converted once.
    public var values: [DatabaseValue]

    /// Arguments from values already converted.
    /// - Parameter values: One value per placeholder.
    public init(_ values: [DatabaseValue] = []) {
        self.values = values
    }

    /// Arguments from Swift values; `nil` binds NULL.
    /// - Parameter elements: One value per placeholder.
    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        values = elements.map { $0?.databaseValue ?? .null }
    }

    /// Whether there is no argument.
    public var isEmpty: Bool { values.isEmpty }
}
