/// How a reservation was settled.
public enum QuotaSettlement: Sendable, Hashable {
    /// The charge stands.
    case kept
    /// The units went back to the bucket (fewer than charged only when an operator reset the day in between).
    case refunded(units: Int)
    /// The charge now costs these units, fewer than charged (a `304` that costs less than the call).
    case settled(units: Int)
    /// It had been refunded or settled before; nothing changed.
    case alreadyRefunded
}
