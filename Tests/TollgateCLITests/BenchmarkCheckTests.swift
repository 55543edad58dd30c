import Foundation
import Testing
import TollgateTestSupport

/// `Benchmarks/compare.sh --check` is the guard each change meets before it lands: its report,
/// given one run's RESULT lines, must pass a run like the baseline and fail one whose ratio drifted.
/// The benchmarks themselves are not run here (they are timed in Benchmarks/, never in tests):
/// the report reads a run's results as compare.sh would write them.
@Suite("compare.sh --check: ratios guarded against Benchmarks/baseline.json")
struct BenchmarkCheckTests {
    static let benchmarks = ReadmeTests.root.appending(path: "Benchmarks")

    /// A run's RESULT lines, with the admission `admissionFactor` times the usual.
    static func results(admissionFactor: Double) -> String {
        let values: [(String, Double)] = [
            ("floor.txn", 10_000), ("tollgate.admission", 15_000 * admissionFactor), ("floor.admission_statements", 9_000),
            ("floor.design_admission", 10_000), ("floor.blob", 3_000), ("tollgate.hit.main_actor", 5_000),
            ("tollgate.hit.nonisolated", 5_100), ("peer.read", 60_000), ("tollgate.gate_hit.main_actor", 9_000),
            ("tollgate.gate_hit.nonisolated", 9_100), ("floor.upsert", 30_000), ("tollgate.store", 45_000),
            ("floor.store_statements", 35_000), ("floor.design_store", 30_000), ("peer.store", 400_000),
            ("scale.1000.hit", 5_000), ("scale.1000.store", 40_000), ("scale.1000.peak_rss_bytes", 20_000_000),
            ("contention.single_ops_per_s", 20_000), ("contention.aggregate_ops_per_s", 19_000),
            ("floor.contention.single_ops_per_s", 40_000), ("floor.contention.aggregate_ops_per_s", 38_000),
            ("contention.busy", 0), ("floor.contention.busy", 0), ("e2e.gate", 1_300_000), ("e2e.bare", 1_160_000),
            ("e2e.floor_path", 1_200_000),
        ]
        return values.map { "RESULT \($0.0) \($0.1)" }.joined(separator: "\n") + "\n"
    }

    /// Runs the report on `results` in `directory`, with `options`.
    static func report(
        _ results: String, in directory: TemporaryDirectory, maxEntries: Int = 1000, _ options: [String]
    ) throws -> CommandResult {
        let file = directory.path("results.txt")
        try results.write(toFile: file, atomically: true, encoding: .utf8)
        return try CommandRunner.run(URL(fileURLWithPath: "/usr/bin/env"),
                                     ["python3", benchmarks.appending(path: "report.py").path, file, "\(maxEntries)"] + options)
    }

    @Test("a scale ratio is held to its goal of 1.3×, not to the baseline: 25 % over a baseline of 1.0 passes, 1.4× fails")
    func scaleHeldToGoal() throws {
        let directory = try TemporaryDirectory()
        let baseline = directory.path("baseline.json")
        func run(storeAt100k factor: Double) -> String {
            Self.results(admissionFactor: 1) + "RESULT scale.100000.hit 5000\nRESULT scale.100000.store \(40_000 * factor)\n"
        }
        let written = try Self.report(run(storeAt100k: 1), in: directory, maxEntries: 100_000, ["--write-baseline", baseline])
        #expect(written.status == 0, "\(written.stderr)")
        let wider = try Self.report(run(storeAt100k: 1.25), in: directory, maxEntries: 100_000, ["--check", baseline])
        #expect(wider.status == 0, "within the goal: \(wider.stdout)")
        let over = try Self.report(run(storeAt100k: 1.4), in: directory, maxEntries: 100_000, ["--check", baseline])
        #expect(over.status == 1)
        #expect(over.stderr.contains("scale.store.100000/1000"), "\(over.stderr)")
    }

    @Test("contention is held to its goal of 0.8×, not to the baseline: 0.81× over a baseline of 0.95× passes, 0.75× fails")
    func contentionHeldToGoal() throws {
        let directory = try TemporaryDirectory()
        let baseline = directory.path("baseline.json")
        func run(aggregate: Int) -> String {
            Self.results(admissionFactor: 1).replacingOccurrences(
                of: "RESULT contention.aggregate_ops_per_s 19000.0", with: "RESULT contention.aggregate_ops_per_s \(aggregate)"
            )
        }
        #expect(run(aggregate: 1) != Self.results(admissionFactor: 1), "the run's contention line is the one replaced")
        let written = try Self.report(Self.results(admissionFactor: 1), in: directory, ["--write-baseline", baseline])
        #expect(written.status == 0, "\(written.stderr)")
        let noisy = try Self.report(run(aggregate: 16_200), in: directory, ["--check", baseline])
        #expect(noisy.status == 0, "17 % over the baseline, within the goal: \(noisy.stdout)")
        let under = try Self.report(run(aggregate: 15_000), in: directory, ["--check", baseline])
        #expect(under.status == 1)
        #expect(under.stderr.contains("contention.one_process/four_processes"), "\(under.stderr)")
    }

    @Test("a run like the baseline passes; one whose admission ratio is 20 % worse fails, naming the row")
    func guardsRatios() throws {
        let directory = try TemporaryDirectory()
        let baseline = directory.path("baseline.json")
        let written = try Self.report(Self.results(admissionFactor: 1), in: directory, ["--write-baseline", baseline])
        #expect(written.status == 0, "\(written.stderr)")
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: baseline))) as? [String: Double]
        #expect(stored?["admission/bare_tx"] == 1.5)
        #expect(stored?["e2e.gate/bare"] != nil)

        let same = try Self.report(Self.results(admissionFactor: 1.05), in: directory, ["--check", baseline])
        #expect(same.status == 0, "5 % is within the tolerance: \(same.stdout)")
        let slower = try Self.report(Self.results(admissionFactor: 1.2), in: directory, ["--check", baseline])
        #expect(slower.status == 1)
        #expect(slower.stderr.contains("admission/bare_tx"), "\(slower.stderr)")
        #expect(!slower.stderr.contains("store/blob_upsert"), "only the rows that drifted are named")
    }

    @Test("the committed baseline.json names ratios the report measures")
    func committedBaseline() throws {
        let data = try Data(contentsOf: Self.benchmarks.appending(path: "baseline.json"))
        let baseline = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Double])
        for key in ["admission/bare_tx", "admission/design_admission", "store/design_store", "gate_hit.main_actor/blob_read",
                    "e2e.gate/bare"] {
            #expect(baseline[key] != nil, "\(key) is not guarded")
        }
    }
}
