import Foundation

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

    /// Refuses a limit the store cannot enforce (see ``isValid``), with the message both stores give.
    /// - Parameter endpoint: The endpoint the limit is for, for the message.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the endpoint and the limit.
    public func validate(endpoint: String) throws(StoreRefusal) {
        guard isValid else { throw .invalidArgument("invalid throttle limit for \(endpoint): \(self)") }
    }

    /// Seconds until a window holding `admittedMs` has room for one more request: until the
    /// request whose expiry brings the count below the limit leaves the window (the oldest one,
    /// when the window holds exactly the limit). A limit of zero never has room: one window.
    /// Both stores answer a refusal with it.
    /// - Parameters:
    ///   - admittedMs: The times of the requests in the window, ascending.
    ///   - nowMs: Now; a time after it counts as now (stamped before the clock was set back).
    /// - Returns: The wait, zero or more.
    package func timeUntilRoom(admittedMs: [Int64], nowMs: Int64) -> TimeInterval {
        let index = admittedMs.count - requests
        guard requests > 0, admittedMs.indices.contains(index) else { return TimeInterval(windowMilliseconds) / 1000 }
        return TimeInterval(max(min(admittedMs[index], nowMs) + windowMilliseconds - nowMs, 0)) / 1000
    }
}
