import Foundation

/// Why a reservation was refused, with what the bucket had left.
public struct QuotaRefusal: Sendable, Hashable {
    /// What stood in the way.
    public enum Reason: String, Sendable, Hashable {
        /// The cost is more than the bucket has left today.
        case overBudget
        /// The server said the daily quota is spent; the bucket is closed until the next Pacific midnight.
        case exhaustedByServer
        /// The bucket paces its last units (``QuotaPacing``): the next one may be spent at ``QuotaRefusal/retryAt``.
        case paced
    }

    /// What stood in the way.
    public var reason: Reason
    /// The bucket that could not pay.
    public var bucket: String
    /// The endpoint that asked.
    public var endpoint: String
    /// The units asked for.
    public var cost: Int
    /// The Pacific day of the attempt.
    public var day: PacificDay
    /// The units used in the bucket that day.
    public var bucketUnitsUsed: Int
    /// The bucket's daily limit in force.
    public var limit: Int
    /// The bucket's window at the attempt: the Pacific day unless the bucket counts another window.
    public var period: QuotaPeriod
    /// When the bucket can pay again: the window's end, or for a paced bucket the next paced slot.
    public var retryAt: Date

    /// The units the bucket can still pay today: zero once the server said it is spent.
    public var remaining: Int {
        reason == .exhaustedByServer ? 0 : QuotaLimits.remaining(limit: limit, used: bucketUnitsUsed)
    }

    /// When the bucket's window ends: the next midnight, Pacific time, for a daily bucket.
    public var resetsAt: Date { period.end }

    /// Creates a refusal.
    /// - Parameters:
    ///   - reason: What stood in the way.
    ///   - bucket: The bucket that could not pay.
    ///   - endpoint: The endpoint that asked.
    ///   - cost: The units asked for.
    ///   - day: The Pacific day of the attempt.
    ///   - bucketUnitsUsed: The bucket's units used that day.
    ///   - limit: The daily limit in force.
    ///   - period: The bucket's window; the Pacific day when nil.
    ///   - retryAt: When the bucket can pay again; the window's end when nil.
    public init(
        reason: Reason, bucket: String, endpoint: String, cost: Int, day: PacificDay, bucketUnitsUsed: Int, limit: Int,
        period: QuotaPeriod? = nil, retryAt: Date? = nil
    ) {
        let period = period ?? QuotaPeriod(day)
        self.period = period
        self.retryAt = retryAt ?? period.end
        self.reason = reason
        self.bucket = bucket
        self.endpoint = endpoint
        self.cost = cost
        self.day = day
        self.bucketUnitsUsed = bucketUnitsUsed
        self.limit = limit
    }
}
