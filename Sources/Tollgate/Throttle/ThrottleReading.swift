import Foundation

/// What this process's latest admission read of an endpoint's throttle window, kept in memory by
/// ``RequestThrottler`` so that a caller can describe the window on an answer without another
/// read of the store.
public struct ThrottleReading: Sendable, Hashable {
    /// The endpoint.
    public var endpoint: String
    /// The limit in force: requests per window.
    public var limit: ThrottleLimit
    /// Requests in the window at the admission, the admitted one included.
    public var count: Int
    /// When the admission was refused, how long until the window had room; nil when admitted.
    public var retryAfter: TimeInterval?

    /// Creates a reading.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - limit: The limit in force.
    ///   - count: Requests in the window at the admission.
    ///   - retryAfter: When refused, how long until the window had room.
    public init(endpoint: String, limit: ThrottleLimit, count: Int, retryAfter: TimeInterval?) {
        self.endpoint = endpoint
        self.limit = limit
        self.count = count
        self.retryAfter = retryAfter
    }

    /// Requests the window still admits.
    public var remaining: Int { max(0, limit.requests - count) }
}
