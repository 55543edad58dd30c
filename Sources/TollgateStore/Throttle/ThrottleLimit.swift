/// How many requests an endpoint may make within a sliding window.
public struct ThrottleLimit: Sendable, Hashable, CustomStringConvertible {
    /// Requests admitted per window; zero blocks the endpoint.
    public var requests: Int
    /// The window's length; more than zero.
    public var window: Duration

    /// Creates a limit.
    /// - Parameters:
    ///   - requests: Requests admitted per window; zero or more.
    ///   - window: The window's length; more than zero.
    public init(requests: Int, per window: Duration) {
        self.requests = requests
        self.window = window
    }

    /// The window in whole milliseconds, as the store keeps it (at least 1).
    public var windowMilliseconds: Int64 {
        let (seconds, attoseconds) = window.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// Whether the store can enforce the limit: zero or more requests, a window of at least a millisecond.
    public var isValid: Bool {
        let (seconds, attoseconds) = window.components
        return requests >= 0 && (seconds > 0 || (seconds == 0 && attoseconds >= 1_000_000_000_000_000))
    }

    public var description: String { "\(requests) requests per \(window)" }
}
