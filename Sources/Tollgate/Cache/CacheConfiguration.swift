import HTTPTypes

/// The rules of the ETag cache: 1,000 entries, 7 days, and a byte budget by default.
public struct CacheConfiguration: Sendable {
    /// LRU capacity: at most this many entries. 1000 by default.
    public var maxEntries: Int = 1000
    /// Entries are removed this long after they were stored or last revalidated. 7 days by default.
    public var maxAge: Duration = .seconds(7 * 86_400)
    /// Bodies larger than this are not stored. 5 MiB by default.
    public var maxBodySize: Int = 5 * 1024 * 1024
    /// Stored bodies together stay at or under this many bytes, LRU-first. 256 MiB by default.
    public var maxTotalBodyBytes: Int64 = 256 * 1024 * 1024
    /// Whether a response still fresh under its own `max-age` or `Expires` is served with no
    /// request at all. On by default; see ``alwaysRevalidatedEndpoints`` to turn it off for some.
    public var servesFreshResponsesWithoutRequest: Bool = true
    /// Endpoints whose stored responses are always revalidated, however fresh.
    public var alwaysRevalidatedEndpoints: Set<String> = []
    /// Query parameters (and path parameters, `;name=value`) whose values are secrets, compared
    /// case-insensitively after percent-decoding. Their values are replaced by `REDACTED` in the
    /// stored URL and hashed into the entry's credential partition.
    public var sensitiveQueryParameters: Set<String> = [
        "key", "api_key", "api-key", "apikey", "access_token", "accesstoken", "token", "auth", "auth_token",
        "authtoken", "oauth_token", "oauth_signature", "sig", "signature", "client_secret", "clientsecret", "secret",
        "password", "passwd", "pwd", "pass", "refresh_token", "refreshtoken", "id_token", "idtoken", "code",
        "session", "sessionid", "session_id", "sid", "jwt", "assertion", "client_assertion", "otp",
        "private_key", "privatekey", "credential", "credentials", "x-amz-signature", "x-amz-credential",
        "x-amz-security-token", "x-goog-signature", "x-goog-credential",
    ]
    /// Patterns (`*` for any run of characters) for more such parameter names. By default every
    /// `*_token`, `*-token`, `*_key`, `*-key` and every name containing `secret`, `password`,
    /// `passwd`, `apikey`, `signature` or `credential`. A pagination cursor such as YouTube's
    /// `pageToken` matches none of them, so it stays readable in the file.
    public var sensitiveQueryParameterPatterns: [SecretNamePattern] = [
        "*_token", "*-token", "*_key", "*-key", "*secret*", "*password*", "*passwd*", "*apikey*",
        "*signature*", "*credential*",
    ]
    /// Request and response header fields whose values are secrets. A request's values for these
    /// fields (and for ``sensitiveHeaderPatterns``) are hashed into its credential partition, so one
    /// caller's authenticated answer is never served to another; they are never stored.
    public var sensitiveHeaders: Set<HTTPField.Name> = [
        .authorization, .proxyAuthorization, .cookie,
        HTTPField.Name("X-Api-Key")!, HTTPField.Name("X-Goog-Api-Key")!, HTTPField.Name("X-Auth-Token")!,
        HTTPField.Name("X-Amz-Security-Token")!, HTTPField.Name("X-Csrf-Token")!,
    ]
    /// Patterns for more request header fields that can carry identity: by default every
    /// `*-token`, `*-key`, and every name containing `auth`, `secret`, `session` or `cookie`.
    public var sensitiveHeaderPatterns: [SecretNamePattern] = [
        "*-token", "*-key", "*auth*", "*secret*", "*session*", "*cookie*",
    ]
    /// Whether identical cacheable GETs in flight at once (same cache key), from tasks of this
    /// process or from other processes on the same store, reach the network once: one leads, the
    /// others wait for its stored answer (source ``ResponseSource/coalesced``). On by default.
    public var coalescesRequests: Bool = true
    /// The longest a request waits for another's answer before it sends its own, on the gate's
    /// clock (``TollgateClock/sleep(until:)`` within this process). 30 s by default.
    public var coalescingWait: Duration = .seconds(30)
    /// How long a leader's lease in the store holds other processes back if the leader dies
    /// before it answers. 30 s by default.
    public var coalescingLease: Duration = .seconds(30)
    /// Fresh hits and stale serves (their LRU touch and their count), misses and revalidations
    /// (their count) are buffered in memory and written once this many have gathered, or earlier
    /// with a store or a `304`'s revision while LRU touches wait.
    public var activityFlushThreshold: Int = 64
    /// …or once the oldest buffered use is this old.
    public var activityFlushInterval: Duration = .seconds(1)
    /// The hit rate of an endpoint is logged at `info` every this many outcomes (0: never).
    public var hitRateLogInterval: Int = 100
    /// Whether a response without `max-age` or `Expires` but with `Last-Modified` is fresh for a
    /// share of its age at the origin (RFC 9111 §4.2.2), for statuses that are heuristically
    /// cacheable (200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501). On by default.
    public var usesHeuristicFreshness: Bool = true
    /// That share of `Date − Last-Modified`: 10 % by default, as the RFC suggests.
    public var heuristicFreshnessFraction: Double = 0.1
    /// The longest heuristic freshness lifetime. 1 day by default.
    public var maxHeuristicFreshness: Duration = .seconds(86_400)
    /// Whether a stale stored response may be served on an error (open circuit, spent quota, full
    /// throttle, failing server) even when its directives forbid it (`must-revalidate`,
    /// `proxy-revalidate`, `no-cache`, an exceeded `stale-if-error`). Off by default, as RFC 9111
    /// §4.2.4 requires; turning it on is a deliberate departure for APIs such as YouTube's, whose
    /// every answer says `must-revalidate` although a stale answer beats none when the quota is spent.
    public var servesStaleAgainstDirectives: Bool = false

    /// Creates a configuration with the defaults.
    public init() {}

    /// Whether stored responses for `endpoint` may be served fresh, with no request.
    /// - Parameter endpoint: The endpoint.
    /// - Returns: True when freshness is honoured.
    public func servesFresh(for endpoint: String) -> Bool {
        servesFreshResponsesWithoutRequest && !alwaysRevalidatedEndpoints.contains(endpoint)
    }

    /// The heuristic in force: none when turned off.
    var heuristics: HeuristicFreshness {
        usesHeuristicFreshness
            ? HeuristicFreshness(fraction: heuristicFreshnessFraction, maximum: maxHeuristicFreshness.timeInterval)
            : .off
    }

    func validated() throws(CacheError) -> CacheConfiguration {
        guard maxEntries >= 1 else { throw .invalidConfiguration("maxEntries must be at least 1, not \(maxEntries)") }
        guard maxAge > .zero else { throw .invalidConfiguration("maxAge must be positive") }
        guard maxBodySize >= 0 else { throw .invalidConfiguration("maxBodySize must not be negative") }
        guard maxTotalBodyBytes >= 0 else { throw .invalidConfiguration("maxTotalBodyBytes must not be negative") }
        guard activityFlushThreshold >= 1 else { throw .invalidConfiguration("activityFlushThreshold must be at least 1") }
        guard (0...1).contains(heuristicFreshnessFraction) else {
            throw .invalidConfiguration("heuristicFreshnessFraction must be between 0 and 1, not \(heuristicFreshnessFraction)")
        }
        guard maxHeuristicFreshness >= .zero else { throw .invalidConfiguration("maxHeuristicFreshness must not be negative") }
        return self
    }
}
