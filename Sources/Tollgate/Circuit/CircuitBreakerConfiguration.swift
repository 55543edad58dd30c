/// How a ``CircuitBreaker`` classifies outcomes and which policy each endpoint follows.
public struct CircuitBreakerConfiguration: Sendable {
    /// The policy of every endpoint without an override: 5 failures, 60 s open, 1 h after a trip
    /// of rate limits, 30 s probe lease, no growth.
    public var defaultPolicy: CircuitPolicy
    /// Per-endpoint policies, by endpoint name.
    public var endpointPolicies: [String: CircuitPolicy]
    /// How HTTP answers and errors become outcomes.
    public var classifier: OutcomeClassifier

    /// Creates a configuration.
    /// - Parameters:
    ///   - defaultPolicy: The policy of endpoints without an override.
    ///   - endpointPolicies: Per-endpoint policies.
    ///   - classifier: How answers become outcomes.
    public init(
        defaultPolicy: CircuitPolicy = CircuitPolicy(),
        endpointPolicies: [String: CircuitPolicy] = [:],
        classifier: OutcomeClassifier = OutcomeClassifier()
    ) {
        self.defaultPolicy = defaultPolicy
        self.endpointPolicies = endpointPolicies
        self.classifier = classifier
    }

    /// The policy in force for `endpoint`.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: Its override, or the default policy.
    public func policy(for endpoint: String) -> CircuitPolicy {
        endpointPolicies[endpoint] ?? defaultPolicy
    }
}
