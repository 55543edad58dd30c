import Synchronization
import TollgateCore

/// Calls of one kind that arrive while another of that kind is running wait for it, then run
/// together as one batch: one round trip and one commit for all of them. A call that finds none
/// running runs at once, alone, so a lone caller waits for nothing; under load the batches grow by
/// themselves to what arrived during the previous one (group commit, on the client).
///
/// A call that waits is not cancellable: once queued it runs with its batch, as a statement already
/// sent would, and its caller gets the outcome (an admission's charge is then the caller's to settle).
///
/// Each batch is run by one of its callers, the leader: the first to arrive when nothing of its
/// kind ran, then, as each batch ends, the first of those that waited. The leader hands the next
/// batch on before it delivers its own batch's results, so the next round trip starts at once.
final class CallBatcher<Key: Hashable & Sendable, Input: Sendable, Output: Sendable>: Sendable {
    private struct Waiter {
        let input: Input
        let continuation: CheckedContinuation<Turn, Never>
    }

    /// What a waiting caller is woken with: its result, or the next batch to run (itself first).
    private enum Turn {
        case done(Result<Output, any Error>)
        case lead(others: [Waiter])
    }

    /// For each kind with a batch running, the calls waiting for the next one.
    private let waiting = Mutex<[Key: [Waiter]]>([:])
    private let maximumBatch: Int

    /// - Parameter maximumBatch: The most calls in one batch; more wait for the batch after.
    init(maximumBatch: Int) {
        precondition(maximumBatch >= 1)
        self.maximumBatch = maximumBatch
    }

    /// Runs `input` in the next batch of its kind.
    /// - Parameters:
    ///   - input: This call's part of the batch.
    ///   - key: The kind: only calls with equal keys share a batch.
    ///   - run: Runs a batch; returns one output per input, in order. It runs in whichever
    ///     caller leads the batch, so it must not depend on the caller.
    /// - Returns: This call's output.
    /// - Throws: What `run` threw for this call's batch, to every call in it; `BatchSizeMismatch`
    ///   when `run` returns another number of outputs than it was given inputs.
    func call(
        _ input: Input, key: Key, run: @escaping @Sendable ([Input]) async throws -> [Output]
    ) async throws -> Output {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let leads = waiting.withLock { waiting in
                guard waiting[key] != nil else {
                    waiting[key] = []
                    return true
                }
                waiting[key]!.append(Waiter(input: input, continuation: continuation))
                return false
            }
            if leads { continuation.resume(returning: .lead(others: [])) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .lead(let others):
            let inputs = [input] + others.map(\.input)
            let outputs: Result<[Output], any Error>
            do {
                // In a task of its own: the batch serves every call in it, so the leader's
                // cancellation must not cancel it for the others.
                let returned = try await Task { try await run(inputs) }.value
                guard returned.count == inputs.count else {
                    throw BatchSizeMismatch(inputs: inputs.count, outputs: returned.count)
                }
                outputs = .success(returned)
            } catch {
                outputs = .failure(error)
            }
            handOver(key)
            for (index, other) in others.enumerated() {
                other.continuation.resume(returning: .done(outputs.map { $0[index + 1] }))
            }
            return try outputs.get()[0]
        }
    }

    /// How many calls of a kind wait for the next batch (tests watch batches form with it).
    func waitingCount(_ key: Key) -> Int {
        waiting.withLock { $0[key]?.count ?? 0 }
    }

    /// Wakes the first waiting call to lead the next batch, or marks the kind idle.
    private func handOver(_ key: Key) {
        let next = waiting.withLock { waiting -> [Waiter]? in
            guard let queued = waiting[key], !queued.isEmpty else {
                waiting[key] = nil
                return nil
            }
            waiting[key] = Array(queued.dropFirst(maximumBatch))
            return Array(queued.prefix(maximumBatch))
        }
        guard let next else { return }
        next[0].continuation.resume(returning: .lead(others: Array(next.dropFirst())))
    }
}

/// A batch's runner returned another number of outputs than it was given inputs: a bug.
struct BatchSizeMismatch: Error, CustomStringConvertible {
    let inputs: Int
    let outputs: Int

    var description: String { "a batch of \(inputs) calls returned \(outputs) results" }
}
