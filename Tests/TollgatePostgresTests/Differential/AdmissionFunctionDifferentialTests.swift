import Foundation
import PostgresNIO
import Testing
@testable import TollgatePostgres
import TollgateCore
import TollgateTestSupport

/// `tollgate_admit_batch`, the PL/pgSQL fast path of admission, repeats the quota rule in SQL for
/// speed. This holds it to the rule's one copy, ``QuotaStateMachine``: generated scenarios put the
/// same rows at the same instant to both, and the costs the function admits, its answers and the
/// rows it writes must be exactly what the machine decides and writes; where the function's stated
/// domain holds it must admit all the machine admits, in order.
///
/// The function is run as installed by the migrations, with its clock made a parameter: a copy
/// whose `now()` and `clock_timestamp()` read a session setting, so scenarios stand on either side
/// of a Pacific midnight, the 23- and 25-hour days included, without waiting for them.
///
/// `TOLLGATE_DIFFERENTIAL_SCENARIOS` sets how many (2,000 by default, 20,000 with
/// `TOLLGATE_STRESS_SCALE=full`); `TOLLGATE_DIFFERENTIAL_SEED` replays a failure's seed.
@Suite("PL/pgSQL admission held to the quota machine",
       .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"))
struct AdmissionFunctionDifferentialTests {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static var scenarioCount: Int {
        if let text = environment["TOLLGATE_DIFFERENTIAL_SCENARIOS"], let count = Int(text), count > 0 { return count }
        return environment["TOLLGATE_STRESS_SCALE"]?.lowercased() == "full" ? 20_000 : 2_000
    }

    static var seed: UInt64 {
        environment["TOLLGATE_DIFFERENTIAL_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
    }

    /// Installs `tollgate_admit_batch_at`, the installed function with its clock read from the
    /// session setting `tollgate.test_now` (milliseconds since 1970).
    static func installClockedCopy(_ connection: PostgresConnection) async throws {
        let logger = PostgresTestDatabase.quietLogger
        _ = try await connection.query("""
            CREATE FUNCTION tollgate_test_now() RETURNS timestamptz LANGUAGE sql STABLE
            AS $$ SELECT 'epoch'::timestamptz + current_setting('tollgate.test_now')::bigint * interval '1 millisecond' $$
            """, logger: logger).collect()
        var definition = ""
        for row in try await connection.query(
            "SELECT pg_get_functiondef('tollgate_admit_batch'::regproc)", logger: logger
        ).collect() {
            definition = try row.decode(String.self)
        }
        #expect(definition.contains("now()") && definition.contains("clock_timestamp()"),
                "the function reads the clock where the copy replaces it")
        let clocked = definition
            .replacingOccurrences(of: "clock_timestamp()", with: "tollgate_test_clock")
            .replacingOccurrences(of: "now()", with: "tollgate_test_now()")
            .replacingOccurrences(of: "tollgate_test_clock", with: "tollgate_test_now()")
            .replacingOccurrences(of: ".tollgate_admit_batch(", with: ".tollgate_admit_batch_at(")
        #expect(clocked.contains("tollgate_admit_batch_at("))
        _ = try await connection.query(PostgresQuery(unsafeSQL: clocked), logger: logger).collect()
    }

    /// Scenarios run on this many sessions at once, each with its own store and clock: a scenario's
    /// bucket, endpoint and random steps come from its index alone, so how they are dealt out does
    /// not change what is compared, only how long the 2,000 take.
    static let laneCount = 4

    /// What one lane saw: costs the function admitted and declined, and its first difference.
    struct LaneTally: Sendable {
        var admitted = 0
        var declined = 0
        var mismatch: String?
    }

    @Test("generated scenarios: the function admits what the machine admits, answers as it does and writes its rows")
    func functionDecidesAsTheMachine() async throws {
        let seed = Self.seed, count = Self.scenarioCount
        try await PostgresTestDatabase.with { database in
            // A store's opening migrates the database, and the clocked copy is made from what it installed.
            try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger).shutdown()
            try await database.withConnection { connection in try await Self.installClockedCopy(connection) }
            let tallies = try await withThrowingTaskGroup(of: LaneTally.self) { group in
                for lane in 0..<Self.laneCount {
                    group.addTask {
                        try await Self.runLane(lane, scenarios: stride(from: lane, to: count, by: Self.laneCount),
                                               seed: seed, database: database)
                    }
                }
                return try await group.reduce(into: [LaneTally]()) { $0.append($1) }
            }
            let mismatches = tallies.compactMap(\.mismatch)
            for mismatch in mismatches {
                Issue.record("seed \(seed) (set TOLLGATE_DIFFERENTIAL_SEED=\(seed) to replay): \(mismatch)")
            }
            // Both branches must have been taken, or the comparison proved nothing.
            guard mismatches.isEmpty else { return }
            let admitted = tallies.reduce(0) { $0 + $1.admitted }, declined = tallies.reduce(0) { $0 + $1.declined }
            #expect(admitted > count / 4, "seed \(seed): the function admitted \(admitted) costs")
            #expect(declined > count / 20, "seed \(seed): the function declined \(declined) costs")
        }
    }

    /// Runs `scenarios` in order on one session and one store of their own, until the first one
    /// where the function and the machine differ.
    static func runLane(
        _ lane: Int, scenarios: StrideTo<Int>, seed: UInt64, database: PostgresTestDatabase
    ) async throws -> LaneTally {
        let clock = ManualClock()
        let store = try await PostgresStore(
            location: PostgresLocation(url: database.url), configuration: .init(maximumConnections: 2),
            logger: PostgresTestDatabase.quietLogger, windowClock: clock
        )
        do {
            let tally = try await database.withConnection { connection in
                var tally = LaneTally()
                for index in scenarios {
                    var scenario = AdmissionScenario(index: index, seed: seed, clock: clock)
                    // Most scenarios throttle loosely; some tightly, so the window decides too.
                    let throttle = index % 5 == 0 ? (requests: 3, windowMs: 60_000) : (requests: 1_000, windowMs: 60_000)
                    let mismatch = try await scenario.run(store: store, connection: connection, throttle: throttle)
                    tally.admitted += scenario.admittedByFunction
                    tally.declined += scenario.declinedByFunction
                    if let mismatch {
                        tally.mismatch = mismatch
                        break
                    }
                }
                return tally
            }
            await store.shutdown()
            return tally
        } catch {
            await store.shutdown()
            throw error
        }
    }
}
