import Foundation
import Testing
import Tollgate
import TollgateDashboard
import TollgateTestSupport

@Suite("Debug dashboard model: the terminal dashboard's snapshot, kept current across processes", .serialized)
@MainActor
struct TollgateDashboardModelTests {
    /// Waits, polling, until `condition` holds or `limit` passes; returns how long it took.
    private func waitUntil(_ limit: Duration, _ condition: () -> Bool) async throws -> Duration? {
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < limit {
            if condition() { return clock.now - start }
            try await Task.sleep(for: .milliseconds(20))
        }
        return condition() ? clock.now - start : nil
    }

    @Test("a charge made by another process on the same file shows within the refresh bound")
    func seesAnotherProcess() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        let model = TollgateDashboardModel(store: store, minimumInterval: .milliseconds(300), pollInterval: .milliseconds(50))
        let running = Task { await model.run() }
        defer { running.cancel() }
        #expect(try await waitUntil(.seconds(5)) { model.snapshot != nil } != nil)
        #expect(model.snapshot?.buckets.contains { $0.bucket == "shared" } != true)

        // Another process charges three units (the worker's bucket is "shared").
        let nowMs = String(Int64(Date().timeIntervalSince1970 * 1000))
        let worker = try await chargeInAnotherProcess(path: path, nowMs: nowMs)
        #expect(worker.first?.status == 0, "\(worker.first?.stderr ?? "")")
        let seenAfter = try await waitUntil(.seconds(5)) {
            model.snapshot?.buckets.first { $0.bucket == "shared" }?.used == 3
        }
        let seen = try #require(seenAfter, "the model never showed the other process's charges")
        // The bound: one poll to notice, the minimum interval since the last read, one read.
        #expect(seen < .seconds(2), "seen after \(seen)")
    }

    @Test("however often the store changes, it is read no more than once per minimum interval")
    func rateLimited() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
        let ledger = try QuotaLedger(storage: store)
        let model = TollgateDashboardModel(store: store, minimumInterval: .milliseconds(400), pollInterval: .milliseconds(20))
        let clock = ContinuousClock()
        let start = clock.now
        let running = Task { await model.run() }
        for _ in 0..<60 {
            _ = try await ledger.reserve(endpoint: "videos.list")
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = clock.now - start
        running.cancel()
        let allowed = Int(elapsed / .milliseconds(400)) + 2
        #expect(model.refreshCount >= 2, "it did refresh on changes")
        #expect(model.refreshCount <= allowed, "\(model.refreshCount) reads in \(elapsed)")
    }

    @Test("a store that does not change is not read again")
    func quietStoreNotReread() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
        let model = TollgateDashboardModel(store: store, minimumInterval: .milliseconds(50), pollInterval: .milliseconds(10))
        let running = Task { await model.run() }
        try await Task.sleep(for: .milliseconds(500))
        running.cancel()
        #expect(model.refreshCount == 1)
    }
}

/// Three one-unit charges in the "shared" bucket, by a separate `TollgateWorker` process.
private func chargeInAnotherProcess(path: String, nowMs: String) async throws -> [WorkerProcess.Result] {
    try await WorkerProcess.runConcurrently("quota-reserve", count: 1) { _ in [path, nowMs, "100", "1", "3", "0"] }
}
