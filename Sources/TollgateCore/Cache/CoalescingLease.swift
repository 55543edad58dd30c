/// The lease a request holds while it leads a coalesced fetch of one resource, so that identical
/// requests from other processes wait for its answer instead of sending their own.
public struct CoalescingLease: Sendable, Hashable {
    /// Who holds it: a token unique to the leading request.
    public var holder: String
    /// When the leader took it, in milliseconds since 1970: an answer stored since then is its.
    public var startedMs: Int64
    /// When it lapses, in milliseconds since 1970, if the leader has not released it.
    public var expiresMs: Int64

    /// Creates a lease.
    /// - Parameters:
    ///   - holder: The leading request's token.
    ///   - startedMs: When it was taken.
    ///   - expiresMs: When it lapses.
    public init(holder: String, startedMs: Int64, expiresMs: Int64) {
        self.holder = holder
        self.startedMs = startedMs
        self.expiresMs = expiresMs
    }
}
