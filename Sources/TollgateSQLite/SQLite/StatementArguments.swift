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
        // A loop, not `map`: the closure's copies of each boxed value showed in the admission's
        // profile, and every statement of the request path builds its arguments here.
        var values: [DatabaseValue] = []
        values.reserveCapacity(elements.count)
        for index in elements.indices {
            switch elements[index] {
            case .some(let value): values.append(value.databaseValue)
            case .none: values.append(.null)
            }
        }
        self.values = values
    }

    /// Whether there is no argument.
    public var isEmpty: Bool { values.isEmpty }
}
