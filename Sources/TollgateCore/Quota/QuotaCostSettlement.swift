/// What settling a charge's actual cost did.
public enum QuotaCostSettlement: Sendable, Hashable {
    /// A `settle` event charged `difference` more units (negative: gave them back) so the charge
    /// now costs `actualUnits`. `overLimit` says the window's usage is past its limit: the bucket
    /// refuses until the window has room again.
    case settled(difference: Int, actualUnits: Int, overLimit: Bool)
    /// The charge was settled, or refunded, before; nothing was written.
    case alreadySettled
}

/// A charge's actual cost, read from its answer, to settle against the estimate charged on admission.
public struct QuotaActualCost: Sendable, Hashable {
    /// The reservation (``QuotaCharge/reservationID``).
    public var reservationID: Int64
    /// The bucket whose charge is settled: the reservation's own or one of its additional charges.
    public var bucket: String
    /// The actual cost, zero or more.
    public var units: Int
    /// Where it was read, such as `body usage.total_tokens`; kept in the event's detail.
    public var source: String

    /// Creates an actual cost.
    /// - Parameters:
    ///   - reservationID: The reservation.
    ///   - bucket: The bucket whose charge is settled.
    ///   - units: The actual cost.
    ///   - source: Where it was read.
    public init(reservationID: Int64, bucket: String, units: Int, source: String) {
        self.reservationID = reservationID
        self.bucket = bucket
        self.units = units
        self.source = source
    }
}
