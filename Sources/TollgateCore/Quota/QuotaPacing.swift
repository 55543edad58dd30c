import Foundation

/// How a bucket spends its last units: instead of spending what is left at once and then waiting
/// for the reset, keep a share back and spread the rest evenly over the time to the reset.
///
/// Pacing starts when what is left, less the share kept back, is less than an even share of the
/// rest of the window, such as when the server announced that another client of the same key spent
/// most of it. From then on a charge waits for its slot: one every `time to reset ÷ spendable
/// units` after the bucket's previous charge. With 5,000 an hour, 10 % kept back and 550 left 30
/// minutes before the reset, 50 units are spendable: one every 36 seconds.
public struct QuotaPacing: Sendable, Hashable {
    /// The share of the limit never spent by paced charges, 0 to 1 (`0.1` keeps 10 % back).
    public var reserveFraction: Double

    /// Creates a pacing policy.
    /// - Parameter reserveFraction: The share of the limit kept back, 0 to 1.
    public init(reserveFraction: Double = 0.1) {
        self.reserveFraction = reserveFraction
    }

    /// What pacing decides for one charge.
    public enum Decision: Sendable, Hashable {
        /// The charge may go now.
        case allowed(paced: Bool)
        /// The charge must wait until `until`.
        case wait(until: Date)
    }

    /// Whether a charge of `cost` may be made now.
    /// - Parameters:
    ///   - cost: The units asked for.
    ///   - used: The units the window used so far.
    ///   - limit: The bucket's limit.
    ///   - period: The window in force.
    ///   - now: The time of the charge.
    ///   - lastPacedCharge: When the bucket last charged while paced, if it did in this window.
    /// - Returns: Allowed (saying whether pacing is on, so the charge's time is kept), or when to retry.
    public func decide(
        cost: Int, used: Int, limit: Int, period: QuotaPeriod, now: Date, lastPacedCharge: Date?
    ) -> Decision {
        let reserve = Int((Double(limit) * min(max(reserveFraction, 0), 1)).rounded(.up))
        let spendable = QuotaLimits.remaining(limit: limit, used: QuotaLimits.saturatingSum(used, reserve))
        let timeLeft = period.end.timeIntervalSince(now)
        let length = period.length
        guard timeLeft > 0, length > 0 else { return .allowed(paced: false) }
        // An even share of the rest of the window: (limit - reserve) × timeLeft / length.
        let evenShare = Double(max(limit - reserve, 0)) * timeLeft / length
        guard Double(spendable) < evenShare else { return .allowed(paced: false) }
        guard spendable >= max(cost, 1) else { return .wait(until: period.end) }
        let interval = timeLeft / Double(spendable) * Double(max(cost, 1))
        if let last = lastPacedCharge, now < last.addingTimeInterval(interval) {
            return .wait(until: last.addingTimeInterval(interval))
        }
        return .allowed(paced: true)
    }
}
