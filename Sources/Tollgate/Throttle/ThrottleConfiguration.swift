/// The throttle's limits: a sliding window per endpoint.
///
/// ```swift
/// var configuration = ThrottleConfiguration()                     // 30 requests a minute everywhere
/// configuration.endpointLimits["search.list"] = ThrottleLimit(requests: 5, per: .seconds(60))
/// ```
public struct ThrottleConfiguration: Sendable, Hashable {
    /// The limit of every endpoint not in ``endpointLimits``: 30 requests a minute by default.
    public var defaultLimit: ThrottleLimit
    /// Endpoints with limits of their own.
    public var endpointLimits: [String: ThrottleLimit]

    /// Creates a configuration.
    /// - Parameters:
    ///   - defaultLimit: The limit of endpoints without one of their own; 30 a minute by default.
    ///   - endpointLimits: Endpoints with limits of their own.
    public init(
        defaultLimit: ThrottleLimit = ThrottleLimit(requests: 30, per: .seconds(60)),
        endpointLimits: [String: ThrottleLimit] = [:]
    ) {
        self.defaultLimit = defaultLimit
        self.endpointLimits = endpointLimits
    }

    /// The tiered app backend's limits (`APIs/tiered-backend.yaml`): `/api/activities` 10 and
    /// `/api/streams` 20 requests a minute, 30 otherwise.
    public static let tieredBackend = ThrottleConfiguration(endpointLimits: [
        "/api/activities": ThrottleLimit(requests: 10, per: .seconds(60)),
        "/api/streams": ThrottleLimit(requests: 20, per: .seconds(60)),
    ])

    /// The limit that applies to an endpoint.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: Its own limit, else the default.
    public func limit(for endpoint: String) -> ThrottleLimit {
        endpointLimits[endpoint] ?? defaultLimit
    }

    /// Checks that every limit admits zero or more requests over a window of at least a millisecond.
    /// - Throws: ``ThrottleConfigurationError/invalidLimit(endpoint:limit:)`` for the first that does not.
    public func validate() throws(ThrottleConfigurationError) {
        guard defaultLimit.isValid else { throw .invalidLimit(endpoint: nil, limit: defaultLimit) }
        for (endpoint, limit) in endpointLimits.sorted(by: { $0.key < $1.key }) where !limit.isValid {
            throw .invalidLimit(endpoint: endpoint, limit: limit)
        }
    }
}
