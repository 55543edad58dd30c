// The harness `compare.sh` runs. Each subcommand measures one scenario in a process of its own and
// prints `RESULT <name> <value>` lines (nanoseconds unless the name says otherwise).
import BenchmarkScenarios
import Foundation
import Logging
import TollgateCore
import TollgateSQLite

// The services log state changes at info (a hit-rate line every 100 uses, each applied
// migration); a benchmark keeps warnings and errors only, as a busy production setup would.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

func result(_ name: String, _ value: some BinaryInteger) {
    print("RESULT \(name) \(value)")
}

func argument(_ index: Int) -> String {
    let arguments = CommandLine.arguments
    guard index < arguments.count else {
        FileHandle.standardError.write(Data("""
            usage: tollgate-bench admission|hit|store|e2e ITERATIONS FILE
                   tollgate-bench batching LOOKUPS IDS FILE
                   tollgate-bench fill ENTRIES FILE
                   tollgate-bench scale ENTRIES ITERATIONS FILE
                   tollgate-bench contention PROCESSES ITERATIONS FILE
                   tollgate-bench pg-admission CLIENTS SECONDS POSTGRES_URL
                   tollgate-bench pg-overspend CLIENTS LIMIT POSTGRES_URL
                   tollgate-bench pg-floor CLIENTS SECONDS POSTGRES_URL

            """.utf8))
        exit(64)
    }
    return arguments[index]
}

func integer(_ index: Int) -> Int {
    guard let value = Int(argument(index)) else {
        FileHandle.standardError.write(Data("tollgate-bench: not a number: \(argument(index))\n".utf8))
        exit(64)
    }
    return value
}

func seconds(_ index: Int) -> Double {
    guard let value = Double(argument(index)), value > 0 else {
        FileHandle.standardError.write(Data("tollgate-bench: not a number of seconds: \(argument(index))\n".utf8))
        exit(64)
    }
    return value
}

func warmup(_ iterations: Int) -> Int { max(iterations / 10, 10) }

/// Runs `iterations` admissions in this process once the monotonic clock reaches `start`.
func admitWorker(path: String, iterations: Int, start: UInt64) async throws {
    let scenario = try AdmissionScenario(path: path)
    while Timing.now < start { usleep(100) }
    let began = Timing.now
    var busy = 0
    var failures = 0
    for _ in 0..<iterations {
        do {
            try await scenario.admit()
        } catch let error as DatabaseError where error.isBusy {
            busy += 1
        } catch {
            failures += 1
            FileHandle.standardError.write(Data("worker: \(error)\n".utf8))
        }
    }
    print("WORKER \(began) \(Timing.now) \(iterations - busy - failures) \(busy) \(failures)")
}

/// Spawns `processes` workers that start together; returns admissions per second and BUSY count.
func contention(processes: Int, iterations: Int, path: String) throws -> (opsPerSecond: Double, busy: Int, failures: Int) {
    let start = Timing.now + 1_500_000_000 // time for every worker to open the store
    var workers: [(Process, Pipe)] = []
    for _ in 0..<processes {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["admit-worker", path, "\(iterations)", "\(start)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        workers.append((process, output))
    }
    var first = UInt64.max, last = UInt64.min, ops = 0, busy = 0, failures = 0
    for (process, output) in workers {
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("WORKER ") }) else {
            throw BenchmarkFailure("a worker printed no result: \(text)")
        }
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard fields.count == 5 else { throw BenchmarkFailure("bad worker line: \(line)") }
        first = min(first, fields[0])
        last = max(last, fields[1])
        ops += Int(fields[2])
        busy += Int(fields[3])
        failures += Int(fields[4])
    }
    return (Double(ops) / (Double(last - first) / 1e9), busy, failures)
}

let command = argument(1)
switch command {
case "admission":
    let iterations = integer(2)
    let scenario = try AdmissionScenario(path: argument(3))
    let admissions = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { _ in
        try await scenario.admit()
    }
    result("tollgate.admission", Timing.median(admissions))
    var settlements: [UInt64] = []
    let pairs = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { _ in
        let id = try await scenario.admit()
        let start = Timing.now
        try await scenario.settle(reservationID: id)
        settlements.append(Timing.now - start)
    }
    result("tollgate.admission_settle", Timing.median(pairs))
    result("tollgate.settle", Timing.median(settlements))

case "hit", "store":
    let iterations = integer(2)
    let scenario = try await CacheScenario(path: argument(3), maxEntries: 1000)
    try await scenario.fillThroughService(1000 - CacheScenario.hotEntries)
    if command == "hit" {
        // Both caller kinds, alternating, each through the cache alone and through the whole gate.
        for caller in CallerKind.allCases {
            let hits = try await caller.samples(iterations: iterations, warmup: warmup(iterations)) { index in
                try await scenario.hit(index)
            }
            result("tollgate.hit.\(caller.rawValue)", Timing.median(hits))
            let gateHits = try await caller.samples(iterations: iterations, warmup: warmup(iterations)) { index in
                try await scenario.gateHit(index)
            }
            result("tollgate.gate_hit.\(caller.rawValue)", Timing.median(gateHits))
        }
    } else {
        let samples = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { index in
            try await scenario.store(index)
        }
        result("tollgate.store", Timing.median(samples))
        let totals = try await scenario.cache.totals()
        guard totals.entries == 1000 else { throw BenchmarkFailure("capacity not kept: \(totals.entries) entries") }
    }

case "fill":
    let store = try SQLiteStore(path: argument(3))
    let start = Timing.now
    try CacheFill.fill(store, count: integer(2))
    print("INFO fill \(integer(2)) entries in \(Double(Timing.now - start) / 1e9) s")

case "scale":
    let entries = integer(2), iterations = integer(3)
    let scenario = try await CacheScenario(path: argument(4), maxEntries: entries + CacheScenario.hotEntries)
    let hits = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { index in
        try await scenario.hit(index)
    }
    let stores = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { index in
        try await scenario.store(index)
    }
    try await scenario.flush()
    let totals = try await scenario.cache.totals()
    guard totals.entries == entries + CacheScenario.hotEntries else {
        throw BenchmarkFailure("expected \(entries + CacheScenario.hotEntries) entries, found \(totals.entries)")
    }
    result("scale.\(entries).hit", Timing.median(hits))
    result("scale.\(entries).store", Timing.median(stores))
    result("scale.\(entries).peak_rss_bytes", ResidentMemory.peak)

case "admit-worker":
    try await admitWorker(path: argument(2), iterations: integer(3), start: UInt64(argument(4)) ?? 0)

case "contention":
    let processes = integer(2), iterations = integer(3), path = argument(4)
    _ = try AdmissionScenario(path: path) // create and migrate the file before the workers race
    let single = try contention(processes: 1, iterations: iterations, path: path)
    let shared = try contention(processes: processes, iterations: iterations, path: path)
    result("contention.single_ops_per_s", Int(single.opsPerSecond))
    result("contention.aggregate_ops_per_s", Int(shared.opsPerSecond))
    result("contention.busy", single.busy + shared.busy)
    result("contention.failures", single.failures + shared.failures)

case "e2e":
    let iterations = integer(2)
    let scenario = try await EndToEndScenario(path: argument(3))
    let floor = try EndToEndFloor(path: argument(3) + "-floor")
    var bare: [UInt64] = []
    var floorPath: [UInt64] = []
    var afterAnswer: [UInt64] = []
    var beforeExchange: [UInt64] = [], exchange: [UInt64] = [], afterExchange: [UInt64] = []
    // Interleaved, so all three see the same machine. The gate's writes after the answer (a 304's
    // revision and settlement) are waited for before the bare request, untimed, so they never run
    // during it: the bare transport is timed on an idle process, the gate up to its answer.
    let gated = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { index in
        let gateStart = Timing.now
        try await scenario.throughGate()
        let flushed = Timing.now
        let (sent, answered) = (scenario.timed.started.load(ordering: .relaxed), scenario.timed.ended.load(ordering: .relaxed))
        try await scenario.gate.flush()
        let start = Timing.now
        try await scenario.bare()
        let floorStart = Timing.now
        try floor.pathWork()
        try await scenario.bare()
        if index >= warmup(iterations) {
            bare.append(floorStart - start)
            floorPath.append(Timing.now - floorStart)
            afterAnswer.append(start - flushed)
            beforeExchange.append(sent - gateStart)
            exchange.append(answered - sent)
            afterExchange.append(flushed - answered)
        }
    }
    // `gated` timed all of it; take the flush, the bare request and the floor's out.
    let gateOnly = zip(zip(gated, zip(bare, floorPath)), afterAnswer).map { $0.0 - $0.1.0 - $0.1.1 - $1 }
    result("e2e.gate", Timing.median(gateOnly))
    result("e2e.bare", Timing.median(bare))
    result("e2e.floor_path", Timing.median(floorPath))
    print("INFO e2e: through the gate, medians: \(Timing.median(beforeExchange) / 1000) µs before the exchange, "
        + "\(Timing.median(exchange) / 1000) µs in it (the transport), \(Timing.median(afterExchange) / 1000) µs after it")
    print("INFO e2e: the write after the answer, waited for by Gate.flush(): median \(Timing.median(afterAnswer) / 1000) µs")
    // A caller that sends its next request as soon as it has an answer: each request also meets
    // what is left of the previous one's write after the answer (its admission waits for it).
    try await scenario.gate.flush()
    let backToBack = try await Timing.samples(iterations: iterations, warmup: warmup(iterations)) { _ in
        try await scenario.throughGate()
    }
    result("e2e.gate_back_to_back", Timing.median(backToBack))
    await scenario.stop()

case "batching":
    // Counts, not times: LOOKUPS single-ID lookups over IDS IDs, in waves of 50 at once, with the
    // YouTube preset's batching and without it, side by side.
    let (lookups, ids) = (integer(2), integer(3))
    let without = try await BatchingScenario.run(batching: false, lookups: lookups, ids: ids, wave: 50,
                                                 path: argument(4) + "-without")
    let with = try await BatchingScenario.run(batching: true, lookups: lookups, ids: ids, wave: 50,
                                              path: argument(4) + "-with")
    for (name, spent) in [("without", without), ("with", with)] {
        result("batching.\(name).upstream_calls", spent.upstreamCalls)
        result("batching.\(name).units", spent.units)
        result("batching.\(name).median_lookup", spent.medianLookup)
    }
    func ratio(_ with: Int, _ without: Int) -> String {
        without == 0 ? "-" : String(format: "%.3f", Double(with) / Double(without))
    }
    let rows = [("", "without batching", "with batching", "ratio (with/without)"),
                ("upstream calls", "\(without.upstreamCalls)", "\(with.upstreamCalls)", ratio(with.upstreamCalls, without.upstreamCalls)),
                ("units (ledger)", "\(without.units)", "\(with.units)", ratio(with.units, without.units)),
                ("units (API's count)", "\(without.apiUnits)", "\(with.apiUnits)", ratio(with.apiUnits, without.apiUnits)),
                ("median lookup", "\(without.medianLookup / 1000) µs", "\(with.medianLookup / 1000) µs",
                 ratio(Int(with.medianLookup), Int(without.medianLookup)))]
    print("INFO batching: \(lookups) single-ID videos.list lookups over \(ids) IDs, 50 at a time, answers fresh for 60 s")
    for row in rows {
        print("INFO " + row.0.padding(toLength: 22, withPad: " ", startingAt: 0)
              + row.1.padding(toLength: 18, withPad: " ", startingAt: 0)
              + row.2.padding(toLength: 15, withPad: " ", startingAt: 0) + row.3)
    }

case "pg-admission":
    // One process (one machine of a fleet, with its pool) and CLIENTS concurrent callers admitting
    // 1-unit charges against one hot bucket, for SECONDS after a warm-up that opens the pool.
    let clients = integer(2), duration = seconds(3)
    let scenario = try await PostgresAdmissionScenario(
        url: argument(4), connections: clients, bucket: "bench-\(getpid())-c\(clients)", limit: 1_000_000_000
    )
    let nanoseconds = UInt64(duration * 1e9)
    let run = try await ConcurrentClients.timed(
        clients: clients, warmup: min(UInt64(1_000_000_000), nanoseconds / 4), duration: nanoseconds
    ) { try await scenario.admit() }
    let ledger = try await scenario.ledger()
    await scenario.shutdown()
    print("INFO pg-admission \(clients) clients: \(run.latencies.count) timed admissions, \(run.admitted) in all; "
        + "ledger: used \(ledger.used) of \(ledger.limit), usage \(ledger.usageUnits) units in \(ledger.usageCalls) calls, "
        + "\(ledger.discrepancies) discrepancies")
    guard run.refused == 0, ledger.used == run.admitted, ledger.usageUnits == run.admitted,
          ledger.usageCalls == run.admitted, ledger.discrepancies == 0 else {
        throw BenchmarkFailure("the ledger does not match the admissions: \(run.admitted) admitted, \(ledger)")
    }
    result("pg.tollgate.c\(clients).ops_per_s", Int(run.perSecond))
    result("pg.tollgate.c\(clients).p50", run.percentile(0.50))
    result("pg.tollgate.c\(clients).p99", run.percentile(0.99))

case "pg-floor":
    // The bare one-row UPDATE … RETURNING through postgres-nio, timed exactly as pg-admission:
    // what the Swift client costs, beside pgbench's floor.
    let clients = integer(2), duration = seconds(3)
    let floor = try await PostgresFloorScenario(url: argument(4), connections: clients)
    let nanoseconds = UInt64(duration * 1e9)
    let run = try await ConcurrentClients.timed(
        clients: clients, warmup: min(UInt64(1_000_000_000), nanoseconds / 4), duration: nanoseconds
    ) { try await floor.update() }
    await floor.shutdown()
    result("pg.nio_floor.c\(clients).ops_per_s", Int(run.perSecond))
    result("pg.nio_floor.c\(clients).p50", run.percentile(0.50))
    result("pg.nio_floor.c\(clients).p99", run.percentile(0.99))

case "pg-overspend":
    // CLIENTS callers admit 1-unit charges against one bucket until the quota refuses each of
    // them; the store's own status, usage and ledger check must then show exactly LIMIT used.
    let clients = integer(2), limit = integer(3)
    let scenario = try await PostgresAdmissionScenario(
        url: argument(4), connections: clients, bucket: "bench-overspend-\(getpid())", limit: limit
    )
    let (admitted, refused) = try await ConcurrentClients.untilRefused(clients: clients) { try await scenario.admit() }
    let ledger = try await scenario.ledger()
    await scenario.shutdown()
    print("INFO pg-overspend \(clients) clients, limit \(limit): \(admitted) admitted, \(refused) refused; "
        + "ledger: used \(ledger.used) of \(ledger.limit), usage \(ledger.usageUnits) units in \(ledger.usageCalls) calls, "
        + "\(ledger.discrepancies) discrepancies")
    let disagreements: [Bool] = [ledger.used != admitted, ledger.usageUnits != ledger.used, ledger.usageCalls != admitted]
    let mismatches: Int = disagreements.filter { $0 }.count + ledger.discrepancies
    result("pg.overspend.clients", clients)
    result("pg.overspend.limit", ledger.limit)
    result("pg.overspend.used", ledger.used)
    result("pg.overspend.admitted", admitted)
    result("pg.overspend.over_limit", max(0, ledger.used - ledger.limit))
    result("pg.overspend.ledger_mismatches", mismatches)

default:
    _ = argument(99)
}
