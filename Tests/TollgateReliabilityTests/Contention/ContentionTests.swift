import Foundation
import Testing
import Tollgate
import TollgateTestSupport

@Suite("Contention: 8 processes × 4 tasks against one bucket")
struct ContentionTests {
    @Test("never a unit over the limit, granted reservations equal the charge events, and no caller sees SQLITE_BUSY")
    func eightProcessesFourTasks() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("contention.sqlite")
        _ = try SQLiteStore(path: path)
        let processes = 8
        let tasks = 4
        let perTask = StressScale.current.contentionAdmissionsPerTask
        let attempts = processes * tasks * perTask
        let limit = attempts * 5 / 8  // demand exceeds the budget, so the limit is reached
        let now = utc("2027-03-10T18:00:00Z")
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)

        let results = try await WorkerProcess.runConcurrently("contention-admit", count: processes) { _ in
            [path, "\(nowMs)", "\(limit)", "\(tasks)", "\(perTask)"]
        }
        var admitted = 0
        var refused = 0
        var busy = 0
        var errors = 0
        var ids: [Int64] = []
        for result in results {
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n")
            let counts = lines.first?.split(separator: " ").compactMap { Int($0) } ?? []
            try #require(counts.count == 4, "unexpected output: \(result.stdout) \(result.stderr)")
            admitted += counts[0]
            refused += counts[1]
            busy += counts[2]
            errors += counts[3]
            if let idLine = lines.dropFirst().first {
                ids += idLine.dropFirst(4).split(separator: ",").compactMap { Int64($0) }
            }
        }
        #expect(busy == 0, "SQLITE_BUSY reached a caller")
        #expect(errors == 0)
        #expect(admitted + refused == attempts)
        #expect(admitted == limit, "exactly the budget is granted, never a unit more")
        #expect(Set(ids).count == ids.count && ids.count == admitted)

        let store = try SQLiteStore(path: path)
        let charges = try StoreInvariants.eventIDs(store, kind: "charge")
        #expect(charges == Set(ids), "granted reservations equal the charge events")
        let usage = try await store.quotaUsage(on: PacificDay(containing: now))
        #expect(usage.map(\.units).reduce(0, +) == limit)
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
        #expect(try StoreInvariants.integrity(store) == "ok")
    }
}
