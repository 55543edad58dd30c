/// An error the request machine passes on, compared as a value: so the machine's actions are
/// `Equatable` and its tests compare them whole (`== .fail(ErrorValue(refusal))`).
///
/// The machine never looks inside the errors it passes on (a store's, a transport's, a
/// cancellation); many of their types are not `Equatable` (`CancellationError`, the
/// PostgreSQL client's errors). Two errors are equal when they are of the same type and either
/// that type is `Equatable` and `==` says so, or it is not and they describe themselves alike
/// (`String(reflecting:)`, the text a caller would log). The driver throws ``error`` as it came.
struct ErrorValue: Sendable, Equatable, CustomStringConvertible {
    /// The error as it came.
    let error: any Error

    /// Wraps an error.
    /// - Parameter error: The error.
    init(_ error: any Error) {
        self.error = error
    }

    var description: String { "\(error)" }

    static func == (lhs: ErrorValue, rhs: ErrorValue) -> Bool {
        sameValue(lhs.error, rhs.error)
    }

    /// The rule above, with the left error's type opened: `Failure` is its dynamic type.
    private static func sameValue<Failure: Error>(_ lhs: Failure, _ rhs: any Error) -> Bool {
        guard let rhs = rhs as? Failure, type(of: rhs) == type(of: lhs) else { return false }
        // Through `Any`: the cast asks the runtime, for the error's dynamic type.
        let boxed: Any = lhs
        if let equatable = boxed as? any Equatable {
            return equatable.isEqual(to: rhs)
        }
        return String(reflecting: lhs) == String(reflecting: rhs)
    }
}

extension Equatable {
    /// Whether `other` is a value of this type equal to this one.
    fileprivate func isEqual(to other: Any) -> Bool {
        (other as? Self).map { $0 == self } ?? false
    }
}
