import Foundation
import PostgresNIO
import TollgateCore

/// The gate's hot path over PostgreSQL: the circuit, the throttle and the quota in one
/// transaction per attempt, and the answer's consequences in one more.
///
/// The usual admission is one statement, `tollgate_admit_batch` (migrations 0003 to 0005): a closed
/// circuit, an endpoint and a bucket whose rows exist and are current, a bucket counted by the
/// Pacific day without pacing, room in the window and in the budget.
/// It holds the endpoint's throttle lock for that statement alone, where the full transaction
/// holds it across nine round trips, and it decides together the admissions of one kind that
/// arrived while the previous statement ran: one round trip and one commit for all of them.
///
/// Anything else, and every refusal, goes through the full transaction (a refusal so takes the
/// endpoint's lock twice: refusals are the rare case), whose steps are the statements their own
/// operations run, so the guarantees compose: the circuit's probe lease and counters are changed
/// under its row lock, the throttle's window under its limits row, the quota's check-and-charge in
/// one conditional upsert. A savepoint makes the throttle slot and the charge stand or fall together.
///
/// With the cache, the circuit, the throttle and the quota ledger also implemented, the store is a
/// `GateStorage`: the gate runs over it unchanged.
extension PostgresStore: AdmissionStorage, GateStorage {
    /// Asks the circuit, the throttle and the quota ledger, in that order, in one transaction.
    /// - Parameter request: The endpoint and what each step needs; its times are not used (the
    ///   database's clock decides).
    /// - Returns: Admitted with the charge, or which step refused.
    /// - Throws: `StoreRefusal.invalidArgument` for invalid arguments; ``PostgresStoreError`` when
    ///   the server fails.
    public func admit(_ request: AdmissionRequest) async throws -> AdmissionOutcome {
        try Self.validateCircuit(endpoint: request.endpoint, policy: request.circuitPolicy)
        try request.throttleLimit.validate(endpoint: request.endpoint)
        if let admitted = try await admitInOneStatement(request) { return admitted }
        return try await inTransaction("admitting a request to \(request.endpoint)") { [self] connection in
            let circuit = try await runCircuitEvent(connection, endpoint: request.endpoint) { record, now in
                var machine = CircuitStateMachine(
                    record: record, endpoint: request.endpoint, policy: request.circuitPolicy, now: now
                )
                let admission = machine.admit(probeToken: request.probeToken, now: now)
                return (machine, admission.transitions, admission)
            }
            guard circuit.decision.isAllowed else { return .refusedByCircuit(circuit) }

            // The throttle slot and the charge stand or fall together.
            try await connection.run("SAVEPOINT admission", logger: logger)
            let throttle = try await admitThrottled(connection, endpoint: request.endpoint, limit: request.throttleLimit)
            guard throttle.allowed else {
                try await connection.run("RELEASE SAVEPOINT admission", logger: logger)
                try await releaseProbe(connection, circuit, request)
                return .throttled(circuit: circuit, throttle: throttle)
            }
            let outcome: QuotaReservationOutcome
            do {
                outcome = try await reserve(connection, request.quota)
            } catch let refused as RefusedReservation {
                outcome = .refused(refused.refusal)
            }
            switch outcome {
            case .reserved(let charge):
                try await connection.run("RELEASE SAVEPOINT admission", logger: logger)
                return .admitted(circuit: circuit, throttle: throttle, charge: charge)
            case .refused(let refusal):
                try await connection.run("ROLLBACK TO SAVEPOINT admission", logger: logger)
                try await connection.run("RELEASE SAVEPOINT admission", logger: logger)
                try await releaseProbe(connection, circuit, request)
                return .refusedByQuota(circuit: circuit, refusal: refusal)
            }
        }
    }

    /// The usual admission in one round trip, or nil when it is not the usual case (see the type's
    /// discussion), having changed nothing: the caller then runs the full transaction. Invalid
    /// arguments are left to the full transaction too, so they are refused at the step, and with
    /// the message, they always were.
    ///
    /// Admissions of the same kind that arrive while one is on its way to the server go together in
    /// the next statement (``CallBatcher``), decided one after another in arrival order.
    private func admitInOneStatement(_ request: AdmissionRequest) async throws -> AdmissionOutcome? {
        let quota = request.quota
        // The function decides the Pacific day in SQL; another window, or pacing, is decided in
        // Swift by the full transaction (PostgresStore+QuotaWindows.swift).
        guard quota.additionalCharges.isEmpty, quota.window.isPacificDay, quota.pacing == nil, quota.detail == nil,
              (try? QuotaRules.validateCost(quota.cost, endpoint: quota.endpoint)) != nil,
              (try? QuotaRules.validateEndpoint(quota.endpoint)) != nil,
              (try? QuotaRules.validateLimit(quota.configuredLimit, bucket: quota.bucket)) != nil
        else { return nil }
        let kind = OneStatementAdmission.Kind(request)
        guard let answer = try await admissionBatches.call(quota.cost, key: kind, run: { [self] costs in
            try await runAdmissionBatch(kind, costs: costs)
        }) else { return nil }
        // The function admitted under a closed circuit, which allows and changes nothing:
        // the same state machine as the full path says so, for the same report.
        var machine = CircuitStateMachine(record: answer.circuit, endpoint: request.endpoint, policy: request.circuitPolicy, now: answer.now)
        let circuit = machine.admit(probeToken: request.probeToken, now: answer.now)
        let charge = QuotaCharge(
            reservationID: answer.reservationID, bucket: quota.bucket, endpoint: quota.endpoint, cost: quota.cost,
            day: answer.day, bucketUnitsUsed: answer.usedAfter, limit: answer.limit, warningsCrossed: answer.warningsCrossed
        )
        let throttle = ThrottleAdmission(allowed: true, count: answer.throttleCount, limit: request.throttleLimit.requests, retryAfter: nil)
        logger.debug("admitted in one statement", metadata: ["endpoint": "\(request.endpoint)"])
        return .admitted(circuit: circuit, throttle: throttle, charge: charge)
    }

    /// One call of `tollgate_admit_batch` (migration 0003) for admissions of one kind: an answer
    /// per cost, in order, nil where the full transaction must decide.
    private func runAdmissionBatch(_ kind: OneStatementAdmission.Kind, costs: [Int]) async throws -> [OneStatementAdmission?] {
        let declined = [OneStatementAdmission?](repeating: nil, count: costs.count)
        return try await withConnection("admitting \(costs.count) request(s) to \(kind.endpoint)") { [self] connection in
            // Nothing sent yet: the full transaction, which retries on another connection, takes over.
            guard !connection.isClosed else { return declined }
            logger.debug("admission batch", metadata: ["endpoint": "\(kind.endpoint)", "size": "\(costs.count)"])
            let rows: [PostgresRow]
            do {
                rows = try await connection.rows("""
                    SELECT * FROM tollgate_admit_batch(\(kind.endpoint), \(kind.requests), \(kind.windowMilliseconds),
                        \(kind.bucket), \(kind.chargedEndpoint), \(costs), \(kind.configuredLimit), \(kind.warningPercents))
                    """, logger: logger)
            } catch let error where PostgresErrorMapping.sqlState(of: error) != nil {
                // The server refused the statement (a deadlock, a timeout): it committed nothing, so
                // each call of the batch runs the full transaction, which retries what can be retried.
                // A connection lost after sending is not caught: whether it committed is unknown.
                logger.debug("admission batch declined", metadata: ["endpoint": "\(kind.endpoint)", "error": "\(error)"])
                return declined
            }
            guard rows.count == costs.count else { throw BatchSizeMismatch(inputs: costs.count, outputs: rows.count) }
            return try OneStatementAdmission.decode(rows)
        }
    }

    /// Records an attempt's answer in the circuit, refunds its charge, marks the bucket spent,
    /// settles actual costs and follows what the answer announced, as the settlement asks, in one
    /// transaction.
    /// - Parameter settlement: What the answer changes; its time is not used (the database's
    ///   clock decides).
    /// - Returns: What changed.
    /// - Throws: `StoreRefusal.invalidArgument` for invalid arguments or an unknown reservation;
    ///   ``PostgresStoreError`` when the server fails.
    public func settleAttempt(_ settlement: AttemptSettlement) async throws -> AttemptSettlementResult {
        try Self.validateCircuit(endpoint: settlement.endpoint, policy: settlement.circuitPolicy)
        return try await inTransaction("settling an attempt at \(settlement.endpoint)") { [self] connection in
            try await settle(connection, settlement)
        }
    }

    /// The settlement inside the caller's transaction: on its own, or beside a cache write.
    func settle(_ connection: PostgresConnection, _ settlement: AttemptSettlement) async throws -> AttemptSettlementResult {
        let circuit = try await runCircuitEvent(connection, endpoint: settlement.endpoint) { record, now in
            var machine = CircuitStateMachine(
                record: record, endpoint: settlement.endpoint, policy: settlement.circuitPolicy, now: now
            )
            let recording = machine.record(settlement.outcome, probeToken: settlement.probeToken, now: now)
            return (machine, recording.transitions, recording)
        }
        var refund: QuotaRefundOutcome?
        if let id = settlement.refundReservationID {
            refund = try await refundCharge(connection, reservationID: id, reason: settlement.refundReason)
        }
        var costs: [QuotaCostSettlement] = []
        for cost in settlement.actualCosts {
            costs.append(try await settleCost(
                connection, reservationID: cost.reservationID, bucket: cost.bucket, actualUnits: cost.units,
                detail: cost.source
            ))
        }
        // Before the exhausted mark: a reset the server announced with its "quota spent" moves the
        // window's end, and the mark lasts until that end.
        var announcements: [QuotaAnnouncementOutcome] = []
        for announcement in settlement.announcements {
            announcements.append(try await announce(connection, announcement))
        }
        var exhaustion: QuotaExhaustion?
        if let bucket = settlement.exhaustedBucket {
            exhaustion = try await markExhausted(
                connection, bucket: bucket.bucket, configuredLimit: bucket.configuredLimit,
                endpoint: settlement.endpoint
            )
        }
        return AttemptSettlementResult(circuit: circuit, refund: refund, exhaustion: exhaustion, costs: costs,
                                       announcements: announcements)
    }

    /// The ledger's writes that follow an answer, inside the caller's transaction (a cache write's).
    func record(_ connection: PostgresConnection, _ bookkeeping: AnswerBookkeeping) async throws -> AnswerBookkeepingResult {
        if let settlement = bookkeeping.settlement {
            try Self.validateCircuit(endpoint: settlement.endpoint, policy: settlement.circuitPolicy)
        }
        var result = AnswerBookkeepingResult()
        if let settlement = bookkeeping.settlement { result.settlement = try await settle(connection, settlement) }
        if let release = bookkeeping.leaseRelease {
            _ = try await connection.run(
                "DELETE FROM cache_leases WHERE resource_key = \(release.resourceKey) AND holder = \(release.holder)",
                logger: logger
            )
        }
        return result
    }

    /// A request refused after the circuit chose it as the probe gives the lease back at once, so
    /// the next caller can probe instead of waiting for the lease to expire.
    private func releaseProbe(
        _ connection: PostgresConnection, _ circuit: CircuitAdmission, _ request: AdmissionRequest
    ) async throws {
        guard circuit.decision.probe != nil else { return }
        _ = try await runCircuitEvent(connection, endpoint: request.endpoint) { record, now in
            var machine = CircuitStateMachine(
                record: record, endpoint: request.endpoint, policy: request.circuitPolicy, now: now
            )
            let recording = machine.record(.neutral, probeToken: request.probeToken, now: now)
            return (machine, recording.transitions, recording)
        }
    }
}
