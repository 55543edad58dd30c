import Foundation
import Testing
import TollgateTestSupport
import Tollgate

@Suite("Worker processes")
struct WorkerProcessTests {
    @Test("four worker processes open one new file at once; each migration is applied by exactly one")
    func workersMigrateOnce() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("workers.sqlite")
        let results = try await WorkerProcess.runConcurrently("migrate", count: 4) { _ in [path] }
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let applied = results.flatMap { result in
            result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                .split(separator: " ").dropFirst().flatMap { $0.split(separator: ",") }.map(String.init)
        }
        #expect(applied.sorted() == Migration.all.map { String($0.version) })
    }
}
