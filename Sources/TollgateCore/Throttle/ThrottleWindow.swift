import Foundation

/// An endpoint's sliding window as it stands, read without admitting anything.
public struct ThrottleWindow: Sendable, Hashable {
    /// The endpoint.
    public var endpoint: String
    /// Requests recorded in the window.
    public var count: Int
    /// The limit applied.
    public var limit: Int
    /// How long until the window has room; zero when it has room now.
    public var retryAfter: TimeInterval

    /// Requests the endpoint can still make now.
    public var remaining: Int { max(limit - count, 0) }

    /// Creates a window.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - count: Requests recorded in the window.
    ///   - limit: The limit applied.
    ///   - retryAfter: How long until the window has room.
    public init(endpoint: String, count: Int, limit: Int, retryAfter: TimeInterval) {
        self.endpoint = endpoint
        self.count = count
        self.limit = limit
        self.retryAfter = retryAfter
    }
}
