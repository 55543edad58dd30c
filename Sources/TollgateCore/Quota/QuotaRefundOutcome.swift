/// What a refund did.
public enum QuotaRefundOutcome: Sendable, Hashable {
    /// A `refund` event gave `units` back to the charge's day. Fewer units than the charge when an
    /// operator reset that day in between: a reset already gave them back.
    case refunded(units: Int, day: PacificDay)
    /// The reservation had been refunded before; nothing was written.
    case alreadyRefunded
}
