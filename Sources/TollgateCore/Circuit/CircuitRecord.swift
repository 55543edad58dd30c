import Foundation

/// The persisted state of one endpoint's circuit: one row of the `circuits` table.
public struct CircuitRecord: Sendable, Hashable {
    /// The endpoint the circuit protects.
    public var endpoint: String
    /// The stored state. An open circuit whose open-until has passed is stored as ``CircuitState/open``
    /// until the next admission moves it; ``effectiveState(at:)`` reports it as half-open at once.
    public var state: CircuitState
    /// Failures in a row, rate limits included. Kept while open, so it shows what tripped it.
    public var consecutiveFailures: Int
    /// How many of those failures in a row were rate limits.
    public var consecutiveRateLimits: Int
    /// The threshold in force when the row was last written.
    public var failureThreshold: Int
    /// When the circuit last opened.
    public var openedAt: Date?
    /// When the open circuit may be probed.
    public var openUntil: Date?
    /// The length of the current opening: a wait is never reported longer than this, whatever the
    /// wall clock does.
    public var openDuration: Duration?
    /// The token of the process holding the half-open probe lease.
    public var probeOwner: String?
    /// When the probe lease expires; after that, the next caller may probe.
    public var probeLeaseUntil: Date?
    /// Failed probes in a row, for the growth of the open duration.
    public var failedProbes: Int
    /// How many times failures have opened the circuit (forced openings are not counted).
    public var trips: Int
    /// When the row was last written.
    public var updatedAt: Date

    /// Creates a record.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - state: The stored state.
    ///   - consecutiveFailures: Failures in a row.
    ///   - consecutiveRateLimits: Rate limits in a row.
    ///   - failureThreshold: The threshold in force.
    ///   - openedAt: When it last opened.
    ///   - openUntil: When it may be probed.
    ///   - openDuration: The length of the current opening.
    ///   - probeOwner: The probe lease holder.
    ///   - probeLeaseUntil: When the probe lease expires.
    ///   - failedProbes: Failed probes in a row.
    ///   - trips: Trips so far.
    ///   - updatedAt: When the row was last written.
    public init(
        endpoint: String, state: CircuitState = .closed, consecutiveFailures: Int = 0,
        consecutiveRateLimits: Int = 0, failureThreshold: Int = 5, openedAt: Date? = nil,
        openUntil: Date? = nil, openDuration: Duration? = nil, probeOwner: String? = nil,
        probeLeaseUntil: Date? = nil, failedProbes: Int = 0, trips: Int = 0, updatedAt: Date
    ) {
        self.endpoint = endpoint
        self.state = state
        self.consecutiveFailures = consecutiveFailures
        self.consecutiveRateLimits = consecutiveRateLimits
        self.failureThreshold = failureThreshold
        self.openedAt = openedAt
        self.openUntil = openUntil
        self.openDuration = openDuration
        self.probeOwner = probeOwner
        self.probeLeaseUntil = probeLeaseUntil
        self.failedProbes = failedProbes
        self.trips = trips
        self.updatedAt = updatedAt
    }

    /// The state a caller would meet at `now`: an open circuit whose open-until has passed is
    /// half-open, as the `circuit_status` view shows it.
    /// - Parameter now: The current time.
    /// - Returns: The effective state.
    public func effectiveState(at now: Date) -> CircuitState {
        if state == .open, remainingOpenTime(at: now) == nil { return .halfOpen }
        return state
    }

    /// How long an open circuit still refuses requests, never more than its open duration (a wall
    /// clock set back cannot stretch the wait).
    /// - Parameter now: The current time.
    /// - Returns: The seconds left, or nil when the circuit is not open or its time is up.
    public func remainingOpenTime(at now: Date) -> TimeInterval? {
        guard state == .open, let openUntil else { return nil }
        var remaining = openUntil.timeIntervalSince(now)
        if let openDuration { remaining = min(remaining, openDuration.timeInterval) }
        return remaining > 0 ? remaining : nil
    }
}
