/// Why the cache could not handle a request or a response.
public enum CacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request lacks what a cache key needs; the cache stays out of its way.
    case unkeyableRequest(String)
    /// A configuration value the cache cannot use.
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .unkeyableRequest(let reason): "The request cannot be cached: \(reason)."
        case .invalidConfiguration(let reason): "Invalid cache configuration: \(reason)."
        }
    }
}
