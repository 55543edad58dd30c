import Foundation
import Synchronization
import Testing
import TollgateCore
import TollgatePostgres
import TollgateSQLite
import TollgateTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fleet as it runs: separate worker processes (`TollgateWorker fleet-admit`), each with its own
/// clock up to ten minutes off, admitting charges of 1, 50 or 100 units against one bucket of one
/// PostgreSQL database.
@Suite(
    "A fleet of processes with skewed clocks on one PostgreSQL database",
    .enabled(if: PostgresTestDatabase.isConfigured, "TOLLGATE_POSTGRES_URL is not set"), .serialized
)
struct FleetSimulationTests {
    /// Each worker's clock offset, in seconds.
    static let offsets: [Double] = [-600, -300, -60, 0, 300, 600]

    @Test("six processes whose clocks disagree by up to 20 minutes never spend a unit over the limit, on one Pacific day")
    func skewedClocksNeverOverspend() async throws {
        try await PostgresTestDatabase.with { database in
            let limit = 1_500
            let results = try await WorkerProcess.runConcurrently("fleet-admit", count: Self.offsets.count) { index in
                [database.url, "w\(index)", "40", "\(Self.offsets[index])", "\(1_000 + index)", "\(limit)"]
            }
            #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
            let told = results.flatMap { Self.charges(in: $0.stdout) }
            let used = try await database.intValue("SELECT COALESCE(SUM(units), 0)::bigint FROM quota_usage WHERE bucket = 'fleet'") ?? -1
            let events = try await database.intValue(
                "SELECT COALESCE(SUM(units), 0)::bigint FROM quota_events WHERE bucket = 'fleet' AND kind IN ('charge', 'refund')"
            ) ?? -1
            // Demand (6 × 40 charges of 50 units on average) is eight times the limit.
            #expect(used <= limit)
            #expect(used > limit - 100)
            #expect(used == events)
            #expect(used == told.reduce(0) { $0 + $1.units })
            let days = try await database.intValue(
                "SELECT COUNT(DISTINCT pacific_date) FROM quota_events WHERE bucket = 'fleet' AND kind = 'charge'"
            )
            #expect(days == 1, "the database's clock decides the day, not each machine's")
        }
    }

    @Test("processes killed with SIGKILL mid-run lose no charge they were told of, and the ledger stays whole")
    func killedProcessesLoseNoCharge() async throws {
        try await PostgresTestDatabase.with { database in
            let workers = try (0..<4).map { index in
                try WorkerProcess.start("fleet-admit", [
                    database.url, "k\(index)", "1000000", "\(Self.offsets[index])", "\(2_000 + index)", "100000000",
                ])
            }
            // Each worker is killed once it has printed a few charges: mid-run, between or inside transactions.
            let outputs = try await withThrowingTaskGroup(of: String.self) { group in
                for (process, output, _) in workers {
                    group.addTask { try await Self.killAfterCharges(process, output, charges: 25) }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            for (process, _, _) in workers { #expect(process.terminationReason == .uncaughtSignal) }

            let told = outputs.flatMap { Self.charges(in: $0) }
            #expect(told.count >= 4 * 25)
            let ids = told.map { String($0.id) }.joined(separator: ",")
            let found = try await database.intValue(
                "SELECT COUNT(*) FROM quota_events WHERE kind = 'charge' AND id IN (\(ids))"
            )
            #expect(found == told.count, "a charge a worker printed is in the ledger")
            let used = try await database.intValue("SELECT COALESCE(SUM(units), 0)::bigint FROM quota_usage WHERE bucket = 'fleet'") ?? -1
            let events = try await database.intValue(
                "SELECT COALESCE(SUM(units), 0)::bigint FROM quota_events WHERE bucket = 'fleet' AND kind IN ('charge', 'refund')"
            ) ?? -1
            #expect(used == events, "totals equal the events after the kills")
            let toldUnits = told.reduce(0) { $0 + $1.units }
            // A worker may be killed after its commit and before its line: at most one charge each.
            #expect(used >= toldUnits)
            #expect(used <= toldUnits + 4 * 100)
        }
    }

    @Test("a server crash mid-run (pg_ctl restart -m immediate) loses no charge a worker was told of; workers that retry carry on",
          .enabled(if: ThrowawayCluster.isAvailable, "PostgreSQL's server (pg_ctl) is not installed"))
    func serverCrashLosesNoCharge() async throws {
        // Its own cluster: crashing the shared one would fail every other test using it.
        let cluster = try await offPool { try ThrowawayCluster.start() }
        defer { cluster.stop() }
        // 150 admissions 10 ms apart: a run of at least 1.5 s, which the crash lands in the middle of.
        let admissions = 150
        // However the run goes, no worker outlives the waits below: the test ends rather than hangs.
        let workers = try WatchedWorkers("fleet-admit", count: 3, killedAfter: 200) { index in
            [cluster.url, "c\(index)", "\(admissions)", "\(Self.offsets[index])", "\(3_000 + index)", "100000000", "100", "10"]
        }
        defer { workers.stopWatching() }
        let (outputs, errors) = (workers.outputs, workers.errors)

        let started = try await GrowingOutput.wait(for: outputs, seconds: 60) { Self.charges(in: $0).count >= 20 }
        #expect(started, "every worker charged 20 times before the crash")
        let serverStart = "SELECT floor(extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint"
        let location = try PostgresLocation(url: cluster.url)
        let startedBefore = try await PostgresTestDatabase.intValue(serverStart, on: location)
        try await offPool { try cluster.crash() }
        let startedAfter = try await PostgresTestDatabase.intValue(serverStart, on: location)
        #expect(startedAfter != startedBefore, "the server was restarted")
        // Read once the server is back: every worker was still running through the crash.
        #expect(outputs.allSatisfy { !$0.text.contains("DONE") }, "the crash came mid-run")

        let finished = try await GrowingOutput.wait(for: outputs, seconds: 120) { $0.contains("DONE") }
        #expect(finished, "every worker finished after the crash: \(outputs.map { $0.text.suffix(300) }) \(errors.map { $0.text.suffix(300) })")
        for process in workers.processes {
            try await offPool { process.waitUntilExit() }
            #expect(process.terminationStatus == 0)
        }
        let texts = outputs.map { $0.text }
        let told = texts.flatMap { Self.charges(in: $0) }
        let failed = texts.map { $0.split(separator: "\n").filter { $0.hasPrefix("FAILED ") }.count }.reduce(0, +)
        #expect(told.count == 3 * admissions, "each admission was granted in the end")

        let ids = told.map { String($0.id) }.joined(separator: ",")
        let found = try await PostgresTestDatabase.intValue(
            "SELECT COUNT(*) FROM quota_events WHERE kind = 'charge' AND id IN (\(ids))", on: location
        )
        #expect(found == told.count, "a charge a worker was told of survived the crash")
        let used = try await PostgresTestDatabase.intValue(
            "SELECT COALESCE(SUM(units), 0)::bigint FROM quota_usage WHERE bucket = 'fleet'", on: location
        ) ?? -1
        let events = try await PostgresTestDatabase.intValue(
            "SELECT COALESCE(SUM(units), 0)::bigint FROM quota_events WHERE bucket = 'fleet' AND kind IN ('charge', 'refund')",
            on: location
        ) ?? -1
        #expect(used == events, "totals equal the events after crash recovery")
        // An admission that failed may have committed before its answer was lost: charged, never told.
        let toldUnits = told.reduce(0) { $0 + $1.units }
        #expect(used >= toldUnits && used <= toldUnits + failed * 100, "used \(used), told \(toldUnits), failed \(failed)")
    }

    @Test("a circuit opened by one machine refuses on the others within a second, and when its open time is over exactly one machine of the fleet probes")
    func circuitAcrossProcesses() async throws {
        try await PostgresTestDatabase.with { database in
            let workers = try WatchedWorkers("fleet-circuit", count: 4, killedAfter: 90) { [database.url, "m\($0)", "6"] }
            defer { workers.stopWatching() }
            let (outputs, errors) = (workers.outputs, workers.errors)

            let running = try await GrowingOutput.wait(for: outputs, seconds: 30) { Self.answers(in: $0).count >= 10 }
            try #require(running, "every machine was admitted before the circuit opened: \(errors.map { $0.text.suffix(300) })")
            let store = try await PostgresStore(url: database.url, logger: PostgresTestDatabase.quietLogger)
            _ = try await store.forceOpenCircuit(
                endpoint: "fleet.shared", duration: .seconds(2), policy: FleetCircuitJobPolicy.policy, at: Date()
            )
            let opened = Int64((Date().timeIntervalSince1970 * 1000).rounded())
            await store.shutdown()

            let finished = try await GrowingOutput.wait(for: outputs, seconds: 60) { $0.contains("DONE") }
            #expect(finished, "\(errors.map { $0.text.suffix(300) })")
            let answers = outputs.map { Self.answers(in: $0.text) }
            for (machine, lines) in answers.enumerated() {
                #expect(lines.contains { $0.word == "refused" && $0.at <= opened + 1_000 }, "machine \(machine) refused within a second")
                #expect(!lines.contains { $0.word == "admitted" && $0.at > opened + 1_000 }, "machine \(machine) admitted nothing after")
            }
            let probes = answers.flatMap { $0 }.filter { $0.word == "probe" }
            #expect(probes.count == 1, "one probe in the whole fleet: \(probes)")
            #expect(probes.allSatisfy { $0.at >= opened + 1_500 }, "not before the open time was over")
        }
    }

    /// `<unix ms> <word> …` lines of `fleet-circuit`.
    static func answers(in output: String) -> [(at: Int64, word: String)] {
        output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let at = Int64(fields[0]) else { return nil }
            return (at, String(fields[1]))
        }
    }

    /// `CHARGED <id> <units>` lines; a line cut short by a kill is not one.
    static func charges(in output: String) -> [(id: Int64, units: Int)] {
        output.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "CHARGED", let id = Int64(fields[1]), let units = Int(fields[2]) else {
                return nil
            }
            return (id, units)
        }
    }

    /// Reads the worker's output until it has printed `charges` charges, kills it with SIGKILL,
    /// and returns everything it printed. Off the cooperative pool: the reads block.
    static func killAfterCharges(_ process: Process, _ output: Pipe, charges: Int) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let handle = output.fileHandleForReading
                var text = ""
                while Self.charges(in: text).count < charges {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    text += String(decoding: chunk, as: UTF8.self)
                }
                kill(process.processIdentifier, SIGKILL)
                text += String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                continuation.resume(returning: text)
            }
        }
    }
}

/// Worker processes started together, their output and errors read as they grow, each killed
/// (SIGKILL) if still running after a time limit, so a test of them ends rather than hangs.
struct WatchedWorkers {
    let processes: [Process]
    let outputs: [GrowingOutput]
    let errors: [GrowingOutput]
    private let watchdog: DispatchWorkItem

    init(_ job: String, count: Int, killedAfter seconds: Double, arguments: (Int) -> [String]) throws {
        let started = try (0..<count).map { try WorkerProcess.start(job, arguments($0)) }
        let processes = started.map(\.0)
        self.processes = processes
        outputs = started.map { GrowingOutput(reading: $0.1) }
        errors = started.map { GrowingOutput(reading: $0.2) }
        watchdog = DispatchWorkItem { for process in processes where process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
    }

    /// Cancels the time limit, once the test no longer waits for the workers.
    func stopWatching() {
        watchdog.cancel()
    }
}

/// A worker's standard output as it grows, read on a thread of its own until the worker closes it.
final class GrowingOutput: Sendable {
    private let collected = Mutex("")

    init(reading pipe: Pipe) {
        let handle = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                self.collected.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
    }

    var text: String { collected.withLock { $0 } }

    /// Waits until every output satisfies `condition`, or `seconds` pass.
    /// - Returns: Whether they all did in time.
    static func wait(
        for outputs: [GrowingOutput], seconds: Double, until condition: (String) -> Bool
    ) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if outputs.allSatisfy({ condition($0.text) }) { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return outputs.allSatisfy { condition($0.text) }
    }
}

/// The circuit policy the `fleet-circuit` workers use (Tests/TollgateWorker/FleetCircuitJob.swift).
enum FleetCircuitJobPolicy {
    static let policy = CircuitPolicy(failureThreshold: 3, openDuration: .seconds(2), probeLeaseDuration: .seconds(60))
}
