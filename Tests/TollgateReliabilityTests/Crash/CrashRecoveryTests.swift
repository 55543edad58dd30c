import Foundation
import Testing
import Tollgate
import TollgateTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("Crashes: a worker killed with SIGKILL at random moments")
struct CrashRecoveryTests {
    /// What a killed worker had printed: the charges and refunds it saw committed.
    struct Round: Sendable {
        var charges: [Int64] = []
        var refunds: [Int64] = []
        var sawReady = false
        var stderr = ""
    }

    @Test("after every kill the file is sound, the ledger adds up, no charge is lost, no circuit is half-written, and the next process goes on")
    func killedAtRandomMoments() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("crash.sqlite")
        _ = try SQLiteStore(path: path)
        var random = SeededGenerator(seed: 0x7011_6A7E_C4A5_0001)
        var printedCharges = Set<Int64>()
        var printedRefunds = Set<Int64>()
        var readyRounds = 0
        let kills = StressScale.current.kills

        for round in 0..<kills {
            // One kill in five lands while the process is still starting or opening the file.
            let beforeReady = Int.random(in: 0..<5, using: &random) == 0
            let delay = beforeReady ? Int.random(in: 0...40, using: &random) : Int.random(in: 0...60, using: &random)
            let seed = random.next()
            let result = try await onDispatchThread {
                try Self.runAndKill(path: path, seed: seed, waitForReady: !beforeReady, delayMilliseconds: delay)
            }
            if result.sawReady { readyRounds += 1 }
            printedCharges.formUnion(result.charges)
            printedRefunds.formUnion(result.refunds)

            let store = try SQLiteStore(path: path)
            #expect(try StoreInvariants.integrity(store) == "ok", "round \(round)")
            #expect(try await store.quotaLedgerDiscrepancies().isEmpty, "round \(round)")
            let charges = try StoreInvariants.eventIDs(store, kind: "charge")
            let lost = printedCharges.subtracting(charges)
            #expect(lost.isEmpty, "round \(round): charges printed as committed but missing: \(lost.sorted().prefix(10))")
            let refunds = try StoreInvariants.eventIDs(store, kind: "refund")
            #expect(printedRefunds.isSubset(of: refunds), "round \(round): refunds lost")
            #expect(try StoreInvariants.unmatchedRefunds(store) == 0, "round \(round)")
            #expect(try StoreInvariants.halfWrittenCircuits(store).isEmpty, "round \(round)")
            #expect(try StoreInvariants.cacheInconsistencies(store).isEmpty, "round \(round)")
            if !result.sawReady && !beforeReady {
                Issue.record("round \(round): the worker never opened the file: \(result.stderr)")
            }
        }
        #expect(readyRounds > kills / 2)
        #expect(printedCharges.count > kills, "the workload made progress between kills")

        // The next process opens the file and runs its workload to the end.
        let final = try await WorkerProcess.runConcurrently("crash-workload", count: 1) { _ in [path, "42", "60"] }
        #expect(final[0].status == 0, "\(final[0].stderr)")
        #expect(final[0].stdout.contains("done"))
        let store = try SQLiteStore(path: path)
        #expect(try StoreInvariants.integrity(store) == "ok")
        #expect(try await store.quotaLedgerDiscrepancies().isEmpty)
    }

    /// Starts a worker, waits for it to open the file (or not), lets it work for `delayMilliseconds`
    /// and kills it with SIGKILL; returns what it printed.
    static func runAndKill(path: String, seed: UInt64, waitForReady: Bool, delayMilliseconds: Int) throws -> Round {
        let (process, out, err) = try WorkerProcess.start("crash-workload", [path, "\(seed)", "0"])
        let reader = out.fileHandleForReading
        var output = Data()
        if waitForReady {
            let deadline = Date().addingTimeInterval(20)
            while !String(decoding: output, as: UTF8.self).contains("ready\n"), Date() < deadline {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                output.append(chunk)
            }
        }
        usleep(useconds_t(delayMilliseconds * 1000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        output.append(reader.readDataToEndOfFile())
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)

        var round = Round()
        round.stderr = errors
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            switch parts.first {
            case "ready": round.sawReady = true
            case "charge": if let id = parts.last.flatMap({ Int64($0) }) { round.charges.append(id) }
            case "refund": if let id = parts.last.flatMap({ Int64($0) }) { round.refunds.append(id) }
            default: break
            }
        }
        return round
    }
}
