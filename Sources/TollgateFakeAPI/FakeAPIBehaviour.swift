import Foundation

/// Faults and settings that a test or the demo switches on the fake API while it runs.
public struct FakeAPIBehaviour: Sendable, Hashable {
    /// Answers with `429 Too Many Requests`.
    public struct RateLimitStorm: Sendable, Hashable {
        /// How many requests get a 429; nil until the storm is cleared.
        public var remaining: Int?
        /// The `Retry-After` value sent with each 429, verbatim (seconds or an HTTP date); nil sends none.
        public var retryAfter: String?
        /// Answer with Google's `403 rateLimitExceeded` instead of a plain 429.
        public var asGoogle403: Bool

        /// Creates a storm.
        /// - Parameters:
        ///   - count: How many requests get a 429; nil until cleared.
        ///   - retryAfter: The `Retry-After` header to send, if any.
        ///   - asGoogle403: Whether to answer 403 `rateLimitExceeded` instead.
        public init(count: Int? = nil, retryAfter: String? = nil, asGoogle403: Bool = false) {
            self.remaining = count
            self.retryAfter = retryAfter
            self.asGoogle403 = asGoogle403
        }
    }

    /// Answers with a server error.
    public struct Outage: Sendable, Hashable {
        /// The status sent, 503 by default.
        public var status: Int
        /// How many requests fail; nil until the outage is cleared.
        public var remaining: Int?

        /// Creates an outage.
        /// - Parameters:
        ///   - status: The 5xx status to answer with.
        ///   - count: How many requests fail; nil until cleared.
        public init(status: Int = 503, count: Int? = nil) {
            self.status = status
            self.remaining = count
        }
    }

    /// How the fake meters its quota, after Google's quota page.
    public enum QuotaModel: Sendable, Hashable {
        /// As of 2026-11: `search.list` and `videos.insert` each have a bucket of their own,
        /// ``FakeAPIBehaviour/searchCallsPerDay`` and ``FakeAPIBehaviour/uploadCallsPerDay`` calls
        /// at 1 unit each; every other method is charged against ``FakeAPIBehaviour/dailyQuota``.
        case separateSearchAndUpload
        /// Until 2025 (as the apps Tollgate grew from knew it): one pool of ``FakeAPIBehaviour/dailyQuota`` units for
        /// every method, `search.list` 100 units, `videos.insert` 1,600.
        case singlePool
    }

    /// How the quota is metered; Google's current model by default.
    public var quotaModel: QuotaModel = .separateSearchAndUpload
    /// The daily quota the fake charges against, in units (YouTube's default 10,000).
    public var dailyQuota: Int = 10_000
    /// `search.list` calls a day in the current model (100).
    public var searchCallsPerDay: Int = 100
    /// `videos.insert` calls a day in the current model (100).
    public var uploadCallsPerDay: Int = 100
    /// What a `304 Not Modified` costs the fake's quota: 1 unit by default, as on YouTube (Google's
    /// quota page: "All API requests, including invalid requests, incur a quota cost of at least one
    /// point"); 0 for an API that does not charge them; nil for the call's full price.
    public var notModifiedUnits: Int? = 1
    /// `Cache-Control: max-age` in seconds for successful answers; nil sends YouTube's
    /// `private, max-age=0, must-revalidate, no-transform`.
    public var maxAge: Int? = nil
    /// Send weak ETags (`W/"…"`) instead of strong ones.
    public var weakETags: Bool = false
    /// A 429 storm in progress, if any.
    public var rateLimitStorm: RateLimitStorm? = nil
    /// An outage in progress, if any.
    public var outage: Outage? = nil
    /// Added before every answer.
    public var latency: Duration = .zero
    /// Bytes of padding added to every JSON resource, to make bodies of a given size.
    public var bodyPadding: Int = 0
    /// IDs the API does not know: a list of `videos`, `channels` or `playlists` by `id` leaves them
    /// out of its `items`, as YouTube does (an ID alone gets `items: []` and a 200).
    public var unknownIDs: Set<String> = []
    /// Answer with `Content-Encoding: gzip` (and `Vary: Accept-Encoding`) when the request's
    /// `Accept-Encoding` lists gzip, as Google's servers do; off by default, so a body is the
    /// JSON as written.
    public var gzipsWhenAsked: Bool = false

    /// The default: healthy, 10,000 units, strong ETags.
    public init() {}
}

/// One request the fake API received, as it arrived on the wire.
public struct FakeAPIReceivedRequest: Sendable, Hashable {
    /// The method, such as `GET`.
    public let method: String
    /// The path without the query, such as `/youtube/v3/videos`.
    public let path: String
    /// The query string, without `?`.
    public let query: String
    /// Every header field as received, lowercased names.
    public let headers: [String: String]
    /// The status the fake answered with.
    public let status: Int
    /// Units charged to the fake's quota for this request.
    public let unitsCharged: Int

    /// The `If-None-Match` header, if the client sent one.
    public var ifNoneMatch: String? { headers["if-none-match"] }
}
