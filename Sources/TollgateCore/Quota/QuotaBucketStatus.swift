import Foundation

/// A bucket's state on one Pacific day.
public struct QuotaBucketStatus: Sendable, Hashable {
    /// Where the limit in force comes from.
    public enum LimitSource: String, Sendable, Hashable {
        /// The library's configuration: the stored limit follows it when it changes.
        case configuration
        /// An operator set it (`tollgate quota`, ``QuotaStorage/setQuotaLimit(bucket:limit:configuredLimit:at:)``):
        /// it wins over the configuration until the operator clears it.
        case admin
    }

    /// The bucket.
    public var bucket: String
    /// The Pacific day described.
    public var day: PacificDay
    /// The daily limit in force.
    public var limit: Int
    /// Where ``limit`` comes from.
    public var limitSource: LimitSource
    /// Units used that day, all endpoints together.
    public var unitsUsed: Int
    /// Whether the server said the day's quota is spent.
    public var isExhausted: Bool
    /// The window described: the Pacific day unless the bucket counts another window.
    public var period: QuotaPeriod
    /// The bucket's window.
    public var window: QuotaWindow

    /// The units the bucket can still pay that day: zero while exhausted.
    public var remaining: Int { isExhausted ? 0 : QuotaLimits.remaining(limit: limit, used: unitsUsed) }

    /// When the window ends: the next midnight, Pacific time, for a daily bucket.
    public var resetsAt: Date { period.end }

    /// Creates a status.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - day: The Pacific day.
    ///   - limit: The daily limit in force.
    ///   - limitSource: Where the limit comes from.
    ///   - unitsUsed: Units used that day.
    ///   - isExhausted: Whether the server said the day's quota is spent.
    ///   - window: The bucket's window.
    ///   - period: The window described; the Pacific day when nil.
    public init(
        bucket: String, day: PacificDay, limit: Int, limitSource: LimitSource, unitsUsed: Int, isExhausted: Bool,
        window: QuotaWindow = .pacificDay, period: QuotaPeriod? = nil
    ) {
        self.window = window
        self.period = period ?? QuotaPeriod(day)
        self.bucket = bucket
        self.day = day
        self.limit = limit
        self.limitSource = limitSource
        self.unitsUsed = unitsUsed
        self.isExhausted = isExhausted
    }
}
