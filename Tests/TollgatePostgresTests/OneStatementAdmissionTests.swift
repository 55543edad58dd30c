import Foundation
import Testing
import TollgatePostgres
import TollgateStore
import TollgateTestSupport

/// `tollgate_admit`, the usual admission in one statement (migration 0002): taken whenever it can
/// be, and writing nothing when it declines, so the full transaction that follows is the only one
/// that acts.
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
            #expect(try await database.intValue("SELECT count(*)::bigint FROM throttle_requests") == 3)
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
                    "SELECT outcome FROM tollgate_admit('videos.list', \(throttle), 60000, 'youtube', 'videos.list', \(cost), \(limit), '{}')"
                )
            }
            func ledger() async throws -> [Int?] {
                [try await database.intValue("SELECT count(*)::bigint FROM quota_events"),
                 try await database.intValue("SELECT units FROM quota_bucket_days"),
                 try await database.intValue("SELECT count(*)::bigint FROM throttle_requests")]
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
}
