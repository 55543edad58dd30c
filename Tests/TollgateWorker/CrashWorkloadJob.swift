import Foundation
import Tollgate

/// `crash-workload PATH SEED ITERATIONS`: the gate's mixed workload on one file, for the crash
/// tests that kill it with SIGKILL at random moments. ITERATIONS 0 runs until killed.
///
/// Each iteration admits one attempt through ``SQLiteStore/admit(_:)`` (circuit, throttle and a
/// quota charge in one transaction), settles it through ``SQLiteStore/settleAttempt(_:)`` with a
/// random outcome (successes, failures and rate limits that open and close circuits, 304 refunds),
/// and now and then stores a cache entry or refunds an older charge again.
///
/// Prints `ready` once the store is open, then, as each transaction commits, `charge ID` and
/// `refund ID`, each line written at once with `write(2)` so that a kill right after a commit
/// cannot lose the line: every printed charge must be found in the file afterwards. Prints `done`
/// after the last iteration.
enum CrashWorkloadJob {
    static let bucket = "crash"
    static let endpoints = ["alpha.list", "beta.list", "gamma.insert"]
    static let policy = CircuitPolicy(
        failureThreshold: 3, openDuration: .milliseconds(150), rateLimitOpenDuration: .milliseconds(300),
        probeLeaseDuration: .milliseconds(200)
    )

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 3, let seed = UInt64(arguments[1]), let iterations = Int(arguments[2]) else {
            throw StoreRefusal.invalidArgument("crash-workload PATH SEED ITERATIONS")
        }
        let store = try SQLiteStore(path: arguments[0])
        emit("ready")
        var random = WorkerRandom(seed: seed)
        var charges: [Int64] = []
        var iteration = 0
        while iterations == 0 || iteration < iterations {
            iteration += 1
            let endpoint = endpoints[random.next(below: endpoints.count)]
            let now = Date()
            let outcome = try await store.admit(AdmissionRequest(
                endpoint: endpoint, circuitPolicy: policy, probeToken: "worker-\(seed)-\(iteration)",
                throttleLimit: ThrottleLimit(requests: 100_000, per: .seconds(1)),
                quota: QuotaReservationRequest(bucket: bucket, endpoint: endpoint, cost: 1 + random.next(below: 5),
                                               configuredLimit: 1_000_000_000, at: now)
            ))
            if case .admitted(let circuit, _, let charge) = outcome {
                emit("charge \(charge.reservationID)")
                charges.append(charge.reservationID)
                let roll = random.next(below: 100)
                let result: CircuitOutcome = roll < 45 ? .success : roll < 80 ? .failure : roll < 92 ? .rateLimited : .neutral
                let refund = result == .success && random.next(below: 4) == 0
                let settled = try await store.settleAttempt(AttemptSettlement(
                    endpoint: endpoint, outcome: result, probeToken: circuit.decision.probe?.token,
                    circuitPolicy: policy, refundReservationID: refund ? charge.reservationID : nil,
                    refundReason: refund ? "304 Not Modified" : nil, at: Date()
                ))
                if case .refunded = settled.refund { emit("refund \(charge.reservationID)") }
            }
            if random.next(below: 3) == 0 {
                try await storeCacheEntry(store, endpoint: endpoint, random: &random)
            }
            if random.next(below: 10) == 0, !charges.isEmpty {
                // A second settlement of an older charge: refunded at most once, whoever asks.
                let id = charges[random.next(below: charges.count)]
                if case .refunded = try await store.refundQuota(reservationID: id, at: Date(), reason: "worker refund") {
                    emit("refund \(id)")
                }
            }
        }
        emit("done")
    }

    private static func storeCacheEntry(_ store: SQLiteStore, endpoint: String, random: inout WorkerRandom) async throws {
        let resource = random.next(below: 40)
        let size = 200 + random.next(below: 20_000)
        let now = Date()
        let entry = NewCacheEntry(
            resourceKey: "crash-\(resource)", variantKey: "", endpoint: endpoint, method: "GET",
            url: "https://api.example.com/\(endpoint)/\(resource)", vary: nil, status: 200,
            headers: [CacheHeaderField(name: "ETag", value: "\"\(size)\"")], etag: "\"\(size)\"", lastModified: nil,
            freshUntilMs: nil, nowMs: Int64(now.timeIntervalSince1970 * 1000),
            body: Data(repeating: UInt8(truncatingIfNeeded: size), count: size)
        )
        var activity = CacheActivity()
        activity.count(CacheStatisticsCounts(misses: 1),
                       for: CacheStatisticsKey(pacificDate: PacificDay(containing: now).key, endpoint: endpoint))
        _ = try await store.storeCacheEntry(
            entry, retention: CacheRetention(maxEntries: 25, maxTotalBodyBytes: 300_000, expiredBeforeMs: 0),
            activity: activity
        )
    }

    /// One line on standard output, written with one `write(2)`: no buffer for a kill to lose.
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// SplitMix64: a small seeded generator, so a worker's workload follows from its seed.
struct WorkerRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
