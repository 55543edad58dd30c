import Foundation

/// The quota machine's answer for one bucket: the verdict, the window it was decided in, and the
/// writes to make.
public struct QuotaDecision: Sendable, Hashable {
    /// Admit, refuse or wait.
    public var verdict: QuotaVerdict
    /// The window in force.
    public var period: QuotaPeriod
    /// The units the window used before this charge.
    public var used: Int
    /// The limit in force.
    public var limit: Int
    /// Writes made whatever the verdict (the bucket's row brought up to date, its window noted).
    public var bookkeeping: [QuotaWrite]
    /// Writes that make the charge: made only when the verdict admits and every other bucket of the
    /// same call admits too.
    public var charges: [QuotaWrite]

    /// Creates a decision.
    /// - Parameters:
    ///   - verdict: Admit, refuse or wait.
    ///   - period: The window in force.
    ///   - used: The window's units before the charge.
    ///   - limit: The limit in force.
    ///   - bookkeeping: Writes made whatever the verdict.
    ///   - charges: Writes made when the whole call admits.
    public init(
        verdict: QuotaVerdict, period: QuotaPeriod, used: Int, limit: Int, bookkeeping: [QuotaWrite],
        charges: [QuotaWrite]
    ) {
        self.verdict = verdict
        self.period = period
        self.used = used
        self.limit = limit
        self.bookkeeping = bookkeeping
        self.charges = charges
    }

    /// What the verdict means for the reservation: admitted, or refused with the refusal a store
    /// returns (a paced wait is a refusal whose ``QuotaRefusal/retryAt`` is the slot).
    public enum Outcome: Sendable, Hashable {
        /// Admitted: the window's units after the charge and the warning levels it crossed first.
        case admitted(usedAfter: Int, warningsCrossed: [Int])
        /// Refused or told to wait.
        case refused(QuotaRefusal)
    }

    /// The verdict as the store reports it.
    /// - Parameters:
    ///   - bucket: The bucket decided.
    ///   - endpoint: The endpoint that asked.
    ///   - cost: The units asked for.
    ///   - day: The Pacific day of the attempt.
    /// - Returns: Admitted, or the refusal.
    public func outcome(bucket: String, endpoint: String, cost: Int, day: PacificDay) -> Outcome {
        let reason: QuotaRefusal.Reason, retryAt: Date?
        switch verdict {
        case .admit(let usedAfter, let crossed): return .admitted(usedAfter: usedAfter, warningsCrossed: crossed)
        case .refuse(let refused): (reason, retryAt) = (refused, nil)
        case .wait(let until): (reason, retryAt) = (.paced, until)
        }
        return .refused(QuotaRefusal(reason: reason, bucket: bucket, endpoint: endpoint, cost: cost, day: day,
                                     bucketUnitsUsed: used, limit: limit, period: period, retryAt: retryAt))
    }
}
