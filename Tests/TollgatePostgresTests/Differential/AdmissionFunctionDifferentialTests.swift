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

    @Test("generated scenarios: the function admits what the machine admits, answers as it does and writes its rows")
    func functionDecidesAsTheMachine() async throws {
        let seed = Self.seed, count = Self.scenarioCount
        try await PostgresTestDatabase.with { database in
            let clock = ManualClock()
            let store = try await PostgresStore(
                location: PostgresLocation(url: database.url), configuration: .init(maximumConnections: 2),
                logger: PostgresTestDatabase.quietLogger, windowClock: clock
            )
            do {
                try await database.withConnection { connection in
                    try await Self.installClockedCopy(connection)
                    var admitted = 0, declined = 0, differed = false
                    for index in 0..<count {
                        var scenario = AdmissionScenario(index: index, seed: seed, clock: clock)
                        // Most scenarios throttle loosely; some tightly, so the window decides too.
                        let throttle = index % 5 == 0 ? (requests: 3, windowMs: 60_000) : (requests: 1_000, windowMs: 60_000)
                        let mismatch = try await scenario.run(store: store, connection: connection, throttle: throttle)
                        admitted += scenario.admittedByFunction
                        declined += scenario.declinedByFunction
                        if let mismatch {
                            Issue.record("seed \(seed) (set TOLLGATE_DIFFERENTIAL_SEED=\(seed) to replay): \(mismatch)")
                            differed = true
                            break
                        }
                    }
                    // Both branches must have been taken, or the comparison proved nothing.
                    guard !differed else { return }
                    #expect(admitted > count / 4, "seed \(seed): the function admitted \(admitted) costs")
                    #expect(declined > count / 20, "seed \(seed): the function declined \(declined) costs")
                }
                await store.shutdown()
            } catch {
                await store.shutdown()
                throw error
            }
        }
    }
}
