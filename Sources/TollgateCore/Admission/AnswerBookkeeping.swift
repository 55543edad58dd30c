import Foundation

/// The ledger's writes that follow an answer, made in the same transaction as the cache's write of
/// that answer (a `304`'s revision, a `200` stored), so that a request writes once after its
/// answer instead of three times.
///
/// Both parts are optional; an empty value writes nothing beyond the cache's own change. The parts
/// are applied whatever the cache's write decides — a `304` that matches no stored entry still
/// settles its attempt and gives its lease back.
public struct AnswerBookkeeping: Sendable, Hashable {
    /// A coalescing lease to give back, when the holder still holds it.
    public struct LeaseRelease: Sendable, Hashable {
        /// The resource the lease is on.
        public var resourceKey: String
        /// Who holds it.
        public var holder: String

        /// Creates a release.
        /// - Parameters:
        ///   - resourceKey: The resource the lease is on.
        ///   - holder: Who holds it.
        public init(resourceKey: String, holder: String) {
            self.resourceKey = resourceKey
            self.holder = holder
        }
    }

    /// The attempt's settlement: its outcome for the circuit, its refund, the server's "quota spent".
    public var settlement: AttemptSettlement?
    /// The lease the request held while its answer was on the way.
    public var leaseRelease: LeaseRelease?

    /// Creates bookkeeping.
    /// - Parameters:
    ///   - settlement: The attempt to settle, if any.
    ///   - leaseRelease: The lease to give back, if any.
    public init(settlement: AttemptSettlement? = nil, leaseRelease: LeaseRelease? = nil) {
        self.settlement = settlement
        self.leaseRelease = leaseRelease
    }

    /// Whether there is nothing to write.
    public var isEmpty: Bool { settlement == nil && leaseRelease == nil }
}

/// What a cache write that carried ``AnswerBookkeeping`` did on the ledger's side.
public struct AnswerBookkeepingResult: Sendable, Hashable {
    /// The settlement's result, when there was one to apply.
    public var settlement: AttemptSettlementResult?

    /// Creates a result.
    /// - Parameter settlement: The settlement's result.
    public init(settlement: AttemptSettlementResult? = nil) {
        self.settlement = settlement
    }
}
