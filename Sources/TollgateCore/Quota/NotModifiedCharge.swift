/// What an answer does to the charge made on admission (``NotModifiedCost/charge(forStatus:price:)``).
public enum NotModifiedCharge: Sendable, Hashable {
    /// The charge stands.
    case kept
    /// Every unit goes back: the answer cost nothing.
    case refunded
    /// The charge is settled at these units, fewer than charged; the rest go back.
    case settled(units: Int)
}
