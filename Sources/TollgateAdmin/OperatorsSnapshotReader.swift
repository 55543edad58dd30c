import Foundation
import Tollgate
import TollgateSQLite

/// Reads what the operators' listener shows from a store, at the instant the store decides (a
/// PostgreSQL store's own clock): every process and machine over the same store reads the same.
public struct OperatorsSnapshotReader: Sendable {
    /// The store read.
    public let storage: any AdminStorage
    /// The instant each read asks for (a store with a clock of its own, PostgreSQL, uses that instead).
    public var clock: any TollgateClock
    /// How far back the burn rate looks.
    public var burnWindow: Duration = .seconds(3600)
    /// The burn chart's resolution.
    public var stepSeconds = 300
    /// The most circuit transitions read for the timeline.
    public var maximumTransitions = 500
    /// How many endpoints the "top endpoints" chart lists.
    public var topEndpointCount = 10
    /// The freshness in force per endpoint, from whoever knows the API's configuration (the proxy's
    /// gate, or the ledger under a description given with `--api`); nil shows none.
    public var freshness: (@Sendable () async -> [FreshnessInForce])?

    /// Creates a reader.
    /// - Parameters:
    ///   - storage: The store to read.
    ///   - clock: The instant each read asks for; the system's by default.
    public init(storage: any AdminStorage, clock: any TollgateClock = SystemClock()) {
        self.storage = storage
        self.clock = clock
    }

    /// Reads what `/metrics` reports of the shared state: the dashboard's snapshot and each
    /// bucket's forecast.
    /// - Returns: The snapshot and the forecasts.
    /// - Throws: The store's error.
    public func readForMetrics() async throws -> (DashboardSnapshot, [OperatorsSnapshot.Forecast]) {
        var snapshot = try await storage.dashboardSnapshot(at: clock.now(), recentEvents: 0)
        snapshot.freshness = await freshness?()
        return (snapshot, try await forecasts(for: snapshot))
    }

    /// Reads everything the web dashboard draws.
    /// - Returns: The snapshot.
    /// - Throws: The store's error.
    public func read() async throws -> OperatorsSnapshot {
        var snapshot = try await storage.dashboardSnapshot(at: clock.now(), recentEvents: 8)
        snapshot.freshness = await freshness?()
        let takenAt = snapshot.takenAt
        let day = PacificDay(key: snapshot.pacificDate) ?? PacificDay(containing: takenAt)
        let forecasts = try await forecasts(for: snapshot)
        let steps = try await storage.quotaTimeline(on: day, stepSeconds: stepSeconds)
        let burn = snapshot.buckets.map { bucket in
            Self.burnSeries(bucket, steps: steps.filter { $0.bucket == bucket.bucket }, stepSeconds: stepSeconds,
                            dayStart: day.start, now: takenAt)
        }
        let statistics = try await storage.cacheStatistics(pacificDate: nil)
        let transitions = try await storage.circuitTransitions(endpoint: nil, limit: maximumTransitions)
            .filter { $0.at >= takenAt.addingTimeInterval(-86_400) }
            .reversed()
            .map {
                DashboardSnapshot.CircuitTransition(at: $0.at, endpoint: $0.endpoint, from: $0.from.rawValue,
                                                    to: $0.to.rawValue, reason: $0.reason)
            }
        let top = snapshot.buckets
            .flatMap { bucket in
                bucket.endpoints.map {
                    OperatorsSnapshot.EndpointUnits(endpoint: $0.endpoint, bucket: bucket.bucket, units: $0.units, calls: $0.calls)
                }
            }
            .filter { $0.units > 0 }
            .sorted { ($0.units, $1.endpoint) > ($1.units, $0.endpoint) }
            .prefix(topEndpointCount)
        return OperatorsSnapshot(
            dashboard: snapshot, dayStart: day.start, forecasts: forecasts, burn: burn,
            cacheDays: Self.cacheDays(statistics, endingOn: day), circuitTransitions: Array(transitions),
            topEndpoints: Array(top)
        )
    }

    private func forecasts(for snapshot: DashboardSnapshot) async throws -> [OperatorsSnapshot.Forecast] {
        let now = snapshot.takenAt
        let burns = try await storage.quotaBurn(since: now.addingTimeInterval(-burnWindow.timeInterval), until: now)
        return snapshot.buckets.map { bucket in
            let perHour = burns.first { $0.bucket == bucket.bucket }?.unitsPerHour ?? 0
            let projection = QuotaForecast.projecting(bucket: bucket.bucket, unitsPerHour: perHour,
                                                      remaining: bucket.remaining, from: now, resetsAt: snapshot.resetsAt)
            return OperatorsSnapshot.Forecast(
                bucket: bucket.bucket, unitsPerHour: perHour, remaining: bucket.remaining,
                secondsToExhaustion: perHour > 0 ? Double(bucket.remaining) / perHour * 3600 : nil,
                runsOutAt: projection.runsOutAt
            )
        }
    }

    /// A bucket's cumulative units: 0 at midnight, a point at the end of each step that saw a
    /// charge, and the bucket's usage now. Time only moves forward along it: a step stamped after
    /// `now` (a writer whose clock runs ahead) is drawn where it was stamped, never back at now.
    static func burnSeries(
        _ bucket: DashboardSnapshot.Bucket, steps: [QuotaTimelineStep], stepSeconds: Int, dayStart: Date, now: Date
    ) -> OperatorsSnapshot.BurnSeries {
        var points = [OperatorsSnapshot.BurnPoint(secondsSinceMidnight: 0, cumulativeUnits: 0)]
        let elapsed = max(0, now.timeIntervalSince(dayStart))
        var total = 0
        for step in steps.sorted(by: { $0.start < $1.start }) {
            let start = step.start.timeIntervalSince(dayStart)
            if let last = points.last, last.secondsSinceMidnight < start {
                // Flat until the step: nothing was spent in between.
                points.append(.init(secondsSinceMidnight: start, cumulativeUnits: total))
            }
            total += step.units
            // The step in progress ends now; one stamped later ends where it ends.
            let end = start + Double(stepSeconds)
            points.append(.init(secondsSinceMidnight: start <= elapsed ? min(elapsed, end) : end, cumulativeUnits: total))
        }
        if let last = points.last, last.secondsSinceMidnight < elapsed {
            points.append(.init(secondsSinceMidnight: elapsed, cumulativeUnits: bucket.used))
        }
        return OperatorsSnapshot.BurnSeries(bucket: bucket.bucket, limit: bucket.limit, used: bucket.used, points: points)
    }

    /// The cache's days, summed over endpoints, for the ``OperatorsSnapshot/cacheDayCount`` days
    /// ending with `today`; a day with no answers is there with zeros.
    static func cacheDays(_ statistics: [CacheDailyStatistics], endingOn today: PacificDay) -> [OperatorsSnapshot.CacheDay] {
        var day = today
        var keys: [String] = []
        for _ in 0..<OperatorsSnapshot.cacheDayCount {
            keys.append(day.key)
            day = day.previous
        }
        return keys.reversed().map { key in
            let rows = statistics.filter { $0.pacificDate == key }
            func sum(_ count: (CacheStatisticsCounts) -> Int64) -> Int { Int(rows.reduce(0) { $0 + count($1.counts) }) }
            let hits = sum(\.hits), revalidations = sum(\.revalidations), misses = sum(\.misses)
            let answered = hits + revalidations + misses
            return OperatorsSnapshot.CacheDay(
                pacificDate: key, hits: hits, revalidations: revalidations, misses: misses, stale: sum(\.stale),
                coalesced: sum(\.coalesced),
                hitRate: answered == 0 ? nil : Double(hits + revalidations) / Double(answered)
            )
        }
    }
}
