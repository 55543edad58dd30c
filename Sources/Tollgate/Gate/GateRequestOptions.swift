/// Per-request choices that override the gate's configuration.
public struct GateRequestOptions: Sendable, Hashable {
    /// Units to charge instead of the cost table's price (an API that prices by parameters).
    public var cost: Int?
    /// Whether repeating this request is safe even though its method is not idempotent (a POST
    /// with an idempotency key, say). Only idempotent requests are retried otherwise.
    public var markedIdempotent: Bool
    /// Whether a stored response may be served stale when the gate refuses or the server fails.
    public var allowsStale: Bool
    /// Which redirects to follow for this request; nil follows ``GateConfiguration/redirects``.
    public var redirects: RedirectPolicy?
    /// Whether an answer larger than the cache's `maxBodySize` comes back as a stream
    /// (``GateResponse/bodyStream``), never held whole, instead of in ``GateResponse/body``. It
    /// needs a transport that streams (`AsyncHTTPClientTransport`); others return bodies whole.
    public var streamsLargeBodies: Bool
    /// Whether the request may join a batch of single-ID requests (``GateConfiguration/batching``),
    /// sent as one call through this request's transport, or another member's. Turn it off when
    /// the transport given for this request cannot send another target (the OpenAPI middleware's).
    public var joinsBatches: Bool

    /// Creates options.
    /// - Parameters:
    ///   - cost: Units to charge instead of the table's price.
    ///   - markedIdempotent: Whether repeating a non-idempotent method is safe.
    ///   - allowsStale: Whether stored responses may be served stale.
    ///   - redirects: Which redirects to follow; the configuration's policy by default.
    ///   - streamsLargeBodies: Whether answers too large for the cache come back as a stream.
    ///   - joinsBatches: Whether the request may join a batch; on by default.
    public init(cost: Int? = nil, markedIdempotent: Bool = false, allowsStale: Bool = true,
                redirects: RedirectPolicy? = nil, streamsLargeBodies: Bool = false, joinsBatches: Bool = true) {
        self.joinsBatches = joinsBatches
        self.cost = cost
        self.markedIdempotent = markedIdempotent
        self.allowsStale = allowsStale
        self.redirects = redirects
        self.streamsLargeBodies = streamsLargeBodies
    }
}
