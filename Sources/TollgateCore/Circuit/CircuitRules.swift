/// The circuit operations' argument rules and their messages, checked by both stores before they
/// touch their database.
public enum CircuitRules {
    /// Refuses an empty endpoint or a policy that cannot be applied.
    /// - Parameters:
    ///   - endpoint: The circuit's endpoint.
    ///   - policy: The policy to apply.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` saying which.
    public static func validate(endpoint: String, policy: CircuitPolicy) throws(StoreRefusal) {
        guard !endpoint.isEmpty else { throw .invalidArgument("a circuit's endpoint must not be empty") }
        try policy.validate()
    }

    /// Refuses forcing a circuit open for a duration that is not positive.
    /// - Parameter duration: How long the circuit would stay open.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the duration.
    public static func validateForcedOpen(for duration: Duration) throws(StoreRefusal) {
        guard duration > .zero else {
            throw .invalidArgument("a circuit can only be forced open for a positive duration, got \(duration)")
        }
    }

    /// The refusal of a state the database holds that is none of ``CircuitState``'s (a hand edit).
    /// - Parameter text: The stored text, or nil for NULL.
    /// - Returns: The refusal, for the store to throw.
    public static func unknownState(_ text: String?) -> StoreRefusal {
        .invalidArgument("unknown circuit state \(text ?? "NULL") in the database")
    }
}
