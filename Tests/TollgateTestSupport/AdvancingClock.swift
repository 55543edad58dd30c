import Foundation
import Synchronization
import TollgateStore

/// A ``ManualClock`` whose sleeps advance it at once: code under test that sleeps (a retry's
/// backoff) runs straight through, on the same time line as everything else reading the clock,
/// and the test reads back exactly how long it slept.
public final class AdvancingClock: TollgateClock {
    public let base: ManualClock
    private let recorded = Mutex<[Duration]>([])
    private let onSleep: (@Sendable (Duration) async -> Void)?

    /// - Parameters:
    ///   - base: The manual clock that holds the time.
    ///   - onSleep: Runs during each sleep, after the time moved: to simulate what another process
    ///     does meanwhile.
    public init(base: ManualClock = ManualClock(), onSleep: (@Sendable (Duration) async -> Void)? = nil) {
        self.base = base
        self.onSleep = onSleep
    }

    public var sleeps: [Duration] { recorded.withLock { $0 } }

    public func now() -> Date { base.now() }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        recorded.withLock { $0.append(duration) }
        base.advance(by: duration)
        await onSleep?(duration)
    }
}
