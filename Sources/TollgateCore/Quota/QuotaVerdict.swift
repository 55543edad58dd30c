import Foundation

/// What the quota machine decides for one bucket of a reservation.
public enum QuotaVerdict: Sendable, Hashable {
    /// The bucket pays: its units used after the charge, and the warning levels the charge crossed
    /// first in the window (lowest first).
    case admit(usedAfter: Int, warningsCrossed: [Int])
    /// The bucket cannot pay, for this reason (``QuotaRefusal/Reason/overBudget`` or
    /// ``QuotaRefusal/Reason/exhaustedByServer``).
    case refuse(QuotaRefusal.Reason)
    /// The bucket paces its last units: the charge may be made at `until`.
    case wait(until: Date)
}
