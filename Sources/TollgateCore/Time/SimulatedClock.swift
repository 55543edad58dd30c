import Foundation
import Synchronization

/// A clock on simulated time: every sleep moves the time forward at once instead of waiting.
///
/// Code that backs off for 1, 2 and 4 seconds or waits out a throttle window runs straight through,
/// while everything that reads the clock sees the time those waits would have taken. `tollgate demo`
/// tells an hour-long story in seconds with it, and tests read back exactly what was slept.
public final class SimulatedClock: TollgateClock {
    /// The manual clock that holds the time; advance it to make time pass without a sleep.
    public let base: ManualClock
    private let recorded = Mutex<[Duration]>([])
    private let onSleep: (@Sendable (Duration) async -> Void)?

    /// Creates a simulated clock.
    /// - Parameters:
    ///   - base: The manual clock that holds the time.
    ///   - onSleep: Runs during each sleep, after the time moved: to simulate what another process
    ///     does meanwhile.
    public init(base: ManualClock = ManualClock(), onSleep: (@Sendable (Duration) async -> Void)? = nil) {
        self.base = base
        self.onSleep = onSleep
    }

    /// Every sleep so far, in order.
    public var sleeps: [Duration] { recorded.withLock { $0 } }

    public func now() -> Date { base.now() }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        recorded.withLock { $0.append(duration) }
        base.advance(by: duration)
        await onSleep?(duration)
    }

    /// Waits on ``base`` until other sleeps (or the test) move the time to `deadline`: the time
    /// does not jump to it, so a waiter's patience ends when the simulated time it waited through
    /// has passed, not at once. Not one of ``sleeps``.
    /// - Parameter deadline: When the wait ends.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Date) async throws {
        try await base.sleep(until: deadline)
    }
}
