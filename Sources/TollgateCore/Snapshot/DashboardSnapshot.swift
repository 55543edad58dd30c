import Foundation

/// Everything a dashboard shows, read from the store in one consistent read transaction: the
/// day's quota per bucket and endpoint, every circuit, every throttle window, the cache's day,
/// and the latest ledger and circuit events.
///
/// Apps use it for their own debug screens; `tollgate dashboard` draws it and
/// `tollgate status --json` prints it. Its JSON keys are stable.
public struct DashboardSnapshot: Sendable, Hashable, Codable {
    /// One quota bucket today.
    public struct Bucket: Sendable, Hashable, Codable {
        /// The bucket's name.
        public var bucket: String
        /// Its daily limit in units.
        public var limit: Int
        /// Units used today.
        public var used: Int
        /// Units left today (0 while the server's exhaustion mark holds).
        public var remaining: Int
        /// Until when the server's "quota exhausted" answer blocks the bucket, if it does.
        public var exhaustedUntil: Date?
        /// Usage per endpoint today, largest first.
        public var endpoints: [EndpointUsage]
        /// The bucket's window when it is not the Pacific day (`hour`, `rolling 3600`…): then
        /// ``used``, ``remaining`` and ``endpoints`` describe that window, not today. Nil for a
        /// daily bucket, whose JSON is as it always was.
        public var window: String?
        /// When a bucket counted over another window than the Pacific day gets its units back.
        public var resetsAt: Date?

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - bucket: The bucket's name.
        ///   - limit: Its daily limit in units.
        ///   - used: Units used today.
        ///   - remaining: Units left today (0 while the server's exhaustion mark holds).
        ///   - exhaustedUntil: Until when the server's "quota exhausted" answer blocks the bucket, if it does.
        ///   - endpoints: Usage per endpoint today, largest first.
        ///   - window: The bucket's window when it is not the Pacific day.
        ///   - resetsAt: When that window gets its units back.
        public init(
            bucket: String, limit: Int, used: Int, remaining: Int, exhaustedUntil: Date?, endpoints: [EndpointUsage],
            window: String? = nil, resetsAt: Date? = nil
        ) {
            self.window = window
            self.resetsAt = resetsAt
            self.bucket = bucket
            self.limit = limit
            self.used = used
            self.remaining = remaining
            self.exhaustedUntil = exhaustedUntil
            self.endpoints = endpoints
        }
    }

    /// One endpoint's consumption today.
    public struct EndpointUsage: Sendable, Hashable, Codable {
        /// The endpoint's name.
        public var endpoint: String
        /// Units charged today, net of refunds.
        public var units: Int
        /// Calls charged today.
        public var calls: Int

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - endpoint: The endpoint's name.
        ///   - units: Units charged today, net of refunds.
        ///   - calls: Calls charged today.
        public init(endpoint: String, units: Int, calls: Int) {
            self.endpoint = endpoint
            self.units = units
            self.calls = calls
        }
    }

    /// One endpoint's circuit.
    public struct Circuit: Sendable, Hashable, Codable {
        /// The endpoint's name.
        public var endpoint: String
        /// `closed`, `open` or `half_open` (an open circuit whose time is up is `half_open`).
        public var state: String
        /// Failures in a row.
        public var consecutiveFailures: Int
        /// Failures in a row that open it.
        public var failureThreshold: Int
        /// Seconds until an open circuit admits a probe.
        public var retryInSeconds: Int
        /// How many times it has opened.
        public var trips: Int

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - endpoint: The endpoint's name.
        ///   - state: `closed`, `open` or `half_open` (an open circuit whose time is up is `half_open`).
        ///   - consecutiveFailures: Failures in a row.
        ///   - failureThreshold: Failures in a row that open it.
        ///   - retryInSeconds: Seconds until an open circuit admits a probe.
        ///   - trips: How many times it has opened.
        public init(
            endpoint: String, state: String, consecutiveFailures: Int, failureThreshold: Int, retryInSeconds: Int,
            trips: Int
        ) {
            self.endpoint = endpoint
            self.state = state
            self.consecutiveFailures = consecutiveFailures
            self.failureThreshold = failureThreshold
            self.retryInSeconds = retryInSeconds
            self.trips = trips
        }
    }

    /// One endpoint's throttle window.
    public struct Throttle: Sendable, Hashable, Codable {
        /// The endpoint's name.
        public var endpoint: String
        /// Requests admitted per window.
        public var limit: Int
        /// The window's length in seconds.
        public var windowSeconds: Double
        /// Requests in the window now.
        public var count: Int
        /// Requests still admitted in the window.
        public var remaining: Int

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - endpoint: The endpoint's name.
        ///   - limit: Requests admitted per window.
        ///   - windowSeconds: The window's length in seconds.
        ///   - count: Requests in the window now.
        ///   - remaining: Requests still admitted in the window.
        public init(endpoint: String, limit: Int, windowSeconds: Double, count: Int, remaining: Int) {
            self.endpoint = endpoint
            self.limit = limit
            self.windowSeconds = windowSeconds
            self.count = count
            self.remaining = remaining
        }
    }

    /// The cache's day for one endpoint.
    public struct CacheDay: Sendable, Hashable, Codable {
        /// The endpoint's name.
        public var endpoint: String
        /// Fresh hits: served with no request.
        public var hits: Int
        /// 304 answers that reused the stored body.
        public var revalidations: Int
        /// Full answers.
        public var misses: Int
        /// Stored answers served while the circuit, throttle or quota refused.
        public var stale: Int
        /// Body bytes not downloaded thanks to the cache.
        public var bytesSaved: Int
        /// (hits + revalidations) / (hits + revalidations + misses), nil before any request.
        public var hitRate: Double?

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - endpoint: The endpoint's name.
        ///   - hits: Fresh hits: served with no request.
        ///   - revalidations: 304 answers that reused the stored body.
        ///   - misses: Full answers.
        ///   - stale: Stored answers served while the circuit, throttle or quota refused.
        ///   - bytesSaved: Body bytes not downloaded thanks to the cache.
        ///   - hitRate: (hits + revalidations) / (hits + revalidations + misses), nil before any request.
        public init(
            endpoint: String, hits: Int, revalidations: Int, misses: Int, stale: Int, bytesSaved: Int,
            hitRate: Double?
        ) {
            self.endpoint = endpoint
            self.hits = hits
            self.revalidations = revalidations
            self.misses = misses
            self.stale = stale
            self.bytesSaved = bytesSaved
            self.hitRate = hitRate
        }
    }

    /// One entry of the quota ledger.
    public struct LedgerEvent: Sendable, Hashable, Codable {
        /// When it was recorded.
        public var at: Date
        /// The bucket.
        public var bucket: String
        /// The endpoint.
        public var endpoint: String
        /// `charge`, `refund`, `reset`, `exhausted` or `limit`.
        public var kind: String
        /// Units, negative for refunds and resets.
        public var units: Int

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - at: When it was recorded.
        ///   - bucket: The bucket.
        ///   - endpoint: The endpoint.
        ///   - kind: `charge`, `refund`, `reset`, `exhausted` or `limit`.
        ///   - units: Units, negative for refunds and resets.
        public init(at: Date, bucket: String, endpoint: String, kind: String, units: Int) {
            self.at = at
            self.bucket = bucket
            self.endpoint = endpoint
            self.kind = kind
            self.units = units
        }
    }

    /// One circuit transition.
    public struct CircuitTransition: Sendable, Hashable, Codable {
        /// When it happened.
        public var at: Date
        /// The endpoint.
        public var endpoint: String
        /// The state before.
        public var from: String
        /// The state after.
        public var to: String
        /// Why.
        public var reason: String

        /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
        /// - Parameters:
        ///   - at: When it happened.
        ///   - endpoint: The endpoint.
        ///   - from: The state before.
        ///   - to: The state after.
        ///   - reason: Why.
        public init(at: Date, endpoint: String, from: String, to: String, reason: String) {
            self.at = at
            self.endpoint = endpoint
            self.from = from
            self.to = to
            self.reason = reason
        }
    }

    /// When the snapshot was taken.
    public var takenAt: Date
    /// Today's Pacific date, `YYYY-MM-DD`.
    public var pacificDate: String
    /// When today's quotas reset: the next Pacific midnight.
    public var resetsAt: Date
    /// Every bucket, by name.
    public var buckets: [Bucket]
    /// Every circuit, by endpoint.
    public var circuits: [Circuit]
    /// Every throttle window, by endpoint.
    public var throttles: [Throttle]
    /// Today's cache statistics, by endpoint.
    public var cache: [CacheDay]
    /// Entries in the cache now.
    public var cacheEntries: Int
    /// Body bytes the cache holds now.
    public var cacheBodyBytes: Int
    /// The latest quota events, newest first.
    public var recentLedgerEvents: [LedgerEvent]
    /// The latest circuit transitions, newest first.
    public var recentCircuitTransitions: [CircuitTransition]
    /// The freshness in force per endpoint with a chosen `fresh_for`, and why. Not in the store:
    /// whoever knows the API's configuration adds it (a gate, or a command given `--api`), so nil
    /// (and absent from the JSON) when nothing is known, empty when nothing is chosen.
    public var freshness: [FreshnessInForce]? = nil

    /// Creates a value. Public so that a store in another module (the PostgreSQL store) can build snapshots.
    /// - Parameters:
    ///   - takenAt: When the snapshot was taken.
    ///   - pacificDate: Today's Pacific date, `YYYY-MM-DD`.
    ///   - resetsAt: When today's quotas reset: the next Pacific midnight.
    ///   - buckets: Every bucket, by name.
    ///   - circuits: Every circuit, by endpoint.
    ///   - throttles: Every throttle window, by endpoint.
    ///   - cache: Today's cache statistics, by endpoint.
    ///   - cacheEntries: Entries in the cache now.
    ///   - cacheBodyBytes: Body bytes the cache holds now.
    ///   - recentLedgerEvents: The latest quota events, newest first.
    ///   - recentCircuitTransitions: The latest circuit transitions, newest first.
    public init(
        takenAt: Date, pacificDate: String, resetsAt: Date, buckets: [Bucket], circuits: [Circuit],
        throttles: [Throttle], cache: [CacheDay], cacheEntries: Int, cacheBodyBytes: Int,
        recentLedgerEvents: [LedgerEvent], recentCircuitTransitions: [CircuitTransition]
    ) {
        self.takenAt = takenAt
        self.pacificDate = pacificDate
        self.resetsAt = resetsAt
        self.buckets = buckets
        self.circuits = circuits
        self.throttles = throttles
        self.cache = cache
        self.cacheEntries = cacheEntries
        self.cacheBodyBytes = cacheBodyBytes
        self.recentLedgerEvents = recentLedgerEvents
        self.recentCircuitTransitions = recentCircuitTransitions
    }

    /// Today's cache hit rate over every endpoint, nil before any request.
    public var cacheHitRate: Double? {
        let served = cache.reduce(0) { $0 + $1.hits + $1.revalidations }
        let total = served + cache.reduce(0) { $0 + $1.misses }
        return total == 0 ? nil : Double(served) / Double(total)
    }
}
