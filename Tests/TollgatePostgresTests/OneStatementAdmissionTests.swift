import Foundation
import Testing
import TollgateCore
import TollgatePostgres
import TollgateSQLite
import TollgateTestSupport

/// `tollgate_admit_batch`, the usual admission in one statement (migration 0003): taken whenever it
/// can be, writing nothing for the costs it declines, so the full transaction that follows is the
/// only one that acts for them, and deciding the admissions that arrive together as that many calls
/// in a row would.
@Suite("PostgreSQL one-statement admission", .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"))
struct OneStatementAdmissionTests {
    private func request(cost: Int = 10, limit: Int = 100, throttle: Int = 5, warnings: [Int] = []) -> AdmissionRequest {
        AdmissionRequest(
            endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: "token",
            throttleLimit: ThrottleLimit(requests: throttle, per: .seconds(60)),
            quota: QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: cost,
                                           configuredLimit: limit, warningPercents: warnings, at: Date())
        )
    }

    /// A store whose debug lines are kept: the one-statement admission says when it was taken.
    private func storeLoggingDebug(_ database: PostgresTestDatabase) async throws -> (PostgresStore, LogCapture) {
        let capture = LogCapture()
        var logger = capture.logger
        logger.logLevel = .debug
        return (try await PostgresStore(url: database.url, logger: logger), capture)
    }

    @Test("once the first admission has made the rows, the next ones are one statement and report what the full path does")
    func usualAdmissionIsOneStatement() async throws {
        try await PostgresTestDatabase.with { database in
            let (store, capture) = try await storeLoggingDebug(database)
            var charges: [QuotaCharge] = []
            for _ in 0..<3 {
                guard case .admitted(let circuit, let throttle, let charge) = try await store.admit(request(warnings: [15, 25]))
                else { Issue.record("expected an admission"); break }
                #expect(circuit.decision == .allowed && circuit.transitions.isEmpty)
                #expect(throttle.allowed && throttle.count == charges.count + 1 && throttle.limit == 5)
                charges.append(charge)
            }
            await store.shutdown()
            #expect(capture.messages.filter { $0 == "admitted in one statement" }.count == 2, "the first admission made the rows")
            #expect(charges.map(\.bucketUnitsUsed) == [10, 20, 30])
            #expect(charges.map(\.limit) == [100, 100, 100])
            #expect(charges.map(\.warningsCrossed) == [[], [15], [25]], "each warning once, by the charge that crossed it")
            #expect(charges.map(\.day) == Array(repeating: charges[0].day, count: 3))
            let ids = charges.map { String($0.reservationID) }.joined(separator: ",")
            #expect(try await database.intValue("SELECT count(*)::bigint FROM quota_events WHERE kind = 'charge' AND id IN (\(ids))") == 3)
            #expect(try await database.intValue("SELECT units FROM quota_usage WHERE endpoint = 'videos.list'") == 30)
            #expect(try await database.intValue("SELECT warned_percent::bigint FROM quota_bucket_days") == 25)
            #expect(try await database.intValue("SELECT cardinality(admitted_at_ms)::bigint FROM throttle_limits") == 3)
        }
    }

    @Test("it declines, writing nothing, whatever the full path must decide: a full window, an exhausted budget, an open circuit, a changed limit")
    func declinesWritingNothing() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            guard case .admitted = try await store.admit(request(cost: 60, throttle: 2)) else {
                Issue.record("expected the first admission")
                return
            }
            func call(cost: Int = 10, limit: Int = 100, throttle: Int = 2) async throws -> String? {
                try await database.textValue(
                    "SELECT outcome FROM tollgate_admit_batch('videos.list', \(throttle), 60000, 'youtube', 'videos.list', '{\(cost)}', \(limit), '{}')"
                )
            }
            func ledger() async throws -> [Int?] {
                [try await database.intValue("SELECT count(*)::bigint FROM quota_events"),
                 try await database.intValue("SELECT units FROM quota_bucket_days"),
                 try await database.intValue("SELECT cardinality(admitted_at_ms)::bigint FROM throttle_limits")]
            }
            let before = try await ledger()
            #expect(try await call(cost: 50) == "fallback", "over the budget")
            #expect(try await call(limit: 120) == "fallback", "a configured limit the bucket's row does not have yet")
            #expect(try await ledger() == before)

            // An open circuit, with the window and the budget both with room: only the circuit declines.
            _ = try await store.forceOpenCircuit(endpoint: "videos.list", duration: .seconds(60), policy: CircuitPolicy(), at: Date())
            #expect(try await call() == "fallback", "the circuit is open")
            #expect(try await ledger() == before)
            _ = try await store.resetCircuits(endpoint: "videos.list", at: Date())
            #expect(try await call() == "admitted", "closed again")
            let afterOne = try await ledger()
            #expect(try await call() == "fallback", "the window of 2 is full")
            #expect(try await ledger() == afterOne)
            await store.shutdown()
        }
    }

    @Test("it leaves to the full transaction a bucket counted over another window, paced, or whose day an announced reset moved")
    func declinesOtherWindows() async throws {
        try await PostgresTestDatabase.with { database in
            let (store, capture) = try await storeLoggingDebug(database)
            func admit(_ quota: QuotaReservationRequest) async throws -> QuotaCharge? {
                let outcome = try await store.admit(AdmissionRequest(
                    endpoint: "videos.list", circuitPolicy: CircuitPolicy(), probeToken: "token",
                    throttleLimit: ThrottleLimit(requests: 100, per: .seconds(60)), quota: quota
                ))
                if case .admitted(_, _, let charge) = outcome { return charge }
                return nil
            }
            func quota(window: QuotaWindow = .pacificDay, pacing: QuotaPacing? = nil) -> QuotaReservationRequest {
                QuotaReservationRequest(bucket: "youtube", endpoint: "videos.list", cost: 1, configuredLimit: 100, at: Date(),
                                        window: window, pacing: pacing)
            }
            func oneStatement() -> Int { capture.messages.filter { $0 == "admitted in one statement" }.count }
            _ = try #require(try await admit(quota()))
            _ = try #require(try await admit(quota()))
            #expect(oneStatement() == 1, "the rows exist: the usual case")

            // Another window: the full transaction, which stores the window with the bucket.
            let hourly = try #require(try await admit(quota(window: .hour)))
            #expect(hourly.period.key.hasSuffix(":00:00Z"))
            #expect(try await database.textValue("SELECT window_spec FROM quota_buckets") == "hour")
            // Back to the Pacific day: the function sees the stored hour and declines; the full
            // transaction brings the row back to the Pacific day, and the next is one statement again.
            #expect(try await database.textValue(
                "SELECT outcome FROM tollgate_admit_batch('videos.list', 100, 60000, 'youtube', 'videos.list', '{1}', 100, '{}')"
            ) == "fallback")
            _ = try #require(try await admit(quota()))
            #expect(try await database.textValue("SELECT window_spec FROM quota_buckets") == QuotaWindow.pacificDay.specification)
            #expect(oneStatement() == 1)
            _ = try #require(try await admit(quota()))
            #expect(oneStatement() == 2)

            // Pacing is decided by the full transaction.
            _ = try #require(try await admit(quota(pacing: QuotaPacing(reserveFraction: 0.1))))
            #expect(oneStatement() == 2)

            // A reset announced today moves the Pacific day: the function declines until the next day.
            let outcome = try await store.recordQuotaAnnouncement(QuotaAnnouncement(
                bucket: "youtube", endpoint: "videos.list", configuredLimit: 100, window: .pacificDay, remaining: 90,
                // A whole second: the row keeps milliseconds.
                resetsAt: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 600).rounded()), at: Date()
            ))
            #expect(outcome.movedReset)
            #expect(try await database.textValue(
                "SELECT outcome FROM tollgate_admit_batch('videos.list', 100, 60000, 'youtube', 'videos.list', '{1}', 100, '{}')"
            ) == "fallback")
            let moved = try #require(try await admit(quota()))
            #expect(oneStatement() == 2)
            #expect(moved.resetsAt == outcome.period.end)
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
            await store.shutdown()
        }
    }

    @Test("a closed circuit that has counted failures is read back whole by the one-statement admission")
    func closedCircuitWithFailures() async throws {
        try await PostgresTestDatabase.with { database in
            let (store, capture) = try await storeLoggingDebug(database)
            guard case .admitted = try await store.admit(request()) else { Issue.record("expected an admission"); return }
            _ = try await store.recordCircuitOutcome(.failure, endpoint: "videos.list", probeToken: nil, policy: CircuitPolicy(), at: Date())
            guard case .admitted(let circuit, _, _) = try await store.admit(request()) else {
                Issue.record("expected an admission")
                return
            }
            await store.shutdown()
            #expect(capture.messages.filter { $0 == "admitted in one statement" }.count == 1)
            #expect(circuit.decision == .allowed && circuit.transitions.isEmpty)
            #expect(circuit.record.endpoint == "videos.list" && circuit.record.state == .closed)
            #expect(circuit.record.consecutiveFailures == 1)
            #expect(circuit.record.failureThreshold == CircuitPolicy().failureThreshold)
        }
    }

    @Test("one statement decides several costs in order, each with its own event and report, and declines the first that does not fit and all after it")
    func severalCostsInOrder() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            guard case .admitted = try await store.admit(request(cost: 5, throttle: 6, warnings: [15, 25, 80])) else {
                Issue.record("expected the first admission, which makes the rows")
                return
            }
            await store.shutdown()
            // 5 used of 100; window 1 of 6. 10, 20 and 50 fit (85); 30 does not, so neither does 1 after it.
            try await database.execute("""
                CREATE TABLE answer AS SELECT row_number() OVER () AS n, * FROM
                tollgate_admit_batch('videos.list', 6, 60000, 'youtube', 'videos.list', '{10,20,50,30,1}', 100, '{15,25,80}')
                """)
            // Each admitted cost's report, and the units of the event its reservation id names.
            let answer = try await database.textValue("""
                SELECT string_agg(concat_ws(':', outcome, throttle_count, used_after, warnings::text, e.units), ' ' ORDER BY n)
                FROM answer LEFT JOIN quota_events AS e ON e.id = answer.reservation_id AND e.kind = 'charge'
                """)
            #expect(answer == "admitted:2:15:{15}:10 admitted:3:35:{25}:20 admitted:4:85:{80}:50 fallback fallback")
            #expect(try await database.intValue("SELECT units FROM quota_bucket_days") == 85)
            #expect(try await database.intValue("SELECT warned_percent::bigint FROM quota_bucket_days") == 80)
            #expect(try await database.intValue("SELECT units FROM quota_usage") == 85)
            #expect(try await database.intValue("SELECT calls FROM quota_usage") == 4)
            #expect(try await database.intValue("SELECT sum(units)::bigint FROM quota_events") == 85, "totals equal the events")
            #expect(try await database.intValue("SELECT cardinality(admitted_at_ms)::bigint FROM throttle_limits") == 4)
            // Two slots left in the window: the third cost is declined though the budget has room.
            let windowFull = try await database.textValue("""
                SELECT string_agg(outcome, ' ') FROM tollgate_admit_batch('videos.list', 6, 60000, 'youtube', 'videos.list', '{1,1,1}', 100, '{}')
                """)
            #expect(windowFull == "admitted admitted fallback")
        }
    }

    @Test("concurrent admissions share statements, and the ledger is exact: no unit over the limit, one event per charge, every report its own")
    func concurrentAdmissionsShareStatements() async throws {
        try await PostgresTestDatabase.with { database in
            let (store, capture) = try await storeLoggingDebug(database)
            let limit = 1_000
            func admission(cost: Int) -> AdmissionRequest { request(cost: cost, limit: limit, throttle: 10_000, warnings: [50, 90]) }
            guard case .admitted(_, _, let first) = try await store.admit(admission(cost: 1)) else {
                Issue.record("expected the first admission, which makes the rows")
                return
            }
            let costs = (0..<120).map { [1, 50, 100][$0 % 3] }
            let outcomes = try await withThrowingTaskGroup(of: (Int, AdmissionOutcome).self) { group in
                for cost in costs { group.addTask { (cost, try await store.admit(admission(cost: cost))) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            await store.shutdown()
            let charges = [(1, first)] + outcomes.compactMap { cost, outcome -> (Int, QuotaCharge)? in
                if case .admitted(_, _, let charge) = outcome { return (cost, charge) }
                return nil
            }
            let spent = charges.map(\.0).reduce(0, +)
            #expect(spent <= limit)
            #expect(outcomes.count - (charges.count - 1) > 0, "the budget ran out before the calls did")
            for (_, outcome) in outcomes {
                switch outcome {
                case .admitted, .refusedByQuota: break
                default: Issue.record("unexpected \(outcome)")
                }
            }
            #expect(try await database.intValue("SELECT units FROM quota_bucket_days") == spent)
            #expect(try await database.intValue("SELECT units FROM quota_usage") == spent)
            #expect(try await database.intValue("SELECT calls FROM quota_usage") == charges.count)
            #expect(try await database.intValue("SELECT sum(units)::bigint FROM quota_events") == spent)
            #expect(try await database.intValue("SELECT count(*)::bigint FROM quota_events WHERE kind = 'charge'") == charges.count)
            for (cost, charge) in charges {
                #expect(charge.cost == cost)
                #expect(try await database.intValue("SELECT units FROM quota_events WHERE id = \(charge.reservationID)") == cost,
                        "each report names its own event")
            }
            // The units used after each charge are the running total in the order the ledger charged them.
            let byReservation = charges.sorted { $0.1.reservationID < $1.1.reservationID }
            var running = 0
            for (cost, charge) in byReservation {
                running += cost
                #expect(charge.bucketUnitsUsed == running)
            }
            #expect(charges.flatMap(\.1.warningsCrossed).sorted() == (spent * 100 >= 90 * limit ? [50, 90] : [50]),
                    "each warning once, by the charge that crossed it")
            let sizes = capture.entries.filter { $0.message.description == "admission batch" }
                .compactMap { entry in entry.metadata["size"].flatMap { Int("\($0)") } }
            #expect(sizes.contains { $0 > 1 }, "admissions that arrived together shared a statement: \(sizes)")
        }
    }
}
