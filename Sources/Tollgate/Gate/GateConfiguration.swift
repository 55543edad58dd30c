/// Everything the gate's services follow, in one value: cost table and buckets, throttle limits,
/// circuit and retry policies, cache limits.
public struct GateConfiguration: Sendable {
    /// Buckets, endpoint costs and the 304 refund policy.
    public var quota: QuotaConfiguration
    /// Requests per window, per endpoint.
    public var throttle: ThrottleConfiguration
    /// Thresholds, open durations and how answers are classified.
    public var circuit: CircuitBreakerConfiguration
    /// Backoff, retryable statuses and idempotency.
    public var retry: RetryPolicy
    /// Cache capacity, TTL, body limits and secret rules.
    public var cache: CacheConfiguration
    /// The longest a request waits for a full throttle window when nothing stored can be served;
    /// past it the request fails with ``TollgateError/throttled(retryAfter:)``. Zero never waits.
    public var maximumThrottleWait: Duration
    /// What happens when the ledger cannot be written (a full disk, a read-only file): refuse the
    /// request (``LedgerFailurePolicy/failClosed``, the default) or send it uncharged with a
    /// warning (``LedgerFailurePolicy/failOpen``).
    public var ledgerFailurePolicy: LedgerFailurePolicy
    /// Which redirects the gate follows: same-origin ones, up to 5 hops, by default.
    public var redirects: RedirectPolicy
    /// The answers that say a bucket's quota is spent: Google's 403 `quotaExceeded` and
    /// `dailyLimitExceeded` by default (see ``QuotaExhaustionRule``).
    public var quotaExhaustedAnswers: [QuotaExhaustionRule] = QuotaExhaustionRule.google
    /// Endpoints that retry by a policy of their own (an upload that must not be repeated, a
    /// search that may wait longer); every other endpoint follows ``retry``.
    public var endpointRetries: [String: RetryPolicy] = [:]
    /// Endpoints that take several IDs in one parameter, whose single-ID requests the gate sends
    /// together as one call (see ``BatchPolicy``); none by default, YouTube's three list methods in
    /// ``youTubeDataAPIv3``.
    public var batching: [String: BatchPolicy] = [:]
    /// The freshness the app chooses for every endpoint's stored answers (`fresh_for` in a
    /// description's `defaults`): served without asking for that long after they were fetched or
    /// revalidated, whatever `max-age=0` or `no-cache` said (see ``ChosenFreshness``). Nil, the
    /// default, leaves the cache exactly RFC 9111.
    public var freshFor: ChosenFreshness? = nil
    /// Endpoints whose chosen freshness differs from ``freshFor``.
    public var endpointFreshFor: [String: ChosenFreshness] = [:]

    /// Creates a configuration.
    /// - Parameters:
    ///   - quota: The cost table.
    ///   - throttle: The throttle limits.
    ///   - circuit: The circuit policies.
    ///   - retry: The retry policy.
    ///   - cache: The cache's limits.
    ///   - maximumThrottleWait: The longest wait for a throttle window.
    ///   - ledgerFailurePolicy: What happens when the ledger cannot be written; fail closed by default.
    ///   - redirects: Which redirects the gate follows; same-origin ones by default.
    public init(
        quota: QuotaConfiguration = .youTubeDataAPIv3,
        throttle: ThrottleConfiguration = ThrottleConfiguration(),
        circuit: CircuitBreakerConfiguration = CircuitBreakerConfiguration(),
        retry: RetryPolicy = .default,
        cache: CacheConfiguration = CacheConfiguration(),
        maximumThrottleWait: Duration = .seconds(10),
        ledgerFailurePolicy: LedgerFailurePolicy = .failClosed,
        redirects: RedirectPolicy = .sameOrigin
    ) {
        self.quota = quota
        self.throttle = throttle
        self.circuit = circuit
        self.retry = retry
        self.cache = cache
        self.maximumThrottleWait = maximumThrottleWait
        self.ledgerFailurePolicy = ledgerFailurePolicy
        self.redirects = redirects
    }

    /// The YouTube Data API v3 with Google's current quota model
    /// (``QuotaConfiguration/youTubeDataAPIv3``: 10,000 units a day, and 100 calls each for
    /// `search.list` and `videos.insert`), a 304 charged 1 unit as Google counts it, 30 requests a minute per endpoint, 5 failures open a circuit
    /// for 60 s (1 hour after 5 rate limits), retries after 1, 2 and 4 s; single-ID requests to
    /// `videos.list`, `channels.list` and `playlists.list` batched 50 to a call
    /// (``BatchPolicy/youTubeDataAPIv3``).
    public static let youTubeDataAPIv3: GateConfiguration = {
        var configuration = GateConfiguration()
        configuration.batching = BatchPolicy.youTubeDataAPIv3
        return configuration
    }()
}
