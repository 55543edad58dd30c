import Synchronization
import Testing
@testable import Tollgate

@Suite("Writes after the answer", .timeLimit(.minutes(1)))
struct AfterAnswerWritesTests {
    @Test("writes run one at a time, in the order they were queued")
    func order() async {
        let writes = AfterAnswerWrites()
        let log = Mutex<[Int]>([])
        let running = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        for index in 0..<50 {
            writes.enqueue {
                if running.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                    overlapped.store(true, ordering: .sequentiallyConsistent)
                }
                await Task.yield()
                log.withLock { $0.append(index) }
                running.subtract(1, ordering: .sequentiallyConsistent)
            }
        }
        await writes.waitForQueued()
        #expect(log.withLock { $0 } == Array(0..<50))
        let writesOverlapped = overlapped.load(ordering: .sequentiallyConsistent)
        #expect(!writesOverlapped)
    }

    @Test("a waiter waits for the writes queued before it, not for those queued after")
    func waitsForEarlierWritesOnly() async throws {
        let writes = AfterAnswerWrites()
        let (firstMayFinish, release) = AsyncStream<Void>.makeStream()
        let finished = Mutex<[String]>([])
        writes.enqueue {
            for await _ in firstMayFinish { break }
            finished.withLock { $0.append("first") }
        }
        let waiter = Task {
            await writes.waitForQueued()
            return finished.withLock { $0 }
        }
        // Queued after the waiter came: never released, so a waiter that waited for it would hang.
        let (neverReleased, keepOpen) = AsyncStream<Void>.makeStream()
        while writes.waiterCount == 0 { await Task.yield() }
        writes.enqueue {
            for await _ in neverReleased { break }
        }
        release.yield()
        #expect(await waiter.value == ["first"])
        keepOpen.finish()
        await writes.waitForQueued()
    }

    /// What the queuing tasks saw.
    final class Tally: Sendable {
        let done = Mutex<Set<Int>>([])
        let wrongIdle = Atomic<Int>(0)
        let pendingMissed = Atomic<Int>(0)
    }

    @Test("idle, read without the lock, only once every write queued before the look has run: from many queuing tasks at once")
    func idleMeansEarlierWritesRan() async {
        let writes = AfterAnswerWrites()
        let count = 2_000
        let tally = Tally()
        await withTaskGroup(of: Void.self) { group in
            for lane in 0..<4 {
                group.addTask {
                    for index in stride(from: lane, to: count, by: 4) {
                        writes.enqueue(resource: "r\(index)") {
                            if index.isMultiple(of: 7) { await Task.yield() }
                            tally.done.withLock { _ = $0.insert(index) }
                        }
                        // Queued before the look: either its write has run, or the queue is not idle
                        // and its resource is pending.
                        if writes.isIdle {
                            if !tally.done.withLock({ $0.contains(index) }) { tally.wrongIdle.add(1, ordering: .relaxed) }
                        } else if !writes.isPending(resourceKey: "r\(index)"), !tally.done.withLock({ $0.contains(index) }) {
                            tally.pendingMissed.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
        }
        await writes.waitForQueued()
        #expect(writes.isIdle)
        #expect(tally.wrongIdle.load(ordering: .relaxed) == 0)
        #expect(tally.pendingMissed.load(ordering: .relaxed) == 0)
        #expect(tally.done.withLock { $0.count } == count)
    }

    @Test("waiting with nothing queued returns at once")
    func idle() async {
        let writes = AfterAnswerWrites()
        #expect(writes.isIdle)
        #expect(await Self.returns(within: .seconds(10)) { await writes.waitForQueued() }, "with nothing ever queued")
        writes.enqueue {}
        #expect(await Self.returns(within: .seconds(10)) { await writes.waitForQueued() }, "once the write ran")
        #expect(writes.isIdle)
        #expect(await Self.returns(within: .seconds(10)) { await writes.waitForQueued() }, "with the queue empty again")
        #expect(writes.waiterCount == 0)
    }

    /// Whether `wait` returns within `limit`: a wait that never returns fails the test instead of
    /// hanging it (the stuck task is left behind, suspended).
    private static func returns(within limit: Duration, _ wait: @escaping @Sendable () async -> Void) async -> Bool {
        let returned = Atomic<Bool>(false)
        let waiting = Task {
            await wait()
            returned.store(true, ordering: .sequentiallyConsistent)
        }
        let deadline = ContinuousClock.now + limit
        while !returned.load(ordering: .sequentiallyConsistent), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        _ = waiting
        return returned.load(ordering: .sequentiallyConsistent)
    }
}
