/// The rules every endpoint name charged in the quota ledger follows.
enum EndpointName {
    /// The name `quota_events` gives to events about a whole bucket (a limit, a reset, the
    /// server's exhausted mark): an endpoint of that name would be mistaken for them.
    static let wholeBucket = "*"

    /// Refuses a name the ledger cannot tell apart from its own records.
    /// - Throws: ``StoreError/invalidArgument(_:)`` for an empty name or `*`.
    static func validate(_ endpoint: String) throws {
        if endpoint.isEmpty {
            throw StoreError.invalidArgument("an endpoint name must not be empty")
        }
        if endpoint == wholeBucket {
            throw StoreError.invalidArgument("'*' is not an endpoint name: the quota ledger uses it for whole-bucket events")
        }
    }
}
