import Foundation

/// Where Tollgate's services read the time and how they wait.
///
/// Every service takes a clock, so tests drive time with a ``ManualClock`` and never sleep for real.
public protocol TollgateClock: Sendable {
    /// The current wall-clock time: for Pacific dates, expiry times and open-until times.
    func now() -> Date

    /// Waits for `duration`: for backoff delays and throttle waits.
    /// - Parameter duration: How long to wait.
    /// - Throws: `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's wall clock and real sleeping.
public struct SystemClock: TollgateClock {
    /// Creates the system clock.
    public init() {}

    public func now() -> Date { Date() }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
