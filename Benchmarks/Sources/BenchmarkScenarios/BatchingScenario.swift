import Foundation
import HTTPTypes
import Tollgate
import BenchmarkFakeAPI
import TollgateSQLite

/// Single-ID lookups as an app showing lists makes them: waves of concurrent `videos.list?id=X`
/// calls drawn from a pool of IDs, through a gate with the YouTube preset in front of the fake
/// YouTube API (answers fresh for a minute, as a client that caches them would see), once with the
/// preset's batching and once without. Counts, not times: the units charged and the calls that
/// reached the API.
public struct BatchingScenario: Sendable {
    /// What one run spent.
    public struct Spent: Sendable {
        /// Calls that reached the API.
        public var upstreamCalls: Int
        /// Units the gate's ledger charged.
        public var units: Int
        /// Units the API itself counted.
        public var apiUnits: Int
        /// The median time a lookup took, in nanoseconds.
        public var medianLookup: UInt64
    }

    /// Runs `lookups` lookups over `ids` IDs in waves of `wave` concurrent ones.
    /// - Parameters:
    ///   - batching: Whether the preset's batching is on.
    ///   - lookups: How many lookups.
    ///   - ids: How many distinct IDs they are drawn from (a fixed pseudo-random sequence).
    ///   - wave: How many are in flight at once.
    ///   - path: The database file (a fresh one).
    /// - Returns: What the run spent.
    /// - Throws: `BenchmarkFailure` when a lookup's answer is not its own video.
    public static func run(batching: Bool, lookups: Int, ids: Int, wave: Int, path: String) async throws -> Spent {
        var behaviour = FakeAPIBehaviour()
        behaviour.maxAge = 60
        let api = try await FakeYouTubeAPI.start(behaviour: behaviour)
        var configuration = GateConfiguration.youTubeDataAPIv3
        if !batching { configuration.batching = [:] }
        configuration.throttle = ThrottleConfiguration(defaultLimit: ThrottleLimit(requests: 1_000_000, per: .seconds(60)))
        let store = try SQLiteStore(path: path)
        let gate = try Gate(store: store, transport: URLSessionTransport(), configuration: configuration, clock: SystemClock())
        // The same sequence for both runs: a linear congruential generator, fixed seed.
        var state: UInt64 = 0x5EED
        let sequence = (0..<lookups).map { _ -> String in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return String(format: "v%03d", Int((state >> 33) % UInt64(ids)))
        }
        var durations: [UInt64] = []
        for start in stride(from: 0, to: lookups, by: wave) {
            let chunk = sequence[start..<min(start + wave, lookups)]
            let timed = try await withThrowingTaskGroup(of: UInt64.self) { group in
                for id in chunk {
                    let url = api.url("videos", ["id": id, "part": "snippet"])
                    group.addTask {
                        let began = Timing.now
                        let answer = try await gate.send(HTTPRequest(url: url), endpoint: "videos.list")
                        guard answer.status == .ok, String(decoding: answer.body, as: UTF8.self).contains("\"id\":\"\(id)\"")
                        else { throw BenchmarkFailure("the lookup of \(id) did not answer its own video") }
                        return Timing.now - began
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            durations += timed
        }
        try await gate.flush()
        let usage = try await store.quotaUsage(on: PacificDay(containing: Date()))
        let spent = Spent(upstreamCalls: api.receivedRequests.count, units: usage.reduce(0) { $0 + $1.units },
                          apiUnits: api.unitsUsed, medianLookup: Timing.median(durations))
        await api.stop()
        return spent
    }
}
