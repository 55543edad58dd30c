/// How a reservation was settled.
public enum QuotaSettlement: Sendable, Hashable {
    /// The charge stands.
    case kept
    /// The units went back to the bucket (fewer than charged only when an operator reset the day in between).
    case refunded(units: Int)
    /// It had been refunded before; nothing changed.
    case alreadyRefunded
}
