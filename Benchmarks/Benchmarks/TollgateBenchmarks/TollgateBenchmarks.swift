// The scenarios under package-benchmark: `swift package --disable-sandbox benchmark` in
// Benchmarks/. compare.sh runs the same scenarios through the `tollgate-bench` harness instead,
// beside the C floor and requests-cache, and prints the ratios; these give the distributions and
// the allocation counts.
import Benchmark
import BenchmarkScenarios
import Foundation
import Synchronization
import TollgateCore
import TollgateSQLite

/// A fresh file for each benchmark, in a folder of this process's own under the temporary directory.
func temporaryFile(_ name: String) -> String {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tollgate-benchmarks-\(ProcessInfo.processInfo.processIdentifier)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
}

/// A scenario built once, in a benchmark's setup hook, and used by every iteration: opening a
/// store and preparing its statements is not what is measured.
final class Prepared<Scenario: Sendable>: Sendable {
    private let scenario = Mutex<Scenario?>(nil)
    private let make: @Sendable () async throws -> Scenario

    init(_ make: @escaping @Sendable () async throws -> Scenario) { self.make = make }

    func setUp() async throws {
        let made = try await make()
        scenario.withLock { $0 = made }
    }

    var value: Scenario {
        get throws {
            guard let value = scenario.withLock({ $0 }) else { throw BenchmarkFailure("not set up") }
            return value
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .microseconds,
        warmupIterations: 100,
        maxDuration: .seconds(5),
        maxIterations: 20_000
    )

    let admission = Prepared { try AdmissionScenario(path: temporaryFile("admission")) }
    Benchmark("Admission (admit: circuit + throttle + quota, one transaction)", closure: { benchmark async throws in
        let scenario = try admission.value
        for _ in benchmark.scaledIterations { try await scenario.admit() }
    }, setup: { try await admission.setUp() })

    Benchmark("Admission + settlement", closure: { benchmark async throws in
        let scenario = try admission.value
        for _ in benchmark.scaledIterations { try await scenario.settle(reservationID: try await scenario.admit()) }
    }, setup: { try await admission.setUp() })

    let cache = Prepared {
        let scenario = try await CacheScenario(path: temporaryFile("cache"), maxEntries: 1000)
        try await scenario.fillThroughService(1000 - CacheScenario.hotEntries)
        return scenario
    }
    let counter = Atomic<Int>(0)
    Benchmark("Cache hit (10 KiB, fresh)", closure: { benchmark async throws in
        let scenario = try cache.value
        for _ in benchmark.scaledIterations { try await scenario.hit(counter.add(1, ordering: .relaxed).newValue) }
    }, setup: { try await cache.setUp() })

    Benchmark("Cache store (10 KiB, at capacity, evicting)", closure: { benchmark async throws in
        let scenario = try cache.value
        for _ in benchmark.scaledIterations { try await scenario.store(counter.add(1, ordering: .relaxed).newValue) }
    }, setup: { try await cache.setUp() })

    for entries in [1_000, 100_000] {
        let scaled = Prepared {
            let path = temporaryFile("scale-\(entries)")
            try CacheFill.fill(try SQLiteStore(path: path), count: entries)
            return try await CacheScenario(path: path, maxEntries: entries + CacheScenario.hotEntries)
        }
        Benchmark("Scale \(entries): hit", closure: { benchmark async throws in
            let scenario = try scaled.value
            for _ in benchmark.scaledIterations { try await scenario.hit(counter.add(1, ordering: .relaxed).newValue) }
        }, setup: { try await scaled.setUp() })
        Benchmark("Scale \(entries): store", closure: { benchmark async throws in
            let scenario = try scaled.value
            for _ in benchmark.scaledIterations { try await scenario.store(counter.add(1, ordering: .relaxed).newValue) }
        }, setup: { try await scaled.setUp() })
    }

    let endToEnd = Prepared { try await EndToEndScenario(path: temporaryFile("e2e")) }
    Benchmark("End to end: 304 through the gate", closure: { benchmark async throws in
        let scenario = try endToEnd.value
        for _ in benchmark.scaledIterations { try await scenario.throughGate() }
    }, setup: { try await endToEnd.setUp() }, teardown: { try await endToEnd.value.stop() })

    Benchmark("End to end: 304 through the bare transport", closure: { benchmark async throws in
        let scenario = try endToEnd.value
        for _ in benchmark.scaledIterations { try await scenario.bare() }
    }, setup: { try await endToEnd.setUp() }, teardown: { try await endToEnd.value.stop() })
}
