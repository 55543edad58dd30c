import Foundation

/// Everything the gate asks before one attempt reaches the network, answered in one transaction.
public struct AdmissionRequest: Sendable, Hashable {
    /// The endpoint.
    public var endpoint: String
    /// The endpoint's circuit policy.
    public var circuitPolicy: CircuitPolicy
    /// The token that identifies this attempt if it becomes the half-open probe.
    public var probeToken: String
    /// The endpoint's throttle limit.
    public var throttleLimit: ThrottleLimit
    /// The quota charge to make.
    public var quota: QuotaReservationRequest

    /// Creates a request; every part shares the quota request's instant.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - circuitPolicy: Its circuit policy.
    ///   - probeToken: This attempt's probe token.
    ///   - throttleLimit: Its throttle limit.
    ///   - quota: The charge to make.
    public init(endpoint: String, circuitPolicy: CircuitPolicy, probeToken: String, throttleLimit: ThrottleLimit,
                quota: QuotaReservationRequest) {
        self.endpoint = endpoint
        self.circuitPolicy = circuitPolicy
        self.probeToken = probeToken
        self.throttleLimit = throttleLimit
        self.quota = quota
    }
}

/// How one admission ended. Each step runs only when the one before it let the request through,
/// in DESIGN.md's order: circuit, throttle, quota.
public enum AdmissionOutcome: Sendable, Hashable {
    /// Let through: counted in the throttle window and charged.
    case admitted(circuit: CircuitAdmission, throttle: ThrottleAdmission, charge: QuotaCharge)
    /// The circuit refused; nothing else was asked.
    case refusedByCircuit(CircuitAdmission)
    /// The throttle window is full; nothing was charged, and a probe lease taken was given back.
    case throttled(circuit: CircuitAdmission, throttle: ThrottleAdmission)
    /// The quota cannot pay; the throttle slot and a probe lease taken were given back.
    case refusedByQuota(circuit: CircuitAdmission, refusal: QuotaRefusal)
}

/// What one attempt's answer changes, applied in one transaction: the circuit's outcome, a refund,
/// and the server's word that the day's quota is spent.
public struct AttemptSettlement: Sendable, Hashable {
    /// The endpoint.
    public var endpoint: String
    /// What the answer tells the circuit.
    public var outcome: CircuitOutcome
    /// The probe token, when the attempt was the half-open probe.
    public var probeToken: String?
    /// The endpoint's circuit policy.
    public var circuitPolicy: CircuitPolicy
    /// The charge to refund (a 304 the policy does not charge), if any.
    public var refundReservationID: Int64?
    /// Why the refund is made.
    public var refundReason: String?
    /// A bucket the server said is spent, with the limit configuration gives it.
    public struct ExhaustedBucket: Sendable, Hashable {
        /// The bucket.
        public var bucket: String
        /// Its configured daily limit (the row is created with it if missing).
        public var configuredLimit: Int

        /// Creates the mark's target.
        /// - Parameters:
        ///   - bucket: The bucket.
        ///   - configuredLimit: Its configured daily limit.
        public init(bucket: String, configuredLimit: Int) {
            self.bucket = bucket
            self.configuredLimit = configuredLimit
        }
    }

    /// The bucket the server said is spent, if it said so.
    public var exhaustedBucket: ExhaustedBucket?
    /// The charges whose actual cost the answer told (a body's `usage.total_tokens`), settled in
    /// the same transaction.
    public var actualCosts: [QuotaActualCost]
    /// What the answer's fields announced about the buckets it was charged in (never set for an
    /// answer from the cache).
    public var announcements: [QuotaAnnouncement]
    /// When the answer came.
    public var at: Date

    /// Creates a settlement.
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - outcome: What the answer tells the circuit.
    ///   - probeToken: The probe token, if the attempt was the probe.
    ///   - circuitPolicy: The endpoint's circuit policy.
    ///   - refundReservationID: A charge to refund.
    ///   - refundReason: Why.
    ///   - exhaustedBucket: The bucket the server said is spent.
    ///   - actualCosts: Charges to settle at their actual cost.
    ///   - announcements: What the answer announced about its buckets.
    ///   - at: When the answer came.
    public init(endpoint: String, outcome: CircuitOutcome, probeToken: String?, circuitPolicy: CircuitPolicy,
                refundReservationID: Int64? = nil, refundReason: String? = nil,
                exhaustedBucket: ExhaustedBucket? = nil, actualCosts: [QuotaActualCost] = [],
                announcements: [QuotaAnnouncement] = [], at: Date) {
        self.actualCosts = actualCosts
        self.announcements = announcements
        self.endpoint = endpoint
        self.outcome = outcome
        self.probeToken = probeToken
        self.circuitPolicy = circuitPolicy
        self.refundReservationID = refundReservationID
        self.refundReason = refundReason
        self.exhaustedBucket = exhaustedBucket
        self.at = at
    }
}

/// What a settlement changed.
public struct AttemptSettlementResult: Sendable, Hashable {
    /// The circuit's recording of the outcome.
    public var circuit: CircuitRecording
    /// The refund, when one was asked.
    public var refund: QuotaRefundOutcome?
    /// The exhaustion mark, when the server said the quota is spent.
    public var exhaustion: QuotaExhaustion?
    /// The actual costs settled, in the order asked.
    public var costs: [QuotaCostSettlement]
    /// What the ledger did with each announcement, in the order given.
    public var announcements: [QuotaAnnouncementOutcome]

    /// Creates a settlement's result. Public so that a store in another module (the PostgreSQL
    /// store) can implement ``AdmissionStorage``.
    /// - Parameters:
    ///   - circuit: The circuit's recording of the outcome.
    ///   - refund: The refund, when one was asked.
    ///   - exhaustion: The exhaustion mark, when the server said the quota is spent.
    ///   - costs: The actual costs settled.
    ///   - announcements: What the ledger did with each announcement.
    public init(
        circuit: CircuitRecording, refund: QuotaRefundOutcome?, exhaustion: QuotaExhaustion?,
        costs: [QuotaCostSettlement] = [], announcements: [QuotaAnnouncementOutcome] = []
    ) {
        self.costs = costs
        self.announcements = announcements
        self.circuit = circuit
        self.refund = refund
        self.exhaustion = exhaustion
    }
}

/// The gate's hot path as two store operations per attempt: one admission, one settlement, each a
/// single `BEGIN IMMEDIATE` transaction, instead of one per service.
public protocol AdmissionStorage: Sendable {
    /// Asks the circuit, the throttle and the quota ledger, in that order, in one transaction.
    /// - Parameter request: The endpoint and what each step needs.
    /// - Returns: Admitted with the charge, or which step refused.
    /// - Throws: ``StoreError`` for invalid arguments; storage errors.
    func admit(_ request: AdmissionRequest) async throws -> AdmissionOutcome

    /// Records an attempt's answer in the circuit, refunds its charge and marks the bucket spent, as
    /// the settlement asks, in one transaction.
    /// - Parameter settlement: What the answer changes.
    /// - Returns: What changed.
    /// - Throws: ``StoreError`` for invalid arguments; storage errors.
    func settleAttempt(_ settlement: AttemptSettlement) async throws -> AttemptSettlementResult
}

/// Every store operation the gate needs, from one backend.
public protocol GateStorage: CacheStorage, CircuitStorage, ThrottleStorage, QuotaStorage, AdmissionStorage {
    /// Takes the coalescing lease on a resource and, when this caller now holds it, admits the
    /// attempt: the leading request's one write before it reaches the network (DESIGN.md: one
    /// write transaction on a request's path). The lease stays taken whatever the admission
    /// decides; the leader gives it back when its flight ends.
    ///
    /// A store that can do both in one transaction does (``SQLiteStore``); the default takes the
    /// lease with ``CacheStorage/acquireCoalescingLease(resourceKey:lease:)`` and then admits with
    /// ``AdmissionStorage/admit(_:)``.
    /// - Parameters:
    ///   - request: The admission.
    ///   - resourceKey: The resource whose identical requests coalesce.
    ///   - lease: The lease this request asks for.
    /// - Returns: The lease in force, and the admission when the lease was taken.
    /// - Throws: A storage error. A store that does both in one transaction then wrote nothing; the
    ///   default may leave the lease taken, to lapse or be given back with the flight.
    func admit(_ request: AdmissionRequest, leasing resourceKey: String, lease: CoalescingLease) async throws
        -> LeasedAdmission
}

extension GateStorage {
    /// The lease, then the admission, in two transactions. See ``GateStorage/admit(_:leasing:lease:)``.
    /// - Parameters:
    ///   - request: The admission.
    ///   - resourceKey: The resource whose identical requests coalesce.
    ///   - lease: The lease this request asks for.
    /// - Returns: The lease in force, and the admission when the lease was taken.
    /// - Throws: A storage error.
    public func admit(_ request: AdmissionRequest, leasing resourceKey: String, lease: CoalescingLease) async throws
        -> LeasedAdmission {
        let running = try await acquireCoalescingLease(resourceKey: resourceKey, lease: lease)
        guard running.holder == lease.holder else { return LeasedAdmission(lease: running, outcome: nil) }
        return LeasedAdmission(lease: running, outcome: try await admit(request))
    }
}
