import Foundation

/// The answer to a throttled request: admitted (and recorded), or refused with when to retry.
public struct ThrottleAdmission: Sendable, Hashable {
    /// Whether the request was admitted and recorded in the window.
    public var allowed: Bool
    /// Requests in the window: with this one when admitted, without it when refused.
    public var count: Int
    /// The limit applied.
    public var limit: Int
    /// When refused, how long until the window has room: until the request whose expiry frees a
    /// slot leaves the window. Nil when admitted.
    public var retryAfter: TimeInterval?

    /// Creates an admission.
    /// - Parameters:
    ///   - allowed: Whether the request was admitted.
    ///   - count: Requests in the window.
    ///   - limit: The limit applied.
    ///   - retryAfter: When refused, how long until the window has room.
    public init(allowed: Bool, count: Int, limit: Int, retryAfter: TimeInterval?) {
        self.allowed = allowed
        self.count = count
        self.limit = limit
        self.retryAfter = retryAfter
    }
}
