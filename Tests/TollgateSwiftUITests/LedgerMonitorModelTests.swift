import Foundation
import Testing
import Tollgate
import TollgateSwiftUI
import TollgateTestSupport

/// The ledger monitor waits on the clock it is given: each test steps a manual clock and lets the
/// model's task run between steps, so nothing here waits for real time to pass.
@Suite("Ledger monitor: the terminal dashboard's snapshot, kept current across processes", .serialized)
@MainActor
struct LedgerMonitorModelTests {
    /// Lets the model's task reach its next sleep on `clock` (or give up after `attempts` yields).
    private func settle(_ clock: ManualClock, sleepers: Int = 1, attempts: Int = 2_000) async {
        for _ in 0..<attempts where clock.sleeperCount < sleepers { await Task.yield() }
    }

    /// Advances `clock` by `step` once the model sleeps on it, then lets the model act on it.
    private func step(_ clock: ManualClock, by step: Duration) async {
        await settle(clock)
        clock.advance(by: step)
        for _ in 0..<50 { await Task.yield() }
        await settle(clock)
    }

    @Test("a charge made by another process on the same file shows at the next poll after the minimum interval")
    func seesAnotherProcess() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("ledger.sqlite")
        let store = try SQLiteStore(path: path)
        let clock = ManualClock(now: Date())
        let model = LedgerMonitorModel(store: store, minimumInterval: .milliseconds(300), pollInterval: .milliseconds(50),
                                       clock: clock)
        let running = Task { await model.run() }
        defer { running.cancel() }
        await settle(clock)
        #expect(model.refreshCount == 1)
        #expect(model.snapshot?.buckets.contains { $0.bucket == "shared" } != true)

        // Another process charges three units (the worker's bucket is "shared").
        let nowMs = String(Int64(clock.now().timeIntervalSince1970 * 1000))
        let worker = try await chargeInAnotherProcess(path: path, nowMs: nowMs)
        #expect(worker.first?.status == 0, "\(worker.first?.stderr ?? "")")
        // Polls inside the minimum interval see the change but do not read yet.
        for _ in 0..<5 { await step(clock, by: .milliseconds(50)) }
        #expect(model.refreshCount == 1, "read again before the minimum interval had passed")
        // The next polls, past it: one read, which sees the other process's charges.
        await step(clock, by: .milliseconds(50))
        await step(clock, by: .milliseconds(50))
        #expect(model.refreshCount == 2)
        #expect(model.snapshot?.buckets.first { $0.bucket == "shared" }?.used == 3)
    }

    @Test("however often the store changes, it is read no more than once per minimum interval")
    func rateLimited() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
        let clock = ManualClock(now: Date())
        let ledger = try QuotaLedger(storage: store, clock: clock)
        let model = LedgerMonitorModel(store: store, minimumInterval: .milliseconds(400), pollInterval: .milliseconds(20),
                                       clock: clock)
        let running = Task { await model.run() }
        defer { running.cancel() }
        // A charge every poll for 60 polls (1.2 s): at most one read per 400 ms, plus the first.
        for _ in 0..<60 {
            _ = try await ledger.reserve(endpoint: "videos.list")
            await step(clock, by: .milliseconds(20))
        }
        #expect(model.refreshCount >= 3, "it did refresh on changes")
        #expect(model.refreshCount <= 1 + 1_200 / 400, "\(model.refreshCount) reads in 1.2 s")
    }

    @Test("a store that does not change is not read again")
    func quietStoreNotReread() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
        let clock = ManualClock(now: Date())
        let model = LedgerMonitorModel(store: store, minimumInterval: .milliseconds(50), pollInterval: .milliseconds(10),
                                       clock: clock)
        let running = Task { await model.run() }
        defer { running.cancel() }
        for _ in 0..<50 { await step(clock, by: .milliseconds(10)) }
        #expect(model.refreshCount == 1)
    }

    @Test("a store without a change mark is read every minimum interval")
    func storeWithoutMarkPolled() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("ledger.sqlite"))
        let clock = ManualClock(now: Date())
        let model = LedgerMonitorModel(storage: store, minimumInterval: .milliseconds(100), pollInterval: .milliseconds(100),
                                       clock: clock)
        let running = Task { await model.run() }
        defer { running.cancel() }
        for _ in 0..<4 { await step(clock, by: .milliseconds(100)) }
        #expect(model.refreshCount == 5)
    }
}

/// Three one-unit charges in the "shared" bucket, by a separate `TollgateWorker` process.
private func chargeInAnotherProcess(path: String, nowMs: String) async throws -> [WorkerProcess.Result] {
    try await WorkerProcess.runConcurrently("quota-reserve", count: 1) { _ in [path, nowMs, "100", "1", "3", "0"] }
}
