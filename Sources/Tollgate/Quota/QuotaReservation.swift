import Foundation

/// Units charged for one call, to be settled once the answer is known: kept, or refunded.
public struct QuotaReservation: Sendable, Hashable {
    /// The charge's id in the ledger.
    public let id: Int64
    /// The endpoint charged.
    public let endpoint: String
    /// The bucket charged.
    public let bucket: String
    /// The units charged.
    public let cost: Int
    /// The Pacific day charged (a refund goes back to this day, even after midnight).
    public let day: PacificDay
    /// The units left in the bucket that day after this charge.
    public let remaining: Int
    /// The bucket's daily limit in force.
    public let limit: Int
    /// The bucket's window charged: the Pacific day unless the bucket counts another window.
    public let period: QuotaPeriod

    /// When the bucket's window ends: the next midnight, Pacific time, for a daily bucket.
    public var resetsAt: Date { period.end }

    /// Creates a reservation from the store's charge.
    /// - Parameter charge: The charge the store made.
    public init(_ charge: QuotaCharge) {
        id = charge.reservationID
        endpoint = charge.endpoint
        bucket = charge.bucket
        cost = charge.cost
        day = charge.day
        remaining = charge.remaining
        limit = charge.limit
        period = charge.period
    }
}
