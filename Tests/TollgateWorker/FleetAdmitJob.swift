import Foundation
import Tollgate
import TollgatePostgres
import TollgateTestSupport

/// `fleet-admit URL WORKER COUNT OFFSET_SECONDS SEED LIMIT [RETRIES [PAUSE_MS]]`: one machine of a fleet. Runs
/// `COUNT` admissions (circuit, throttle, quota in one transaction) against the PostgreSQL database
/// at `URL`, each costing 1, 50 or 100 units (drawn from `SEED`) in the shared bucket `fleet` of
/// `LIMIT` units, under the endpoint `fleet.WORKER`, with its own clock `OFFSET_SECONDS` off.
/// Prints `CHARGED <id> <units>` the moment a charge is committed (so a test that kills it knows
/// what it was told), then `DONE granted G refused R`.
///
/// Without `RETRIES` a store error ends the job. With it, an admission the store fails (the server
/// went away) prints `FAILED <error>` and is tried again 100 ms later, up to `RETRIES` times in a
/// row, as a service that outlives a database restart would. `PAUSE_MS` spaces the admissions,
/// so a run lasts long enough for something to happen to the server in the middle of it.
enum FleetAdmitJob {
    static func run(_ arguments: [String]) async throws {
        guard (6...8).contains(arguments.count), let count = Int(arguments[2]), let offset = Double(arguments[3]),
              let seed = UInt64(arguments[4]), let limit = Int(arguments[5]),
              let retries = arguments.count >= 7 ? Int(arguments[6]) : 0,
              let pauseMs = arguments.count == 8 ? Int(arguments[7]) : 0
        else {
            throw StoreRefusal.invalidArgument("fleet-admit URL WORKER COUNT OFFSET_SECONDS SEED LIMIT [RETRIES [PAUSE_MS]]")
        }
        let store = try await PostgresStore(url: arguments[0])
        let endpoint = "fleet.\(arguments[1])"
        var random = SeededGenerator(seed: seed)
        var granted = 0
        var refused = 0
        for _ in 0..<count {
            let cost = [1, 50, 100][Int(random.next() % 3)]
            let outcome = try await admitting(retries: retries) {
                try await store.admit(AdmissionRequest(
                    endpoint: endpoint, circuitPolicy: CircuitPolicy(), probeToken: CircuitBreaker.newProbeToken(),
                    throttleLimit: ThrottleLimit(requests: 1_000_000, per: .seconds(60)),
                    quota: QuotaReservationRequest(
                        bucket: "fleet", endpoint: endpoint, cost: cost, configuredLimit: limit,
                        at: Date().addingTimeInterval(offset)
                    )
                ))
            }
            if case .admitted(_, _, let charge) = outcome {
                granted += 1
                FileHandle.standardOutput.write(Data("CHARGED \(charge.reservationID) \(charge.cost)\n".utf8))
            } else {
                refused += 1
            }
            if pauseMs > 0 { try await Task.sleep(for: .milliseconds(pauseMs)) }
        }
        FileHandle.standardOutput.write(Data("DONE granted \(granted) refused \(refused)\n".utf8))
        await store.shutdown()
    }

    private static func admitting(
        retries: Int, _ admission: () async throws -> AdmissionOutcome
    ) async throws -> AdmissionOutcome {
        var failures = 0
        while true {
            do {
                return try await admission()
            } catch let error as PostgresStoreError where failures < retries {
                failures += 1
                let line = "\(error)".replacingOccurrences(of: "\n", with: " ")
                FileHandle.standardOutput.write(Data("FAILED \(line)\n".utf8))
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
