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
    }

    /// One endpoint's consumption today.
    public struct EndpointUsage: Sendable, Hashable, Codable {
        /// The endpoint's name.
        public var endpoint: String
        /// Units charged today, net of refunds.
        public var units: Int
        /// Calls charged today.
        public var calls: Int
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

    /// Today's cache hit rate over every endpoint, nil before any request.
    public var cacheHitRate: Double? {
        let served = cache.reduce(0) { $0 + $1.hits + $1.revalidations }
        let total = served + cache.reduce(0) { $0 + $1.misses }
        return total == 0 ? nil : Double(served) / Double(total)
    }
}
