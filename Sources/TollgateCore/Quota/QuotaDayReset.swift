/// What resetting a bucket's day did: one `reset` event per endpoint that had units.
public struct QuotaDayReset: Sendable, Hashable {
    /// The Pacific day reset.
    public var day: PacificDay
    /// The bucket reset.
    public var bucket: String
    /// The units each endpoint had before the reset (the reset events carry their negatives).
    public var unitsCleared: [String: Int]
    /// Whether the reset also lifted the server's exhausted mark (only a reset of the current day does).
    public var clearedExhaustedMark: Bool

    /// The units cleared, all endpoints together.
    public var totalUnitsCleared: Int { unitsCleared.values.reduce(0, QuotaLimits.saturatingSum) }

    /// Creates a reset summary.
    /// - Parameters:
    ///   - day: The day reset.
    ///   - bucket: The bucket reset.
    ///   - unitsCleared: Units per endpoint before the reset.
    ///   - clearedExhaustedMark: Whether the exhausted mark was lifted.
    public init(day: PacificDay, bucket: String, unitsCleared: [String: Int], clearedExhaustedMark: Bool) {
        self.day = day
        self.bucket = bucket
        self.unitsCleared = unitsCleared
        self.clearedExhaustedMark = clearedExhaustedMark
    }
}
