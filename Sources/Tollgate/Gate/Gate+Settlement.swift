import Foundation
import Logging

extension Gate {
    /// An attempt's settlement as the store writes it, with what the gate reports of it.
    struct PendingSettlement: Sendable {
        var settlement: AttemptSettlement
        var reservation: QuotaReservation?
        var refundReason: String
        /// The buckets a "quota spent" answer closes (``spentBuckets(charged:announcements:)``);
        /// the first of the endpoint's is the settlement's own `exhaustedBucket`.
        var spentBuckets: [String] = []

        /// The units the settlement gives back to the reservation's own bucket: the whole charge
        /// for a refund, the difference for a cost settled below it (negative above it).
        var unitsReturned: Int {
            guard let reservation else { return 0 }
            if settlement.refundReservationID != nil { return reservation.cost }
            guard let cost = settlement.actualCosts.first(where: { $0.bucket == reservation.bucket }) else { return 0 }
            return reservation.cost - cost.units
        }
    }

    /// What a settlement will do to this process's readings of its buckets, applied before its
    /// write (``QuotaLedger/anticipate(_:returning:to:)``): the answer's own description of them
    /// (the proxy's `RateLimit`) is then what the ledger will hold.
    func anticipate(_ pending: PendingSettlement) {
        quota.anticipate(pending.settlement.announcements, returning: pending.unitsReturned, to: pending.reservation?.bucket)
    }

    /// The store's record of the machine's settlement of an attempt.
    /// - Parameter answer: The server's answer, when one came: what it announced about the
    ///   buckets, and the actual cost it tells, are settled with the attempt.
    /// - Throws: A configuration error of the cost table (an exhausted bucket it does not know).
    func pendingSettlement(
        _ settlement: GateRequestStateMachine.Settlement, admitted: Admitted, _ request: GateRequest,
        answer: Exchange?
    ) throws -> PendingSettlement {
        let endpoint = request.endpoint
        let reservation = admitted.reservation
        let refundReason = switch settlement.refundReason {
        case .neverSent(let error): "never sent: \(error)"
        case .notModified, nil: "304 Not Modified"
        }
        let price = quota.price(of: endpoint)
        let bucket = reservation?.bucket ?? price.bucket
        let announced = try announcements(in: answer, endpoint: endpoint)
        let spent = settlement.quotaSpent
            ? Self.spentBuckets(charged: price.charges.map(\.bucket), announcements: announced) : []
        let record = AttemptSettlement(
            endpoint: endpoint, outcome: settlement.outcome, probeToken: admitted.probeToken,
            circuitPolicy: configuration.circuit.policy(for: endpoint),
            refundReservationID: settlement.refunds ? reservation?.id : nil, refundReason: refundReason,
            exhaustedBucket: spent.contains(bucket)
                ? .init(bucket: bucket, configuredLimit: try quota.configuredLimit(of: bucket))
                : nil,
            actualCosts: settlement.refunds ? [] : settledCosts(settlement, of: reservation)
                ?? actualCosts(of: reservation, answer: answer, request),
            announcements: announced,
            at: clock.now()
        )
        return PendingSettlement(settlement: record, reservation: reservation, refundReason: refundReason,
                                 spentBuckets: spent)
    }

    /// The buckets a "quota spent" answer closes: those of the endpoint's buckets that the answer
    /// itself announces at nothing left, or, when it announces none so, every bucket the endpoint
    /// is charged in. An LLM API's `429` says which limit it hit (`x-ratelimit-remaining-tokens: 0`
    /// beside requests to spare): closing the requests bucket too would refuse calls the API
    /// takes, such as listing its models. Google's `403 quotaExceeded` announces nothing, so it
    /// closes all of the endpoint's buckets, and no other.
    /// - Parameters:
    ///   - charged: The buckets the endpoint is charged in, its own first.
    ///   - announcements: What the answer announced about them.
    /// - Returns: The buckets to mark spent.
    static func spentBuckets(charged: [String], announcements: [QuotaAnnouncement]) -> [String] {
        let announcedSpent = Set(announcements.filter { $0.remaining <= 0 }.map(\.bucket))
        let spent = charged.filter(announcedSpent.contains)
        return spent.isEmpty ? charged : spent
    }

    /// A `304` that costs fewer units than the call: its charge settled at them.
    func settledCosts(
        _ settlement: GateRequestStateMachine.Settlement, of reservation: QuotaReservation?
    ) -> [QuotaActualCost]? {
        guard let units = settlement.settledUnits else { return nil }
        guard let reservation else { return [] }
        return [QuotaActualCost(reservationID: reservation.id, bucket: reservation.bucket, units: units,
                                source: QuotaLedger.notModifiedReason)]
    }

    /// The actual cost an answer tells, for an endpoint whose price is an estimate: in a field, the
    /// JSON body, or the last server-sent event that carries it.
    ///
    /// A success without it keeps the estimate (the API served it and did not say what it cost),
    /// and a streamed body's is read as it passes and settled at its end
    /// (``streamEnded(_:_:outgoing:stores:rule:lease:_:)``). An answer that is not a success (a
    /// redirect, a `400`, a `429`, a `500`) served nothing: it settles at what it reports, and at nothing when
    /// it reports nothing, so a failed LLM call no longer keeps its 1,000-token estimate. The
    /// request's own charge (its call, in the endpoint's bucket) is not this rule's: every attempt
    /// that reaches the server stays charged. A `304` never comes here.
    func actualCosts(of reservation: QuotaReservation?, answer: Exchange?, _ request: GateRequest) -> [QuotaActualCost] {
        guard let reservation, let answer, let rule = quota.price(of: request.endpoint).actualCost else { return [] }
        let status = answer.response.status.code
        guard status != 304 else { return [] }
        let succeeded = (200..<300).contains(status)
        let body = answer.stream == nil ? answer.body : nil
        let reported = StreamedCostReader.read(rule, fields: answer.response.headerFields, body: body)
        guard let units = reported ?? (succeeded ? nil : 0) else {
            request.logger.debug("the answer does not tell its actual cost; the estimate stands",
                                 metadata: ["gate.endpoint": "\(request.endpoint)", "quota.source": "\(rule.source)"])
            return []
        }
        let bucket = rule.bucket ?? reservation.bucket
        return [QuotaActualCost(
            reservationID: reservation.id, bucket: bucket, units: quota.settleable(units, in: bucket),
            source: reported == nil ? "a \(status) answer, which reports no \(rule.source)" : rule.source.description
        )]
    }

    /// What a network answer's fields announce about the buckets its endpoint is charged in, for
    /// each bucket that follows announced limits. (Answers from the cache never come here.)
    func announcements(in answer: Exchange?, endpoint: String) throws -> [QuotaAnnouncement] {
        let configuration = quota.configuration
        guard let answer, !configuration.announcedLimits.isEmpty else { return [] }
        let now = clock.now()
        let announced = AnnouncedLimit.parse(answer.response.headerFields, at: now)
        guard !announced.isEmpty else { return [] }
        return try quota.price(of: endpoint).charges.compactMap { charge in
            guard let selector = configuration.announcedLimits[charge.bucket],
                  let limit = selector.select(from: announced) else { return nil }
            return QuotaAnnouncement(
                bucket: charge.bucket, endpoint: endpoint, configuredLimit: try quota.configuredLimit(of: charge.bucket),
                window: configuration.window(of: charge.bucket), remaining: limit.remaining, resetsAt: limit.resetsAt,
                at: now
            )
        }
    }

    /// Writes a settlement in a transaction of its own: at once, or after the answer when the
    /// cache's write did not carry it.
    /// - Returns: The circuit's state after it.
    /// - Throws: The store's error.
    @discardableResult
    func settle(_ pending: PendingSettlement, _ account: inout GateRequest.Account) async throws -> CircuitState {
        let result = try await storage.settleAttempt(pending.settlement)
        return await report(result, of: pending, &account)
    }

    /// A settlement that could not be written, and goes unrecorded by the ledger failure policy.
    func logUnrecordedSettlement(_ error: any Error, _ request: GateRequest.Account) {
        request.logger.warning(
            "the ledger cannot be written; the answer is not recorded (ledger failure policy: fail open)",
            metadata: ["gate.endpoint": "\(request.endpoint)", "error": "\(error)"]
        )
    }

    /// Logs and counts what a settlement did, wherever it was written.
    func report(
        _ settlement: AttemptSettlementResult, of pending: PendingSettlement, _ request: inout GateRequest.Account
    ) async -> CircuitState {
        let endpoint = request.endpoint
        if let reservation = pending.reservation, let refunded = settlement.refund,
           case .refunded(let units) = quota.report(refunded, of: reservation, reason: pending.refundReason) {
            request.totals.refunded(units)
        }
        if let exhaustion = settlement.exhaustion {
            request.totals.quotaSpentUntil = quota.report(exhaustion, endpoint: endpoint)
        }
        for (cost, settled) in zip(pending.settlement.actualCosts, settlement.costs) {
            guard case .settled(let difference, let actual, let overLimit) = settled else { continue }
            if cost.bucket == pending.reservation?.bucket { request.totals.charged(difference) }
            request.logger.debug("Settled \(endpoint) at its actual cost", metadata: [
                "quota.bucket": "\(cost.bucket)", "quota.actual": "\(actual)", "quota.difference": "\(difference)",
                "quota.source": "\(cost.source)",
            ])
            if overLimit {
                request.logger.warning(
                    "The actual cost of \(endpoint) (\(actual) units) took bucket \(cost.bucket) past its limit; it refuses until its window has room again",
                    metadata: ["quota.bucket": "\(cost.bucket)"])
            }
        }
        for (announcement, outcome) in zip(pending.settlement.announcements, settlement.announcements) {
            quota.remember(outcome, of: announcement.bucket)
        }
        for outcome in settlement.announcements where outcome.unitsFollowed > 0 || outcome.movedReset {
            request.logger.debug("The server's announced limit moved the ledger", metadata: [
                "gate.endpoint": "\(endpoint)", "quota.followed": "\(outcome.unitsFollowed)",
                "quota.remaining": "\(outcome.remaining)", "quota.resets": "\(outcome.period.end)",
            ])
        }
        // The settlement's transaction marked the endpoint's own bucket; the others the answer closes, here.
        for spent in pending.spentBuckets where spent != pending.settlement.exhaustedBucket?.bucket {
            do {
                let until = try await quota.markExhausted(bucket: spent, endpoint: endpoint)
                request.totals.quotaSpentUntil = request.totals.quotaSpentUntil ?? until
            } catch {
                request.logger.warning("could not mark a bucket exhausted",
                                       metadata: ["quota.bucket": "\(spent)", "error": "\(error)"])
            }
        }
        let state = circuit.report(settlement.circuit, endpoint: endpoint)
        metrics.record(state, endpoint: endpoint)
        return state
    }

    /// Reports bookkeeping the cache's write carried, or writes on its own what it did not carry.
    /// - Throws: The store's error when the settlement cannot be written and the ledger failure
    ///   policy fails closed.
    func finish(
        _ bookkeeping: AnswerBookkeeping, written: AnswerBookkeepingResult?, pending: PendingSettlement?,
        _ request: inout GateRequest.Account
    ) async throws {
        if let written {
            if let pending, let result = written.settlement {
                _ = await report(result, of: pending, &request)
            }
            return
        }
        if let release = bookkeeping.leaseRelease {
            // First, so that a settlement that fails does not keep other processes waiting; a
            // lease that cannot be given back lapses on its own.
            try? await storage.releaseCoalescingLease(resourceKey: release.resourceKey, holder: release.holder)
        }
        guard let pending else { return }
        do {
            try await settle(pending, &request)
        } catch where GateRequestStateMachine.goesUnrecorded(error, under: configuration.ledgerFailurePolicy) {
            // The answer is here: with a ledger that cannot be written it is delivered unrecorded.
            logUnrecordedSettlement(error, request)
        }
    }
}
