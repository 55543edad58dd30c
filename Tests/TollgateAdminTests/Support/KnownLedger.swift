import Foundation
import Tollgate
import TollgateSQLite
import TollgateTestSupport

/// A SQLite ledger with known contents on one Pacific day, read at 15:00 PT that day:
/// - `videos.list` charged 300 units at each hour from 01:00 to 14:00, then 600 at 14:30: 4,800 of
///   the `youtube` bucket's 10,000, 900 in the last hour, so it runs out at 20:46:40 at that rate;
/// - `search.list` charged 1 unit at 09:00 and at 12:00 in `youtube.search`;
/// - `videos.list`'s circuit opened at 10:00, half-open at 10:02, closed by the probe's success;
/// - the cache's answers on each of the last 14 days: hits 20 + day index, 5 revalidations, 3 misses.
struct KnownLedger {
    static let day = PacificDay(key: "2026-11-20")!
    static let now = day.start.addingTimeInterval(15 * 3600)

    let directory: TemporaryDirectory
    let store: SQLiteStore
    let clock: ManualClock

    init() async throws {
        directory = try TemporaryDirectory()
        store = try SQLiteStore(path: directory.path("known.sqlite"), logger: quiet)
        clock = ManualClock(now: Self.day.start)
        let configuration = GateConfiguration.youTubeDataAPIv3
        let ledger = try QuotaLedger(storage: store, configuration: configuration.quota, clock: clock, logger: quiet)
        for hour in 1...14 {
            clock.set(to: Self.day.start.addingTimeInterval(Double(hour) * 3600))
            try await ledger.reserve(endpoint: "videos.list", cost: 300)
        }
        clock.set(to: Self.day.start.addingTimeInterval(14.5 * 3600))
        try await ledger.reserve(endpoint: "videos.list", cost: 600)
        for hour in [9.0, 12.0] {
            clock.set(to: Self.day.start.addingTimeInterval(hour * 3600))
            try await ledger.reserve(endpoint: "search.list")
        }

        let circuit = CircuitBreaker(storage: store, configuration: configuration.circuit, clock: clock, logger: quiet)
        clock.set(to: Self.day.start.addingTimeInterval(10 * 3600))
        for _ in 0..<5 { try await circuit.recordResult(endpoint: "videos.list", status: 500) }
        clock.set(to: Self.day.start.addingTimeInterval(10 * 3600 + 120))
        let probe = try await circuit.shouldAllowRequest(endpoint: "videos.list").probe
        try await circuit.recordResult(endpoint: "videos.list", status: 200, probe: probe)

        var activity = CacheActivity()
        var date = Self.day
        for index in (0..<14).reversed() {
            activity.count(CacheStatisticsCounts(hits: Int64(20 + index), revalidations: 5, misses: 3),
                           for: CacheStatisticsKey(pacificDate: date.key, endpoint: "videos.list"))
            date = date.previous
        }
        try await store.recordCacheActivity(activity)
        clock.set(to: Self.now)
    }
}
