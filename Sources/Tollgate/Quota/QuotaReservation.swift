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

    /// When the bucket's day ends: the next midnight, Pacific time.
    public var resetsAt: Date { day.nextReset }

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
    }
}
