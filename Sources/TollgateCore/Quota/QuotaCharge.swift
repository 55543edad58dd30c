import Foundation

/// A charge the store made for a reservation: the `charge` event and the bucket after it.
public struct QuotaCharge: Sendable, Hashable {
    /// The id of the `charge` event, which is the reservation's id: refunds name it.
    public var reservationID: Int64
    /// The bucket charged.
    public var bucket: String
    /// The endpoint charged.
    public var endpoint: String
    /// The units charged.
    public var cost: Int
    /// The Pacific day charged.
    public var day: PacificDay
    /// The units used in the bucket that day, this charge included.
    public var bucketUnitsUsed: Int
    /// The bucket's daily limit in force.
    public var limit: Int
    /// The warning levels (percent of the limit) this charge crossed first today, lowest first;
    /// each level is reported by one charge a day, whichever process makes it.
    public var warningsCrossed: [Int]
    /// The bucket's window charged: the Pacific day unless the bucket counts another window.
    public var period: QuotaPeriod

    /// The units left in the bucket that day.
    public var remaining: Int { QuotaLimits.remaining(limit: limit, used: bucketUnitsUsed) }

    /// When the bucket's window ends: the next midnight, Pacific time, for a daily bucket.
    public var resetsAt: Date { period.end }

    /// Creates a charge.
    /// - Parameters:
    ///   - reservationID: The id of the `charge` event.
    ///   - bucket: The bucket charged.
    ///   - endpoint: The endpoint charged.
    ///   - cost: The units charged.
    ///   - day: The Pacific day charged.
    ///   - bucketUnitsUsed: The bucket's units used that day, this charge included.
    ///   - limit: The daily limit in force.
    ///   - warningsCrossed: The warning levels this charge crossed first today.
    ///   - period: The window charged; the Pacific day when nil.
    public init(
        reservationID: Int64, bucket: String, endpoint: String, cost: Int, day: PacificDay,
        bucketUnitsUsed: Int, limit: Int, warningsCrossed: [Int], period: QuotaPeriod? = nil
    ) {
        self.period = period ?? QuotaPeriod(day)
        self.reservationID = reservationID
        self.bucket = bucket
        self.endpoint = endpoint
        self.cost = cost
        self.day = day
        self.bucketUnitsUsed = bucketUnitsUsed
        self.limit = limit
        self.warningsCrossed = warningsCrossed
    }
}
