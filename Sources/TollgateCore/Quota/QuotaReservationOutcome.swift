/// The answer to a quota reservation: charged, or refused with nothing written.
public enum QuotaReservationOutcome: Sendable, Hashable {
    /// The units were charged and a `charge` event appended.
    case reserved(QuotaCharge)
    /// The bucket could not pay; nothing was charged.
    case refused(QuotaRefusal)
}
