/// An admission that first takes a coalescing lease: the answer of
/// ``GateStorage/admit(_:leasing:lease:)``.
public struct LeasedAdmission: Sendable, Hashable {
    /// The lease in force on the resource afterwards: the one asked for when it was taken, another
    /// holder's when that one's is still running.
    public var lease: CoalescingLease
    /// The admission, made only when the lease asked for was taken: nil when another holder leads,
    /// and then nothing was charged.
    public var outcome: AdmissionOutcome?

    /// Creates the answer.
    /// - Parameters:
    ///   - lease: The lease in force afterwards.
    ///   - outcome: The admission, or nil when another holder leads.
    public init(lease: CoalescingLease, outcome: AdmissionOutcome?) {
        self.lease = lease
        self.outcome = outcome
    }
}
