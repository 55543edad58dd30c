import Foundation
import Tollgate
import TollgatePostgres

/// `fleet-circuit URL WORKER SECONDS`: one machine of a fleet asking the shared circuit of the
/// endpoint `fleet.shared` for admission every 10 ms for SECONDS, on the PostgreSQL database at
/// URL. Prints one line per answer, `<unix ms> admitted|probe|refused <state>`, then `DONE`.
/// The circuit opens for 2 s and its half-open probe's lease lasts 60 s: nobody reports the
/// probe's answer, so after the one probe every machine is refused until the end.
enum FleetCircuitJob {
    static let policy = CircuitPolicy(failureThreshold: 3, openDuration: .seconds(2), probeLeaseDuration: .seconds(60))

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 3, let seconds = Double(arguments[2]) else {
            throw StoreRefusal.invalidArgument("fleet-circuit URL WORKER SECONDS")
        }
        let store = try await PostgresStore(url: arguments[0])
        let end = Date().addingTimeInterval(seconds)
        var lines: [String] = []
        var sequence = 0
        while Date() < end {
            sequence += 1
            let outcome = try await store.admit(AdmissionRequest(
                endpoint: "fleet.shared", circuitPolicy: policy, probeToken: "\(arguments[1])-\(sequence)",
                throttleLimit: ThrottleLimit(requests: 1_000_000, per: .seconds(60)),
                quota: QuotaReservationRequest(bucket: "circuit", endpoint: "fleet.shared", cost: 0,
                                               configuredLimit: 1_000_000, at: Date())
            ))
            let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            switch outcome {
            case .admitted(let circuit, _, _): lines.append("\(now) \(circuit.decision.probe == nil ? "admitted" : "probe")")
            case .refusedByCircuit(let circuit): lines.append("\(now) refused \(circuit.record.state.rawValue)")
            default: lines.append("\(now) other")
            }
            FileHandle.standardOutput.write(Data((lines.last! + "\n").utf8))
            try await Task.sleep(for: .milliseconds(10))
        }
        FileHandle.standardOutput.write(Data("DONE\n".utf8))
        await store.shutdown()
    }
}
