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

    /// Waits until the clock reads `deadline`, without moving it: for a wait whose end is decided
    /// by what others do meanwhile (a coalescing waiter's patience with the request it waits for).
    ///
    /// A real clock sleeps until then, a manual clock until it is advanced past it; a simulated
    /// clock does not jump to it as its ``sleep(for:)`` does, but resumes when other sleeps have
    /// moved its time past it — else every such wait would end at once, before what it waits for.
    /// - Parameter deadline: When the wait ends.
    /// - Throws: `CancellationError` when the task is cancelled.
    func sleep(until deadline: Date) async throws
}

extension TollgateClock {
    /// Sleeps for the time left until `deadline`: right for a clock whose time passes by itself.
    /// - Parameter deadline: When the wait ends.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Date) async throws {
        let left = deadline.timeIntervalSince(now())
        guard left > 0 else { return try Task.checkCancellation() }
        try await sleep(for: SaturatingConversion.duration(seconds: left))
    }
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
