import Foundation

/// How one endpoint's circuit trips and recovers.
///
/// The defaults: 5 consecutive failures open the circuit for 60 seconds, and a trip made of 5
/// consecutive rate-limit answers opens it for 1 hour, as an API that counts 429s wants.
public struct CircuitPolicy: Sendable, Hashable {
    /// How the open duration grows after failed probes, so a server that stays down is probed less
    /// and less often.
    public struct OpenDurationGrowth: Sendable, Hashable {
        /// The factor applied once per failed probe in a row (at least 1).
        public var multiplier: Double
        /// The longest an open duration may grow to. It never shortens the base duration.
        public var maximum: Duration

        /// Creates a growth rule.
        /// - Parameters:
        ///   - multiplier: The factor per failed probe, at least 1.
        ///   - maximum: The cap on the grown duration.
        public init(multiplier: Double = 2, maximum: Duration = .seconds(600)) {
            self.multiplier = multiplier
            self.maximum = maximum
        }
    }

    /// Consecutive failures (rate limits included) that open the circuit. 5 by default.
    public var failureThreshold: Int
    /// How long a circuit stays open after a trip of ordinary failures. 60 seconds by default.
    public var openDuration: Duration
    /// How long a circuit stays open when the last `failureThreshold` failures were all rate
    /// limits. 1 hour by default.
    public var rateLimitOpenDuration: Duration
    /// How long a half-open probe holds its lease. A process that dies mid-probe blocks other
    /// probes for at most this long. 30 seconds by default.
    public var probeLeaseDuration: Duration
    /// Growth of the open duration after failed probes; nil (the default) keeps it constant.
    public var openDurationGrowth: OpenDurationGrowth?

    /// Creates a policy.
    /// - Parameters:
    ///   - failureThreshold: Consecutive failures that open the circuit, at least 1.
    ///   - openDuration: How long an ordinary trip stays open.
    ///   - rateLimitOpenDuration: How long a trip of rate limits stays open.
    ///   - probeLeaseDuration: How long a half-open probe holds its lease.
    ///   - openDurationGrowth: Growth after failed probes, or nil.
    public init(
        failureThreshold: Int = 5,
        openDuration: Duration = .seconds(60),
        rateLimitOpenDuration: Duration = .seconds(3600),
        probeLeaseDuration: Duration = .seconds(30),
        openDurationGrowth: OpenDurationGrowth? = nil
    ) {
        self.failureThreshold = failureThreshold
        self.openDuration = openDuration
        self.rateLimitOpenDuration = rateLimitOpenDuration
        self.probeLeaseDuration = probeLeaseDuration
        self.openDurationGrowth = openDurationGrowth
    }

    /// Checks that the policy can be applied.
    /// - Throws: ``StoreRefusal/invalidArgument(_:)`` naming the first value out of range.
    public func validate() throws(StoreRefusal) {
        guard failureThreshold >= 1 else {
            throw .invalidArgument("circuit failure threshold must be at least 1, got \(failureThreshold)")
        }
        // Checked one by one, not from an array of pairs: every admission validates its policy,
        // and the array was an allocation each time.
        try Self.requirePositive(openDuration, "open duration")
        try Self.requirePositive(rateLimitOpenDuration, "rate-limit open duration")
        try Self.requirePositive(probeLeaseDuration, "probe lease duration")
        if let growth = openDurationGrowth {
            guard growth.multiplier >= 1, growth.multiplier.isFinite else {
                throw .invalidArgument("circuit open-duration growth multiplier must be at least 1, got \(growth.multiplier)")
            }
            guard growth.maximum > .zero else {
                throw .invalidArgument("circuit open-duration growth maximum must be positive, got \(growth.maximum)")
            }
        }
    }

    private static func requirePositive(_ duration: Duration, _ name: String) throws(StoreRefusal) {
        guard duration > .zero else { throw .invalidArgument("circuit \(name) must be positive, got \(duration)") }
    }

    /// The open duration of a trip.
    /// - Parameters:
    ///   - rateLimited: Whether the trip was made of rate-limit answers only.
    ///   - failedProbes: Failed probes in a row, this trip's included.
    /// - Returns: The base duration, grown by ``openDurationGrowth`` once per failed probe and capped
    ///   by its maximum (never below the base).
    public func openDuration(rateLimited: Bool, failedProbes: Int) -> Duration {
        let base = rateLimited ? rateLimitOpenDuration : openDuration
        guard let growth = openDurationGrowth, failedProbes > 0, growth.multiplier > 1 else { return base }
        let cap = max(growth.maximum, base).timeInterval
        let grown = base.timeInterval * pow(growth.multiplier, Double(min(failedProbes, 1_000)))
        return .milliseconds(SaturatingConversion.milliseconds(min(grown, cap)))
    }
}
