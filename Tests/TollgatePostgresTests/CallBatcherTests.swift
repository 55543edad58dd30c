import Synchronization
import Testing
import TollgateCore
@testable import TollgatePostgres

/// The client side of group commit: calls that arrive while one runs share the next batch.
@Suite("Call batcher")
struct CallBatcherTests {
    /// A batch runner that records every batch and holds the first one until released, so the
    /// test can line calls up behind it.
    private final class HeldRunner: Sendable {
        let batches = Mutex<[[Int]]>([])
        let cancelledWhileRunning = Mutex<[Bool]>([])
        private let release = Mutex<CheckedContinuation<Void, Never>?>(nil)
        private let holding = Mutex(true)

        func run(_ inputs: [Int]) async throws -> [Int] {
            batches.withLock { $0.append(inputs) }
            if holding.withLock({ $0 }) {
                await withCheckedContinuation { continuation in release.withLock { $0 = continuation } }
            }
            cancelledWhileRunning.withLock { $0.append(Task.isCancelled) }
            if inputs.contains(-1) { throw Refused() }
            return inputs.map { $0 * 10 }
        }

        /// Waits (bounded) until the first batch is held, then lets it and every later batch go.
        func releaseFirst() async throws {
            for _ in 0..<10_000 where release.withLock({ $0 == nil }) { await Task.yield() }
            holding.withLock { $0 = false }
            try #require(release.withLock { $0 }).resume()
        }
    }

    private struct Refused: Error {}

    private final class Recorder: Sendable {
        let batches = Mutex<[[Int]]>([])
    }

    private static func result(_ body: () async throws -> Int) async -> Result<Int, any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    private static func waitForWaiting(_ batcher: CallBatcher<String, Int, Int>, _ count: Int) async {
        for _ in 0..<100_000 where batcher.waitingCount("k") < count { await Task.yield() }
    }

    @Test("a lone call runs at once, alone")
    func loneCall() async throws {
        let batcher = CallBatcher<String, Int, Int>(maximumBatch: 8)
        let batches = Mutex<[[Int]]>([])
        let output = try await batcher.call(7, key: "k") { inputs in
            batches.withLock { $0.append(inputs) }
            return inputs.map { $0 + 1 }
        }
        #expect(output == 8)
        #expect(batches.withLock { $0 } == [[7]])
        #expect(batcher.waitingCount("k") == 0)
    }

    @Test("calls that arrive while a batch runs go together in the next one, at most maximumBatch at a time, each getting its own output")
    func callsWaitingShareTheNextBatch() async throws {
        let batcher = CallBatcher<String, Int, Int>(maximumBatch: 3)
        let runner = HeldRunner()
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            group.addTask { (1, try await batcher.call(1, key: "k", run: runner.run)) }
            for _ in 0..<10_000 where runner.batches.withLock({ $0.isEmpty }) { await Task.yield() }
            for input in 2...6 {
                group.addTask { (input, try await batcher.call(input, key: "k", run: runner.run)) }
            }
            await Self.waitForWaiting(batcher, 5)
            #expect(batcher.waitingCount("k") == 5)
            try await runner.releaseFirst()
            var outputs: [Int: Int] = [:]
            for try await (input, output) in group { outputs[input] = output }
            #expect(outputs == [1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 6: 60])
        }
        let batches = runner.batches.withLock { $0 }
        #expect(batches.map(\.count) == [1, 3, 2])
        #expect(Set(batches.dropFirst().flatMap { $0 }) == [2, 3, 4, 5, 6])
        #expect(batcher.waitingCount("k") == 0)
    }

    @Test("a batch's error reaches every call in it, and the calls behind it still run")
    func errorReachesTheWholeBatch() async throws {
        let batcher = CallBatcher<String, Int, Int>(maximumBatch: 2)
        let runner = HeldRunner()
        try await withThrowingTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
            group.addTask { (1, await Self.result { try await batcher.call(1, key: "k", run: runner.run) }) }
            for _ in 0..<10_000 where runner.batches.withLock({ $0.isEmpty }) { await Task.yield() }
            group.addTask { (-1, await Self.result { try await batcher.call(-1, key: "k", run: runner.run) }) }
            await Self.waitForWaiting(batcher, 1)
            group.addTask { (2, await Self.result { try await batcher.call(2, key: "k", run: runner.run) }) }
            await Self.waitForWaiting(batcher, 2)
            group.addTask { (3, await Self.result { try await batcher.call(3, key: "k", run: runner.run) }) }
            await Self.waitForWaiting(batcher, 3)
            try await runner.releaseFirst()
            var results: [Int: Result<Int, any Error>] = [:]
            for try await (input, result) in group { results[input] = result }
            #expect(try results[1]?.get() == 10)
            #expect(throws: Refused.self) { try results[-1]?.get() }
            #expect(throws: Refused.self, "2 shared the failing batch") { try results[2]?.get() }
            #expect(try results[3]?.get() == 30, "the batch after it ran")
        }
        #expect(runner.batches.withLock { $0 } == [[1], [-1, 2], [3]])
    }

    @Test("calls of different kinds never share a batch")
    func kindsAreApart() async throws {
        let batcher = CallBatcher<String, Int, Int>(maximumBatch: 8)
        let recorder = Recorder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for input in 0..<20 {
                group.addTask {
                    let output = try await batcher.call(input, key: input.isMultiple(of: 2) ? "even" : "odd") { inputs in
                        recorder.batches.withLock { $0.append(inputs) }
                        await Task.yield()
                        return inputs
                    }
                    #expect(output == input)
                }
            }
            try await group.waitForAll()
        }
        let batches = recorder.batches.withLock { $0 }
        for batch in batches {
            #expect(Set(batch.map { $0.isMultiple(of: 2) }).count == 1)
        }
        #expect(batches.flatMap { $0 }.sorted() == Array(0..<20))
    }

    @Test("cancelling the call that leads a batch does not cancel the batch for the others in it")
    func leaderCancellationSparesTheBatch() async throws {
        let batcher = CallBatcher<String, Int, Int>(maximumBatch: 8)
        let runner = HeldRunner()
        let leader = Task { try await batcher.call(1, key: "k", run: runner.run) }
        for _ in 0..<10_000 where runner.batches.withLock({ $0.isEmpty }) { await Task.yield() }
        let behind = Task { try await batcher.call(2, key: "k", run: runner.run) }
        await Self.waitForWaiting(batcher, 1)
        leader.cancel()
        try await runner.releaseFirst()
        #expect(try await leader.value == 10)
        #expect(try await behind.value == 20)
        #expect(runner.cancelledWhileRunning.withLock { $0 } == [false, false])
    }
}
