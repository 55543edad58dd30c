import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Circuit breaker across processes")
struct CircuitProbeProcessTests {
    @Test("two processes ask a circuit whose open-until has passed: exactly one gets the probe")
    func exactlyOneProbe() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        let opened = Date(timeIntervalSince1970: 1_800_000_000)
        let store = try SQLiteStore(path: path)
        let breaker = CircuitBreaker(storage: store, clock: ManualClock(now: opened))
        for _ in 0..<5 { try await breaker.recordResult(endpoint: "/api/streams", outcome: .failure) }
        #expect(try await store.circuit(endpoint: "/api/streams")?.state == .open)

        // Both workers open the store, say they are ready, and are released together.
        let probeTime = String(Int64(opened.addingTimeInterval(61).timeIntervalSince1970 * 1000))
        let goPath = directory.path("go")
        let readyPaths = (0..<2).map { directory.path("ready-\($0)") }
        // A thread, not a task: the runner blocks cooperative threads while it reads the pipes.
        let release = Thread {
            let deadline = Date().addingTimeInterval(30)
            while !readyPaths.allSatisfy(FileManager.default.fileExists(atPath:)) && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.002)
            }
            _ = FileManager.default.createFile(atPath: goPath, contents: Data())
        }
        release.start()
        let results = try await WorkerProcess.runConcurrently("circuit-probe", count: 2) { index in
            [path, "/api/streams", probeTime, "5", readyPaths[index], goPath]
        }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")

        let answers = results.flatMap { $0.stdout.split(whereSeparator: \.isWhitespace).map(String.init) }
        #expect(answers.count == 10)
        let probes = answers.filter { $0.hasPrefix("probe:") }
        #expect(probes.count == 1, "\(answers)")
        #expect(answers.filter { $0 == "refused" }.count == 9)

        let record = try #require(try await store.circuit(endpoint: "/api/streams"))
        #expect(record.state == .halfOpen)
        #expect(probes == ["probe:" + (record.probeOwner ?? "none")])
        let history = try await store.circuitTransitions(endpoint: "/api/streams", limit: 10)
        #expect(history.filter { $0.to == .halfOpen }.count == 1)
    }
}
