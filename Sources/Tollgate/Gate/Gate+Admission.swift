import Foundation
import Logging

extension Gate {
    /// What one admission granted.
    struct Admitted {
        /// The charge; nil when the ledger could not be written and the policy fails open.
        var reservation: QuotaReservation?
        /// The probe token, when this attempt is the half-open probe.
        var probeToken: String?
    }

    /// Steps 2–4 for one attempt, in one transaction: circuit, throttle, quota. Reports the
    /// store's verdict to the machine and returns its next action; `admitted` holds the grant.
    /// - Parameters:
    ///   - admission: What the machine asks for.
    ///   - request: The request.
    ///   - machine: The request's machine.
    ///   - flight: The coalescing flight this request leads, whose store lease the first
    ///     admission takes in its transaction, dated at each admission (a throttle wait renews it).
    ///   - admitted: Set to the grant when the machine says send.
    /// - Throws: A configuration error of the cost table.
    func admit(
        _ admission: GateRequestStateMachine.Admission, _ request: inout GateRequest,
        machine: inout GateRequestStateMachine, flight: Flight?, admitted: inout Admitted
    ) async throws -> GateRequestStateMachine.AdmissionAction {
        let endpoint = request.endpoint
        let probeToken = CircuitBreaker.newProbeToken()
        let policy = configuration.circuit.policy(for: endpoint)
        let limit = configuration.throttle.limit(for: endpoint)
        await quota.noteUnknownEndpoint(endpoint)
        // Earlier answers' settlements first: the ledger and the circuit as those answers left them.
        await afterAnswerWrites.waitForQueued()
        var charge = try quota.reservationRequest(endpoint: endpoint, cost: request.options.cost)
        charge.detail = request.batchedIDs.map(QuotaRules.batchDetail(ids:))
        let lease = admission.takesLease ? flight.flatMap { flight in flight.leaseHolder.map { (flight.key, $0) } } : nil
        let outcome: AdmissionOutcome
        do {
            let asked = AdmissionRequest(
                endpoint: endpoint, circuitPolicy: policy, probeToken: probeToken, throttleLimit: limit, quota: charge
            )
            if let (resourceKey, holder) = lease {
                let leased = try await storage.admit(asked, leasing: resourceKey, lease: coalescingLease(holder: holder))
                guard let leasedOutcome = leased.outcome else { throw AnotherProcessLeads(lease: leased.lease) }
                outcome = leasedOutcome
            } else {
                outcome = try await storage.admit(asked)
            }
        } catch {
            return machine.admissionFailed(error)
        }
        switch outcome {
        case .admitted(let circuitAdmission, let throttleAdmission, let quotaCharge):
            let decision = circuit.report(circuitAdmission, endpoint: endpoint)
            throttle.report(throttleAdmission, endpoint: endpoint)
            let reservation = try quota.report(.reserved(quotaCharge), endpoint: endpoint, cost: charge.cost)
            admitted = Admitted(reservation: reservation, probeToken: decision.probe?.token)
            return machine.admitted(isProbe: decision.probe != nil)
        case .refusedByCircuit(let circuitAdmission):
            let decision = circuit.report(circuitAdmission, endpoint: endpoint)
            metrics.record(circuitAdmission.record.state, endpoint: endpoint)
            return machine.refused(.circuitOpen(retryAfter: decision.retryAfter ?? 0))
        case .throttled(_, let throttleAdmission):
            throttle.report(throttleAdmission, endpoint: endpoint)
            return machine.throttled(retryAfter: throttleAdmission.retryAfter ?? limit.window.timeInterval)
        case .refusedByQuota(_, let refusal):
            // The ledger logs the refusal and says what it means, as a value: its error names the
            // bucket that could not pay (with several buckets, not always the first).
            switch quota.verdict(on: refusal, endpoint: endpoint) {
            case .wait(let retryAfter):
                // A paced bucket's next slot is a wait, as a full throttle window's is.
                return machine.throttled(retryAfter: max(retryAfter, 0.001))
            case .refuse(let error):
                return machine.refused(error)
            }
        }
    }

    /// The refusal for a server's "quota spent" answer when nothing stored can stand in, timed and
    /// worded by the spent bucket's own window: an hourly bucket reopens within the hour, not at
    /// the Pacific midnight.
    func serverQuotaRefusal(_ request: GateRequest) -> TollgateError {
        .quotaExceeded(endpoint: request.endpoint, cost: request.options.cost ?? quota.price(of: request.endpoint).units,
                       remaining: 0, resetsAt: request.account.totals.quotaSpentUntil ?? quota.resetInstant)
    }
}
