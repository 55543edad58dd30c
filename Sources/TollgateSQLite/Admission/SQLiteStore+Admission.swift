import Foundation
import TollgateCore

extension SQLiteStore: AdmissionStorage, GateStorage {
    public func admit(_ request: AdmissionRequest) async throws -> AdmissionOutcome {
        try await writeKeepingRecentEntries { db in try AdmissionTable.admit(db, request) }
    }

    /// The lease and the admission in one `BEGIN IMMEDIATE` transaction. See
    /// ``GateStorage/admit(_:leasing:lease:)``.
    /// - Parameters:
    ///   - request: The admission.
    ///   - resourceKey: The resource whose identical requests coalesce.
    ///   - lease: The lease this request asks for.
    /// - Returns: The lease in force, and the admission when the lease was taken.
    /// - Throws: ``StoreError``; nothing is written then.
    public func admit(_ request: AdmissionRequest, leasing resourceKey: String, lease: CoalescingLease) async throws
        -> LeasedAdmission {
        try await writeKeepingRecentEntries { db in
            let running = try CoalescingLeaseTable.acquire(db, resourceKey: resourceKey, lease: lease)
            guard running.holder == lease.holder else { return LeasedAdmission(lease: running, outcome: nil) }
            return LeasedAdmission(lease: running, outcome: try AdmissionTable.admit(db, request))
        }
    }

    public func settleAttempt(_ settlement: AttemptSettlement) async throws -> AttemptSettlementResult {
        try await writeKeepingRecentEntries { db in try AdmissionTable.settle(db, settlement) }
    }
}

/// The admission and the settlement as compositions of each service's table operations inside
/// the caller's transaction.
enum AdmissionTable {
    static func admit(_ db: Database, _ request: AdmissionRequest) throws -> AdmissionOutcome {
        let now = request.quota.at
        let circuit = try CircuitTable.admit(db, endpoint: request.endpoint, policy: request.circuitPolicy,
                                             probeToken: request.probeToken, now: now)
        guard circuit.decision.isAllowed else { return .refusedByCircuit(circuit) }

        // The throttle slot and the charge stand or fall together: the window is read first and
        // written only once the quota has paid, so a refusal needs no savepoint to undo it.
        let window = try ThrottleTable.evaluate(db, endpoint: request.endpoint, limit: request.throttleLimit, at: now)
        let throttle = window.admission
        guard throttle.allowed else {
            try ThrottleTable.save(db, window, admitting: false)
            try releaseProbe(db, circuit, request)
            return .throttled(circuit: circuit, throttle: throttle)
        }
        switch try QuotaTable.reserve(db, request.quota) {
        case .reserved(let charge):
            try ThrottleTable.save(db, window, admitting: true)
            return .admitted(circuit: circuit, throttle: throttle, charge: charge)
        case .refused(let refusal):
            try ThrottleTable.save(db, window, admitting: false)
            try releaseProbe(db, circuit, request)
            return .refusedByQuota(circuit: circuit, refusal: refusal)
        }
    }

    static func settle(_ db: Database, _ settlement: AttemptSettlement) throws -> AttemptSettlementResult {
        let circuit = try CircuitTable.record(db, outcome: settlement.outcome, endpoint: settlement.endpoint,
                                              probeToken: settlement.probeToken, policy: settlement.circuitPolicy,
                                              now: settlement.at)
        let refund = try settlement.refundReservationID.map { id in
            try QuotaTable.refund(db, reservationID: id, at: settlement.at, reason: settlement.refundReason)
        }
        let costs = try settlement.actualCosts.map { cost in
            try QuotaTable.settle(db, reservationID: cost.reservationID, bucket: cost.bucket, actualUnits: cost.units,
                                  at: settlement.at, detail: cost.source)
        }
        // Before the exhausted mark: a reset the server announced with its "quota spent" moves the
        // window's end, and the mark lasts until that end.
        let announcements = try settlement.announcements.map { try QuotaTable.announce(db, $0) }
        let exhaustion = try settlement.exhaustedBucket.map { bucket in
            try QuotaTable.markExhausted(db, bucket: bucket.bucket, configuredLimit: bucket.configuredLimit,
                                         endpoint: settlement.endpoint, at: settlement.at)
        }
        return AttemptSettlementResult(circuit: circuit, refund: refund, exhaustion: exhaustion, costs: costs,
                                       announcements: announcements)
    }

    /// A request refused after the circuit chose it as the probe gives the lease back at once, so
    /// the next caller can probe instead of waiting for the lease to expire.
    private static func releaseProbe(_ db: Database, _ circuit: CircuitAdmission, _ request: AdmissionRequest) throws {
        guard circuit.decision.probe != nil else { return }
        _ = try CircuitTable.record(db, outcome: .neutral, endpoint: request.endpoint, probeToken: request.probeToken,
                                    policy: request.circuitPolicy, now: request.quota.at)
    }
}
