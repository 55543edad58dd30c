import Foundation
import Synchronization

/// A clock that moves only when told to: for tests and simulations.
///
/// ``sleep(for:)`` suspends until ``advance(by:)`` moves the time past the sleeper's deadline, so
/// a test can wait out a 60-second circuit or a 1-hour rate-limit trip instantly and exactly.
public final class ManualClock: TollgateClock {
    private struct Sleeper {
        let id: UInt64
        let deadline: Date
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Creates a clock stopped at `now`.
    /// - Parameter now: The starting time.
    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(now: now))
    }

    public func now() -> Date {
        state.withLock { $0.now }
    }

    /// How many tasks are sleeping on this clock right now.
    public var sleeperCount: Int {
        state.withLock { $0.sleepers.count }
    }

    /// Every duration passed to ``sleep(for:)`` so far, in call order.
    public var sleeps: [Duration] {
        recordedSleeps.withLock { $0 }
    }
    private let recordedSleeps = Mutex<[Duration]>([])

    public func sleep(for duration: Duration) async throws {
        recordedSleeps.withLock { $0.append(duration) }
        guard duration > .zero else { return }
        try await suspend { now in now.addingTimeInterval(duration.timeInterval) }
    }

    /// Suspends until ``advance(by:)`` or ``set(to:)`` moves the time to `deadline` or past it; not
    /// one of ``sleeps``, which are the waits that would have taken time of their own.
    /// - Parameter deadline: When the wait ends; one passed already ends it at once.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Date) async throws {
        try await suspend { _ in deadline }
    }

    /// Suspends until the time reaches the deadline `deadline` computes from the time now, read
    /// under the same lock as the sleeper is added: an advance cannot slip in between.
    private func suspend(until deadline: (Date) -> Date) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Resume { case waits, now, cancelled }
                let resume = state.withLock { state -> Resume in
                    if Task.isCancelled { return .cancelled }
                    let due = deadline(state.now)
                    if due <= state.now { return .now }
                    state.sleepers.append(Sleeper(id: id, deadline: due, continuation: continuation))
                    return .waits
                }
                switch resume {
                case .waits: break
                case .now: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward and wakes every sleeper whose deadline has come.
    /// - Parameter duration: How far to move; may be negative to simulate a wall clock set back.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.addingTimeInterval(duration.timeInterval)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due {
            sleeper.continuation.resume()
        }
    }

    /// Sets the time, forward or back, and wakes every sleeper whose deadline has come.
    /// - Parameter date: The new time.
    public func set(to date: Date) {
        let current = now()
        advance(by: .seconds(date.timeIntervalSince(current)))
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`.
    public var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
