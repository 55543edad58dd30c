import Foundation
import TollgateCore
import TollgateSQLite

/// Everything the web dashboard draws, as `/api/snapshot` serves it: the terminal dashboard's
/// ``DashboardSnapshot`` plus the series behind each chart. Its JSON keys are stable.
public struct OperatorsSnapshot: Sendable, Hashable, Codable {
    /// A bucket's burn rate and, at that rate, when it runs out.
    public struct Forecast: Sendable, Hashable, Codable {
        /// The bucket.
        public var bucket: String
        /// Net units charged per hour over the last hour.
        public var unitsPerHour: Double
        /// Units left today.
        public var remaining: Int
        /// Seconds until the bucket runs out at this rate; nil when nothing is being spent.
        public var secondsToExhaustion: Double?
        /// When it runs out at this rate, if that comes before the reset.
        public var runsOutAt: Date?

        /// Creates a forecast.
        /// - Parameters:
        ///   - bucket: The bucket.
        ///   - unitsPerHour: The burn rate.
        ///   - remaining: Units left today.
        ///   - secondsToExhaustion: Seconds until it runs out at this rate.
        ///   - runsOutAt: When it runs out, if before the reset.
        public init(bucket: String, unitsPerHour: Double, remaining: Int, secondsToExhaustion: Double?, runsOutAt: Date?) {
            self.bucket = bucket
            self.unitsPerHour = unitsPerHour
            self.remaining = remaining
            self.secondsToExhaustion = secondsToExhaustion
            self.runsOutAt = runsOutAt
        }
    }

    /// One point of a burn chart: the units used since the Pacific midnight, at a time of the day.
    public struct BurnPoint: Sendable, Hashable, Codable {
        /// Seconds since the Pacific midnight.
        public var secondsSinceMidnight: Double
        /// Units used from midnight to then, net of refunds.
        public var cumulativeUnits: Int

        /// Creates a point.
        /// - Parameters:
        ///   - secondsSinceMidnight: Seconds since the Pacific midnight.
        ///   - cumulativeUnits: Units used from midnight to then.
        public init(secondsSinceMidnight: Double, cumulativeUnits: Int) {
            self.secondsSinceMidnight = secondsSinceMidnight
            self.cumulativeUnits = cumulativeUnits
        }
    }

    /// A bucket's day: its cumulative units, its limit and where its burn rate leads.
    public struct BurnSeries: Sendable, Hashable, Codable {
        /// The bucket.
        public var bucket: String
        /// Its daily limit.
        public var limit: Int
        /// Units used today.
        public var used: Int
        /// The cumulative units, from the midnight (0) to now, one point per step that saw a charge.
        public var points: [BurnPoint]

        /// Creates a series.
        /// - Parameters:
        ///   - bucket: The bucket.
        ///   - limit: Its daily limit.
        ///   - used: Units used today.
        ///   - points: The cumulative units.
        public init(bucket: String, limit: Int, used: Int, points: [BurnPoint]) {
            self.bucket = bucket
            self.limit = limit
            self.used = used
            self.points = points
        }
    }

    /// The cache's answers on one Pacific day, over every endpoint.
    public struct CacheDay: Sendable, Hashable, Codable {
        /// The Pacific date, `YYYY-MM-DD`.
        public var pacificDate: String
        /// Fresh hits: served with no request.
        public var hits: Int
        /// 304 answers that reused the stored body.
        public var revalidations: Int
        /// Full answers.
        public var misses: Int
        /// Stored answers served while the circuit, throttle or quota refused.
        public var stale: Int
        /// Answers waited for behind an identical request.
        public var coalesced: Int
        /// (hits + revalidations) / (hits + revalidations + misses), nil for a day with none.
        public var hitRate: Double?

        /// Creates a day.
        /// - Parameters:
        ///   - pacificDate: The Pacific date.
        ///   - hits: Fresh hits.
        ///   - revalidations: 304 answers.
        ///   - misses: Full answers.
        ///   - stale: Stale answers.
        ///   - coalesced: Coalesced answers.
        ///   - hitRate: The hit rate.
        public init(
            pacificDate: String, hits: Int, revalidations: Int, misses: Int, stale: Int, coalesced: Int, hitRate: Double?
        ) {
            self.pacificDate = pacificDate
            self.hits = hits
            self.revalidations = revalidations
            self.misses = misses
            self.stale = stale
            self.coalesced = coalesced
            self.hitRate = hitRate
        }
    }

    /// One endpoint's units today.
    public struct EndpointUnits: Sendable, Hashable, Codable {
        /// The endpoint.
        public var endpoint: String
        /// Its bucket.
        public var bucket: String
        /// Units charged today, net of refunds.
        public var units: Int
        /// Calls charged today.
        public var calls: Int

        /// Creates a value.
        /// - Parameters:
        ///   - endpoint: The endpoint.
        ///   - bucket: Its bucket.
        ///   - units: Units charged today.
        ///   - calls: Calls charged today.
        public init(endpoint: String, bucket: String, units: Int, calls: Int) {
            self.endpoint = endpoint
            self.bucket = bucket
            self.units = units
            self.calls = calls
        }
    }

    /// The store's state now, as the terminal dashboard shows it.
    public var dashboard: DashboardSnapshot
    /// The start of today's Pacific day.
    public var dayStart: Date
    /// Each bucket's burn rate over the last hour.
    public var forecasts: [Forecast]
    /// Each bucket's cumulative units today.
    public var burn: [BurnSeries]
    /// The cache's answers per day, oldest first, for the last ``cacheDayCount`` Pacific days.
    public var cacheDays: [CacheDay]
    /// Circuit transitions of the last 24 hours, oldest first.
    public var circuitTransitions: [DashboardSnapshot.CircuitTransition]
    /// The endpoints that spent the most units today, most first.
    public var topEndpoints: [EndpointUnits]

    /// How many Pacific days the cache chart covers.
    public static let cacheDayCount = 14

    /// Creates a snapshot.
    /// - Parameters:
    ///   - dashboard: The store's state now.
    ///   - dayStart: The start of today's Pacific day.
    ///   - forecasts: Each bucket's burn rate.
    ///   - burn: Each bucket's cumulative units today.
    ///   - cacheDays: The cache's answers per day, oldest first.
    ///   - circuitTransitions: Circuit transitions of the last 24 hours, oldest first.
    ///   - topEndpoints: The endpoints that spent the most units today.
    public init(
        dashboard: DashboardSnapshot, dayStart: Date, forecasts: [Forecast], burn: [BurnSeries], cacheDays: [CacheDay],
        circuitTransitions: [DashboardSnapshot.CircuitTransition], topEndpoints: [EndpointUnits]
    ) {
        self.dashboard = dashboard
        self.dayStart = dayStart
        self.forecasts = forecasts
        self.burn = burn
        self.cacheDays = cacheDays
        self.circuitTransitions = circuitTransitions
        self.topEndpoints = topEndpoints
    }

    /// The forecast of a bucket.
    /// - Parameter bucket: The bucket.
    /// - Returns: Its forecast, if the snapshot has one.
    public func forecast(of bucket: String) -> Forecast? {
        forecasts.first { $0.bucket == bucket }
    }
}
