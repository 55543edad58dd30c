import Synchronization

/// Writes that follow an answer its caller already has — the cache's store of a `200` or a
/// `304`'s revision of the stored entry, with the attempt's settlement and the coalescing lease —
/// run one after another, in the order they were queued, on a background task.
///
/// DESIGN.md's cost on the path: one write transaction on a request's path, the admission;
/// settlement and revision are written after the answer. The gate's next admission, and
/// ``Gate/flush()``, wait for the writes queued before them, so no admission decides on a ledger
/// or a circuit that an earlier answer has not reached yet, and a tool that flushes before it
/// exits loses none.
final class AfterAnswerWrites: Sendable {
    typealias Write = @Sendable () async -> Void

    private struct State {
        var queued: [(resourceKey: String?, write: Write)] = []
        /// The resources whose writes are queued or running, with how many each.
        var pendingResources: [String: Int] = [:]
        var isDraining = false
        /// Writes ever queued, and ever finished: a waiter waits for the count queued when it came.
        var enqueuedCount = 0
        var finishedCount = 0
        var waiters: [(untilFinished: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())
    /// `State`'s two counts, mirrored for the checks every request makes (``isIdle``) and for
    /// ``waitForQueued()``'s first look, so that those take no lock: a drain holds it while it
    /// moves between writes, and each request's look at it waited (the end-to-end profile showed
    /// the lock's slow path, spinning, in the request's route).
    private let enqueuedTotal = Atomic<Int>(0)
    private let finishedTotal = Atomic<Int>(0)

    /// Queues a write; it runs after every write queued before it.
    /// - Parameters:
    ///   - resourceKey: The cache resource the write stores or revises, if any: until it is
    ///     written, a lookup of that resource waits for it (see ``isPending(resourceKey:)``).
    ///   - write: The write. It reports its own failures: nothing waits for its result.
    func enqueue(resource resourceKey: String? = nil, _ write: @escaping Write) {
        state.withLock { state in
            state.queued.append((resourceKey, write))
            if let resourceKey { state.pendingResources[resourceKey, default: 0] += 1 }
            state.enqueuedCount += 1
            enqueuedTotal.store(state.enqueuedCount, ordering: .releasing)
            guard !state.isDraining else { return }
            state.isDraining = true
            // Started inside the lock, though the new drain's first step is to wait for it:
            // started after it, the drain ran at once beside the answer's last steps, and a `304`
            // through the gate was 3–5 % slower to its answer in four of five alternated runs
            // (Benchmarks/README, "The store's Swift, …"; an earlier session measured the same).
            // Detached: the queue outlives the request that happened to start it, whose priority
            // and task-local values are not the queue's.
            Task.detached { await self.drain() }
        }
    }

    /// How many callers wait in ``waitForQueued()``.
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Whether no write is queued or running: the cheap check before ``isPending(resourceKey:)``.
    ///
    /// Writes finish in the order they were queued, so once the finished count reaches the count
    /// queued, every write queued before this look (an earlier answer's, say) has run.
    var isIdle: Bool {
        let enqueued = enqueuedTotal.load(ordering: .acquiring)
        return finishedTotal.load(ordering: .acquiring) >= enqueued
    }

    /// Whether a write that stores or revises `resourceKey` is queued or running.
    func isPending(resourceKey: String) -> Bool { state.withLock { $0.pendingResources[resourceKey] != nil } }

    /// Returns once every write queued before the call has run. Writes queued meanwhile are not
    /// waited for, so a steady stream of answers never holds a caller back.
    func waitForQueued() async {
        guard !isIdle else { return }
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state in
                guard state.finishedCount < state.enqueuedCount else { return true }
                state.waiters.append((state.enqueuedCount, continuation))
                return false
            }
            if finished { continuation.resume() }
        }
    }

    private func drain() async {
        while let (resourceKey, write) = nextWrite() {
            await write()
            let released = state.withLock { state in
                if let resourceKey {
                    let remaining = (state.pendingResources[resourceKey] ?? 1) - 1
                    state.pendingResources[resourceKey] = remaining > 0 ? remaining : nil
                }
                state.finishedCount += 1
                let finished = state.finishedCount
                finishedTotal.store(finished, ordering: .releasing)
                defer { state.waiters.removeAll { $0.untilFinished <= finished } }
                return state.waiters.filter { $0.untilFinished <= finished }.map(\.continuation)
            }
            for waiter in released { waiter.resume() }
        }
    }

    /// The next queued write, or nil — and the queue marked idle — when there is none.
    private func nextWrite() -> (resourceKey: String?, write: Write)? {
        state.withLock { state in
            guard !state.queued.isEmpty else {
                state.isDraining = false
                return nil
            }
            return state.queued.removeFirst()
        }
    }
}
