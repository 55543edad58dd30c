import Foundation
import Tollgate

/// `contention-admit PATH NOW_MS LIMIT TASKS COUNT`: TASKS concurrent tasks in this process each
/// make COUNT admissions of one unit against the one bucket `contended` of LIMIT units, at the
/// fixed time NOW_MS, through ``SQLiteStore/admit(_:)``.
///
/// Prints `admitted A refused R busy B errors E`, then `ids` and the admitted reservation ids,
/// comma-separated. `busy` counts every `StoreError.locked` (SQLite's busy timeout) that reached this caller
/// (there should be none: the busy timeout waits them out); `errors` counts any other error, and
/// each one is described on standard error.
enum ContentionJob {
    static let bucket = "contended"
    static let endpoint = "contended.list"

    static func run(_ arguments: [String]) async throws {
        guard arguments.count == 5, let nowMs = Int64(arguments[1]), let limit = Int(arguments[2]),
              let tasks = Int(arguments[3]), let count = Int(arguments[4])
        else {
            throw StoreRefusal.invalidArgument("contention-admit PATH NOW_MS LIMIT TASKS COUNT")
        }
        let store = try SQLiteStore(path: arguments[0])
        let now = Date(timeIntervalSince1970: TimeInterval(nowMs) / 1000)
        let tallies = await withTaskGroup(of: Tally.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var tally = Tally()
                    for index in 0..<count {
                        do {
                            let outcome = try await store.admit(AdmissionRequest(
                                endpoint: endpoint, circuitPolicy: CircuitPolicy(),
                                probeToken: "\(ProcessInfo.processInfo.processIdentifier)-\(task)-\(index)",
                                throttleLimit: ThrottleLimit(requests: 1_000_000, per: .seconds(60)),
                                quota: QuotaReservationRequest(bucket: bucket, endpoint: endpoint, cost: 1,
                                                               configuredLimit: limit, at: now)
                            ))
                            switch outcome {
                            case .admitted(_, _, let charge): tally.ids.append(charge.reservationID)
                            case .refusedByQuota: tally.refused += 1
                            case .refusedByCircuit, .throttled: tally.errors += 1
                            }
                        } catch let error as StoreError where error.isLocked {
                            tally.busy += 1
                            FileHandle.standardError.write(Data("busy: \(error)\n".utf8))
                        } catch {
                            tally.errors += 1
                            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                        }
                    }
                    return tally
                }
            }
            var all: [Tally] = []
            for await tally in group { all.append(tally) }
            return all
        }
        let ids = tallies.flatMap(\.ids)
        print("admitted \(ids.count) refused \(tallies.map(\.refused).reduce(0, +)) "
              + "busy \(tallies.map(\.busy).reduce(0, +)) errors \(tallies.map(\.errors).reduce(0, +))")
        print("ids " + ids.map(String.init).joined(separator: ","))
    }

    private struct Tally: Sendable {
        var ids: [Int64] = []
        var refused = 0
        var busy = 0
        var errors = 0
    }
}
