import Foundation
import Tollgate
import TollgatePostgres
import TollgateSQLite

/// The gate's admission over PostgreSQL (`PostgresStore.admit`: circuit, throttle and quota in one
/// transaction), many clients of one process against one hot bucket: one machine of a fleet, with
/// its connection pool.
public struct PostgresAdmissionScenario: Sendable {
    public let store: PostgresStore
    public let endpoint: String
    /// The one bucket every admission charges, named for this run so each run starts at zero.
    public let bucket: String
    /// The bucket's configured daily limit.
    public let limit: Int
    let policy = CircuitPolicy()
    /// The SQLite scenario's throttle limit: never reached, a short window so it holds tens of
    /// recorded requests, as a real per-minute limit does at real rates.
    let throttleLimit = ThrottleLimit(requests: 1_000_000, per: .milliseconds(2))

    /// Opens the store at `url` with a pool of `connections`.
    /// - Parameters:
    ///   - url: The database.
    ///   - connections: The pool's size: at least the number of concurrent clients, so the pool
    ///     never makes a client wait for a connection.
    ///   - bucket: The bucket to charge.
    ///   - limit: Its configured daily limit.
    ///   - endpoint: The endpoint every admission is for.
    /// - Throws: What opening the store throws.
    public init(url: String, connections: Int, bucket: String, limit: Int, endpoint: String = "videos.list") async throws {
        store = try await PostgresStore(
            url: url, configuration: PostgresStore.Configuration(maximumConnections: connections)
        )
        self.bucket = bucket
        self.limit = limit
        self.endpoint = endpoint
    }

    /// One admission of a 1-unit charge, as the gate asks it for one attempt.
    /// - Returns: True when admitted and charged; false when the quota refused (nothing charged).
    /// - Throws: `BenchmarkFailure` when the circuit or the throttle refused; store errors.
    public func admit() async throws -> Bool {
        let outcome = try await store.admit(AdmissionRequest(
            endpoint: endpoint, circuitPolicy: policy, probeToken: CircuitBreaker.newProbeToken(),
            throttleLimit: throttleLimit,
            quota: QuotaReservationRequest(bucket: bucket, endpoint: endpoint, cost: 1, configuredLimit: limit, at: Date())
        ))
        switch outcome {
        case .admitted: return true
        case .refusedByQuota: return false
        default: throw BenchmarkFailure("admission refused: \(outcome)")
        }
    }

    /// What the store's own ledger says about the bucket after a run.
    public struct Ledger: Sendable {
        /// The bucket's limit and the units it used today (`quotaBucketStatus`).
        public var limit: Int
        public var used: Int
        /// Today's totals for the bucket (`quotaUsage`): units and charged calls.
        public var usageUnits: Int
        public var usageCalls: Int
        /// Keys of the bucket whose total differs from the sum of its events
        /// (`quotaLedgerDiscrepancies`).
        public var discrepancies: Int
    }

    /// Reads the bucket back through the store's status, usage and ledger check.
    /// - Returns: What the store says.
    /// - Throws: Store errors.
    public func ledger() async throws -> Ledger {
        let status = try await store.quotaBucketStatus(bucket: bucket, configuredLimit: limit, at: Date())
        let usage = try await store.quotaUsage(on: status.day).filter { $0.bucket == bucket }
        let discrepancies = try await store.quotaLedgerDiscrepancies().filter { $0.bucket == bucket }
        return Ledger(
            limit: status.limit, used: status.unitsUsed,
            usageUnits: usage.reduce(0) { $0 + $1.units }, usageCalls: usage.reduce(0) { $0 + $1.calls },
            discrepancies: discrepancies.count
        )
    }

    /// Closes the pool.
    public func shutdown() async {
        await store.shutdown()
    }
}

/// Many concurrent clients in one process, each admitting one request after the other.
public enum ConcurrentClients {
    /// What a timed run measured.
    public struct Run: Sendable {
        /// Latencies of the admissions started in the timed phase, in nanoseconds, sorted.
        public var latencies: [UInt64]
        /// The timed phase: from its start to the end of the last admission started in it.
        public var elapsed: UInt64
        /// Admissions admitted in the whole run, warm-up included.
        public var admitted: Int
        /// Admissions the quota refused in the whole run, warm-up included.
        public var refused: Int

        /// Admissions per second in the timed phase.
        public var perSecond: Double { elapsed == 0 ? 0 : Double(latencies.count) / (Double(elapsed) / 1e9) }

        /// The `fraction` percentile of the latencies (nearest rank).
        public func percentile(_ fraction: Double) -> UInt64 {
            guard !latencies.isEmpty else { return 0 }
            let rank = Int((fraction * Double(latencies.count)).rounded(.up)) - 1
            return latencies[min(max(rank, 0), latencies.count - 1)]
        }
    }

    /// Runs `clients` tasks on the global executor, each calling `operation` in a loop: untimed
    /// for `warmup` (the pool opens its connections), then timed for `duration`.
    /// - Parameters:
    ///   - clients: How many concurrent callers.
    ///   - warmup: Nanoseconds of untimed calls first.
    ///   - duration: Nanoseconds of timed calls.
    ///   - operation: One call; true when admitted, false when refused by the quota.
    /// - Returns: The latencies and counts.
    /// - Throws: The first error an operation throws.
    @concurrent
    public static func timed(
        clients: Int, warmup: UInt64, duration: UInt64, _ operation: @escaping @Sendable () async throws -> Bool
    ) async throws -> Run {
        let begin = Timing.now
        let timedFrom = begin + warmup
        let until = timedFrom + duration
        let parts = try await withThrowingTaskGroup(of: Run.self) { group in
            for _ in 0..<clients {
                group.addTask { @concurrent in
                    var run = Run(latencies: [], elapsed: 0, admitted: 0, refused: 0)
                    run.latencies.reserveCapacity(1 << 16)
                    while true {
                        let start = Timing.now
                        if start >= until { break }
                        if try await operation() { run.admitted += 1 } else { run.refused += 1 }
                        let end = Timing.now
                        if start >= timedFrom {
                            run.latencies.append(end - start)
                            run.elapsed = max(run.elapsed, end - timedFrom)
                        }
                    }
                    return run
                }
            }
            return try await group.reduce(into: [Run]()) { $0.append($1) }
        }
        return Run(
            latencies: parts.flatMap(\.latencies).sorted(), elapsed: parts.map(\.elapsed).max() ?? 0,
            admitted: parts.reduce(0) { $0 + $1.admitted }, refused: parts.reduce(0) { $0 + $1.refused }
        )
    }

    /// Runs `clients` tasks that each call `operation` until it returns false (the quota refused).
    /// - Returns: How many calls were admitted and how many refused, over every client.
    /// - Throws: The first error an operation throws.
    @concurrent
    public static func untilRefused(
        clients: Int, _ operation: @escaping @Sendable () async throws -> Bool
    ) async throws -> (admitted: Int, refused: Int) {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<clients {
                group.addTask { @concurrent in
                    var admitted = 0
                    while try await operation() { admitted += 1 }
                    return admitted
                }
            }
            let admitted = try await group.reduce(0, +)
            return (admitted, clients)
        }
    }
}
