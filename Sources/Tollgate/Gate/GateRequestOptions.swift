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
    /// Whether every answer from the server comes back as it arrives (``GateResponse/bodyStream``,
    /// chunks as the transport reads them) instead of whole in ``GateResponse/body``: server-sent
    /// events and long answers reach the caller at once. A body that may be stored is kept as it
    /// passes and stored when it ends, whole and within the cache's limits; a cost read from the
    /// body (tokens) is settled when it ends. Answers from the store still come whole, in
    /// ``GateResponse/body``, and so do error statuses (the gate reads them to decide on a retry)
    /// and HEAD answers. It needs a transport that streams (`AsyncHTTPClientTransport`); others
    /// return bodies whole.
    public var streamsBodies: Bool

    /// How long a stored answer may be served for this request without asking the server, since it
    /// was fetched or revalidated, whatever its `max-age=0` or `no-cache` said; nil follows the
    /// configuration (``GateConfiguration/freshFor``). An answer marked `no-store` is never stored.
    public var freshFor: Duration?
    /// Whether the server's own "quota spent" answer (``GateConfiguration/quotaExhaustedAnswers``:
    /// YouTube's `403 quotaExceeded`, GitHub's `403` with `X-RateLimit-Remaining: 0`, an LLM API's
    /// `429`) comes back as it is, source `.network`, instead of as ``TollgateError/quotaExceeded``
    /// when nothing stored can stand in. The endpoint's buckets are marked spent either way, and the
    /// next request is refused before it is sent. A proxy sets it, so that its client's SDK reads the
    /// API's own error (its reason, its `Retry-After`).
    public var passesQuotaSpentAnswers: Bool
    /// Whether a `GET` or `HEAD` that carries its own `If-None-Match` or `If-Modified-Since` is
    /// answered from what is stored, when something is: it goes as if it carried neither (a fresh
    /// answer with no request, a stale one revalidated with the stored validator, or served stale
    /// when the quota is spent or the server is down), and the caller evaluates its conditions on
    /// the `200` it gets (RFC 9111 §4.3.2: a cache answers its client's conditional request
    /// itself). With nothing stored, the conditions go to the server as they are, where a match
    /// may cost less (GitHub does not count a `304`). A proxy sets it, and answers its client `304`;
    /// without it, a client revalidating what the proxy holds fresh was charged for a request the
    /// proxy could have answered, and was refused or given a `502` when the quota was spent or the
    /// server down, where a request without the conditions was served.
    public var answersConditionalsFromStore: Bool

    /// Creates options.
    /// - Parameters:
    ///   - cost: Units to charge instead of the table's price.
    ///   - markedIdempotent: Whether repeating a non-idempotent method is safe.
    ///   - allowsStale: Whether stored responses may be served stale.
    ///   - redirects: Which redirects to follow; the configuration's policy by default.
    ///   - streamsLargeBodies: Whether answers too large for the cache come back as a stream.
    ///   - streamsBodies: Whether every answer from the server comes back as a stream.
    ///   - freshFor: How long a stored answer is served without asking; the configuration's by default.
    ///   - joinsBatches: Whether the request may join a batch; on by default.
    ///   - passesQuotaSpentAnswers: Whether the server's "quota spent" answer comes back as it is
    ///     instead of as an error; off by default.
    ///   - answersConditionalsFromStore: Whether a request's own conditions are left to the caller
    ///     when something is stored for it; off by default.
    public init(cost: Int? = nil, markedIdempotent: Bool = false, allowsStale: Bool = true,
                redirects: RedirectPolicy? = nil, streamsLargeBodies: Bool = false, streamsBodies: Bool = false,
                freshFor: Duration? = nil, joinsBatches: Bool = true, passesQuotaSpentAnswers: Bool = false,
                answersConditionalsFromStore: Bool = false) {
        self.passesQuotaSpentAnswers = passesQuotaSpentAnswers
        self.answersConditionalsFromStore = answersConditionalsFromStore
        self.joinsBatches = joinsBatches
        self.freshFor = freshFor
        self.cost = cost
        self.markedIdempotent = markedIdempotent
        self.allowsStale = allowsStale
        self.redirects = redirects
        self.streamsLargeBodies = streamsLargeBodies
        self.streamsBodies = streamsBodies
    }
}
