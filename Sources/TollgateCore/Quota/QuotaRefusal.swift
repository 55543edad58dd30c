import Foundation

/// Why a reservation was refused, with what the bucket had left.
public struct QuotaRefusal: Sendable, Hashable {
    /// What stood in the way.
    public enum Reason: String, Sendable, Hashable {
        /// The cost is more than the bucket has left today.
        case overBudget
        /// The server said the daily quota is spent; the bucket is closed until the next Pacific midnight.
        case exhaustedByServer
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

    /// The units the bucket can still pay today: zero once the server said it is spent.
    public var remaining: Int {
        reason == .exhaustedByServer ? 0 : QuotaLimits.remaining(limit: limit, used: bucketUnitsUsed)
    }

    /// When the bucket's day ends: the next midnight, Pacific time.
    public var resetsAt: Date { day.nextReset }

    /// Creates a refusal.
    /// - Parameters:
    ///   - reason: What stood in the way.
    ///   - bucket: The bucket that could not pay.
    ///   - endpoint: The endpoint that asked.
    ///   - cost: The units asked for.
    ///   - day: The Pacific day of the attempt.
    ///   - bucketUnitsUsed: The bucket's units used that day.
    ///   - limit: The daily limit in force.
    public init(
        reason: Reason, bucket: String, endpoint: String, cost: Int, day: PacificDay, bucketUnitsUsed: Int, limit: Int
    ) {
        self.reason = reason
        self.bucket = bucket
        self.endpoint = endpoint
        self.cost = cost
        self.day = day
        self.bucketUnitsUsed = bucketUnitsUsed
        self.limit = limit
    }
}
