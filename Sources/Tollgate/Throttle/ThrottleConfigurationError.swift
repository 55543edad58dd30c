/// Why the throttle refused its configuration.
public enum ThrottleConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A limit with a negative request count or a window shorter than a millisecond; `endpoint` is
    /// nil for the default limit.
    case invalidLimit(endpoint: String?, limit: ThrottleLimit)

    public var description: String {
        switch self {
        case .invalidLimit(let endpoint, let limit):
            "Invalid throttle limit for \(endpoint ?? "the default"): \(limit). "
                + "A limit admits zero or more requests over a window of at least a millisecond."
        }
    }
}
