// The scenarios under package-benchmark: `swift package benchmark` in Benchmarks/. compare.sh
// runs the same scenarios through the `tollgate-bench` harness instead, beside the C floor and
// requests-cache, and prints the ratios; these give the distributions and the allocation counts.
import Benchmark
import BenchmarkScenarios
import Foundation
import TollgateStore

/// A fresh file for each benchmark, in a folder removed by the operating system's temp cleanup.
func temporaryFile(_ name: String) -> String {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("tollgate-benchmarks-\(ProcessInfo.processInfo.processIdentifier)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent("\(name)-\(UUID().uuidString).sqlite").path
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .microseconds,
        warmupIterations: 100,
        maxDuration: .seconds(5),
        maxIterations: 20_000
    )

    Benchmark("Admission (admit: circuit + throttle + quota, one transaction)") { benchmark async throws in
        let scenario = try AdmissionScenario(path: temporaryFile("admission"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { try await scenario.admit() }
    }

    Benchmark("Admission + settlement") { benchmark async throws in
        let scenario = try AdmissionScenario(path: temporaryFile("settle"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await scenario.settle(reservationID: try await scenario.admit())
        }
    }

    Benchmark("Cache hit (10 KiB, fresh)") { benchmark async throws in
        let scenario = try await CacheScenario(path: temporaryFile("hit"), maxEntries: 1000)
        try await scenario.fillThroughService(1000 - CacheScenario.hotEntries)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { try await scenario.hit(index) }
    }

    Benchmark("Cache store (10 KiB, at capacity, evicting)") { benchmark async throws in
        let scenario = try await CacheScenario(path: temporaryFile("store"), maxEntries: 1000)
        try await scenario.fillThroughService(1000 - CacheScenario.hotEntries)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations { try await scenario.store(index) }
    }

    for entries in [1_000, 100_000] {
        Benchmark("Scale \(entries): hit") { benchmark async throws in
            let path = temporaryFile("scale-hit")
            try CacheFill.fill(try SQLiteStore(path: path), count: entries)
            let scenario = try await CacheScenario(path: path, maxEntries: entries + CacheScenario.hotEntries)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations { try await scenario.hit(index) }
        }
        Benchmark("Scale \(entries): store") { benchmark async throws in
            let path = temporaryFile("scale-store")
            try CacheFill.fill(try SQLiteStore(path: path), count: entries)
            let scenario = try await CacheScenario(path: path, maxEntries: entries + CacheScenario.hotEntries)
            benchmark.startMeasurement()
            for index in benchmark.scaledIterations { try await scenario.store(index) }
        }
    }

    Benchmark("End to end: 304 through the gate") { benchmark async throws in
        let scenario = try await EndToEndScenario(path: temporaryFile("e2e-gate"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { try await scenario.throughGate() }
        benchmark.stopMeasurement()
        await scenario.stop()
    }

    Benchmark("End to end: 304 through the bare transport") { benchmark async throws in
        let scenario = try await EndToEndScenario(path: temporaryFile("e2e-bare"))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { try await scenario.bare() }
        benchmark.stopMeasurement()
        await scenario.stop()
    }
}
