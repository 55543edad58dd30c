import Foundation
import Logging
import Synchronization

/// The daily quota ledger: checks and charges each call's units before it is sent, so that no
/// process sharing the store ever spends more than a bucket's daily limit.
///
/// Usage is kept per Pacific day (the quota resets at midnight `America/Los_Angeles`, DST
/// included), per bucket and per endpoint, beside an append-only list of events that always sums
/// to it. A reservation is one `BEGIN IMMEDIATE` transaction; once the answer is known it is
/// settled: kept, or refunded (a 304, per the endpoint's policy).
///
/// ```swift
/// let ledger = try QuotaLedger(storage: store, configuration: .youTubeDataAPIv3, clock: SystemClock())
/// let reservation = try await ledger.reserve(endpoint: "search.list")   // throws quotaExceeded
/// let response = try await send(request)
/// try await ledger.settle(reservation, responseStatus: response.status.code)
/// ```
public final class QuotaLedger: Sendable {
    /// The cost table in force.
    public let configuration: QuotaConfiguration
    private let storage: any QuotaStorage
    let clock: any TollgateClock
    private let logger: Logger
    private let unknownEndpointsLogged = Mutex<Set<String>>([])
    /// The latest reading of each bucket by this process's reservations (see ``latestReading(of:)``).
    private let readings = Mutex<[String: QuotaBucketReading]>([:])

    /// Creates a ledger over a store.
    /// - Parameters:
    ///   - storage: Where usage and events live, such as an `SQLiteStore`.
    ///   - configuration: The cost table; the YouTube Data API v3's by default.
    ///   - clock: The wall clock that decides the Pacific day.
    ///   - logger: Where the ledger logs; the task's current logger by default.
    /// - Throws: ``QuotaLedgerError/invalidConfiguration(_:)`` when the cost table is inconsistent.
    public init(
        storage: any QuotaStorage,
        configuration: QuotaConfiguration = .youTubeDataAPIv3,
        clock: any TollgateClock = SystemClock(),
        logger: Logger = Logger.current
    ) throws(QuotaLedgerError) {
        try configuration.validate()
        self.storage = storage
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
    }

    // MARK: Reserving and settling

    /// Charges an endpoint's cost in its bucket for today's Pacific day, or refuses.
    ///
    /// One transaction checks the budget, charges it and appends the event, so concurrent
    /// reservations in any number of processes never spend more than the limit. A crash after it
    /// returns keeps the charge: the ledger never under-counts.
    /// - Parameters:
    ///   - endpoint: The endpoint, such as `search.list`. Unknown endpoints cost the default in the
    ///     default bucket (logged once per ledger).
    ///   - cost: Units to charge instead of the table's price (for an API that prices a call by
    ///     its parameters).
    /// - Returns: The reservation, to settle once the answer is known.
    /// - Throws: ``TollgateError/quotaExceeded(endpoint:cost:remaining:resetsAt:)`` when the bucket
    ///   cannot pay or the server said its quota is spent (nothing is charged);
    ///   ``QuotaLedgerError/negativeCost(endpoint:cost:)``, ``QuotaLedgerError/costTooLarge(endpoint:cost:)``;
    ///   storage errors.
    @discardableResult
    public func reserve(endpoint: String, cost: Int? = nil) async throws -> QuotaReservation {
        await noteUnknownEndpoint(endpoint)
        let request = try reservationRequest(endpoint: endpoint, cost: cost)
        return try report(try await storage.reserveQuota(request), endpoint: endpoint, cost: request.cost)
    }

    /// The store request that charges `endpoint` now: what ``reserve(endpoint:cost:)`` sends, for a
    /// caller that composes the reservation into a larger transaction (the gate's admission).
    /// - Parameters:
    ///   - endpoint: The endpoint.
    ///   - cost: Units to charge instead of the table's price.
    /// - Returns: The request.
    /// - Throws: ``QuotaLedgerError/negativeCost(endpoint:cost:)``,
    ///   ``QuotaLedgerError/costTooLarge(endpoint:cost:)``, ``QuotaLedgerError/unknownBucket(_:)``.
    public func reservationRequest(endpoint: String, cost: Int? = nil) throws -> QuotaReservationRequest {
        let price = price(of: endpoint)
        let units = cost ?? price.units
        guard units >= 0 else { throw QuotaLedgerError.negativeCost(endpoint: endpoint, cost: units) }
        guard units <= QuotaLimits.maximumUnits else { throw QuotaLedgerError.costTooLarge(endpoint: endpoint, cost: units) }
        return QuotaReservationRequest(
            bucket: price.bucket, endpoint: endpoint, cost: units, configuredLimit: try configuredLimit(of: price.bucket),
            warningPercents: configuration.warningPercents, at: clock.now(),
            additionalCharges: try price.additionalCharges.map { extra in
                QuotaBucketCharge(bucket: extra.bucket, cost: extra.units, configuredLimit: try configuredLimit(of: extra.bucket),
                                  window: configuration.window(of: extra.bucket))
            },
            window: configuration.window(of: price.bucket), pacing: configuration.bucketPacing[price.bucket]
        )
    }

    /// Logs a reservation's outcome, exactly as ``reserve(endpoint:cost:)`` does, and turns it into
    /// a reservation or a refusal.
    /// - Parameters:
    ///   - outcome: What the store decided.
    ///   - endpoint: The endpoint.
    ///   - units: The units asked.
    /// - Returns: The reservation.
    /// - Throws: ``TollgateError/quotaExceeded(endpoint:cost:remaining:resetsAt:)`` for a refusal.
    public func report(_ outcome: QuotaReservationOutcome, endpoint: String, cost units: Int) throws -> QuotaReservation {
        switch outcome {
        case .reserved(let charge):
            remember(QuotaBucketReading(bucket: charge.bucket, limit: charge.limit, remaining: charge.remaining,
                                        day: charge.day, period: charge.period))
            logger.debug("Charged \(endpoint) \(units) \(units == 1 ? "unit" : "units")", metadata: [
                "quota.bucket": "\(charge.bucket)", "quota.day": "\(charge.day)",
                "quota.used": "\(charge.bucketUnitsUsed)", "quota.limit": "\(charge.limit)",
                "quota.reservation": "\(charge.reservationID)",
            ])
            for percent in charge.warningsCrossed {
                let period = charge.period.key == charge.day.key ? "its daily limit" : "its limit"
                let when = charge.period.key == charge.day.key ? "on \(charge.day)" : "in the window from \(charge.period.key)"
                logger.warning(
                    "Quota bucket \(charge.bucket) passed \(percent)% of \(period): \(charge.bucketUnitsUsed)/\(charge.limit) units used \(when)",
                    metadata: ["quota.bucket": "\(charge.bucket)", "quota.remaining": "\(charge.remaining)"]
                )
            }
            return QuotaReservation(charge)
        case .refused(let refusal):
            switch verdict(on: refusal, endpoint: endpoint) {
            case .wait(let retryAfter): throw TollgateError.throttled(retryAfter: retryAfter)
            case .refuse(let error): throw error
            }
        }
    }

    /// Logs a refusal the store decided, and says what it means for the request as a value: a
    /// paced bucket's next slot is a wait, like a full throttle window's; anything else is the
    /// quota's refusal. The gate feeds it to its request machine; nothing is thrown.
    /// - Parameters:
    ///   - refusal: What the store decided.
    ///   - endpoint: The endpoint.
    /// - Returns: Wait, or refuse with the error to report.
    public func verdict(on refusal: QuotaRefusal, endpoint: String) -> QuotaRefusalVerdict {
        switch refusal.reason {
        case .paced:
            let wait = max(refusal.retryAt.timeIntervalSince(clock.now()), 0)
            logger.debug("Quota bucket \(refusal.bucket) paces its last units: \(endpoint) may go in \(wait) s", metadata: [
                "quota.bucket": "\(refusal.bucket)", "quota.used": "\(refusal.bucketUnitsUsed)",
                "quota.limit": "\(refusal.limit)", "quota.resets": "\(refusal.resetsAt)",
            ])
            return .wait(retryAfter: wait)
        case .overBudget, .exhaustedByServer:
            remember(QuotaBucketReading(bucket: refusal.bucket, limit: refusal.limit, remaining: refusal.remaining,
                                        day: refusal.day, period: refusal.period))
            let error = TollgateError.quotaExceeded(
                endpoint: endpoint, cost: refusal.cost, remaining: refusal.remaining, resetsAt: refusal.resetsAt
            )
            logger.debug("\(error.description)", metadata: [
                "quota.bucket": "\(refusal.bucket)", "quota.reason": "\(refusal.reason.rawValue)",
                "quota.used": "\(refusal.bucketUnitsUsed)", "quota.limit": "\(refusal.limit)",
            ])
            return .refuse(error)
        }
    }

    /// Settles a reservation once the server answered: a `304 Not Modified` costs what the
    /// endpoint's ``QuotaConfiguration/EndpointCost/notModifiedCost`` says (refunded in full, or
    /// settled at fewer units: ``NotModifiedCost/charge(forStatus:price:)``, the rule the gate
    /// follows too); every other answer keeps the charge.
    /// - Parameters:
    ///   - reservation: The reservation.
    ///   - responseStatus: The HTTP status the server answered with.
    /// - Returns: Whether the charge was kept, refunded or settled at fewer units.
    /// - Throws: Storage errors.
    @discardableResult
    public func settle(_ reservation: QuotaReservation, responseStatus: Int) async throws -> QuotaSettlement {
        let policy = configuration.effectiveCost(for: reservation.endpoint)
        switch policy.notModifiedCost.charge(forStatus: responseStatus, price: reservation.cost) {
        case .kept:
            return .kept
        case .refunded:
            return try await refund(reservation, reason: Self.notModifiedReason)
        case .settled(let units):
            let outcome = try await storage.settleQuotaCost(
                reservationID: reservation.id, bucket: reservation.bucket, actualUnits: units, at: clock.now(),
                detail: Self.notModifiedReason
            )
            switch outcome {
            case .settled(_, let actual, _):
                logger.debug("Settled \(reservation.endpoint) at \(actual) \(actual == 1 ? "unit" : "units") for a 304",
                             metadata: ["quota.bucket": "\(reservation.bucket)", "quota.reservation": "\(reservation.id)"])
                return .settled(units: actual)
            case .alreadySettled:
                return .alreadyRefunded
            }
        }
    }

    /// Why a 304's charge changed, as the ledger's events say it.
    static let notModifiedReason = "304 Not Modified"

    /// Gives a reservation's units back to the day it was charged, with a refund event. A
    /// reservation is refunded at most once, whichever process asks.
    /// - Parameters:
    ///   - reservation: The reservation.
    ///   - reason: Why, kept in the event.
    /// - Returns: ``QuotaSettlement/refunded(units:)``, or ``QuotaSettlement/alreadyRefunded``.
    /// - Throws: Storage errors.
    @discardableResult
    public func refund(_ reservation: QuotaReservation, reason: String) async throws -> QuotaSettlement {
        let outcome = try await storage.refundQuota(reservationID: reservation.id, at: clock.now(), reason: reason)
        return report(outcome, of: reservation, reason: reason)
    }

    /// Logs a refund that a caller made itself (the gate, in its settlement transaction), exactly as
    /// ``refund(_:reason:)`` does.
    /// - Parameters:
    ///   - outcome: What the store did.
    ///   - reservation: The reservation refunded.
    ///   - reason: Why.
    /// - Returns: The settlement.
    @discardableResult
    public func report(_ outcome: QuotaRefundOutcome, of reservation: QuotaReservation, reason: String) -> QuotaSettlement {
        switch outcome {
        case .refunded(let units, let day):
            logger.debug("Refunded \(reservation.endpoint) \(units) \(units == 1 ? "unit" : "units")", metadata: [
                "quota.bucket": "\(reservation.bucket)", "quota.day": "\(day)", "quota.reason": "\(reason)",
                "quota.reservation": "\(reservation.id)",
            ])
            return .refunded(units: units)
        case .alreadyRefunded:
            return .alreadyRefunded
        }
    }

    /// What this process's latest reservation in a bucket read of it, with no read of the store:
    /// other processes' charges since then are not counted.
    /// - Parameter bucket: The bucket.
    /// - Returns: The reading, or nil when this process has not reserved in the bucket yet.
    public func latestReading(of bucket: String) -> QuotaBucketReading? {
        readings.withLock { $0[bucket] }
    }

    /// Keeps what the server's announcement left of a bucket as its latest reading, so the next
    /// description of the bucket (the proxy's `RateLimit`) says what the server said.
    /// - Parameters:
    ///   - outcome: What the ledger did with the announcement.
    ///   - bucket: The bucket it was about.
    public func remember(_ outcome: QuotaAnnouncementOutcome, of bucket: String) {
        remember(QuotaBucketReading(bucket: bucket, limit: outcome.limit, remaining: outcome.remaining,
                                    day: PacificDay(containing: clock.now()), period: outcome.period))
    }

    /// Applies what an answer announced to this process's readings of its buckets before the
    /// settlement that records it is written, which comes after the answer: so the answer's own
    /// description of its buckets (the proxy's `RateLimit`) already says what the server said —
    /// GitHub's first answer of an hour, whose `X-RateLimit-Reset` moves the window's end. The
    /// store's own two rules are applied (``QuotaRules/announcedResetMovesEnd(_:of:now:)``,
    /// ``QuotaRules/unitsToFollow(announcedRemaining:limit:used:)``); the store's outcome replaces
    /// the reading when the write lands (``remember(_:of:)``). Units the settlement gives back
    /// first, as the store does: a `304` the endpoint does not pay for in full.
    /// - Parameters:
    ///   - announcements: What the answer announced, per bucket.
    ///   - returned: Units the settlement gives back to `bucket` (negative for a cost settled
    ///     above its charge).
    ///   - bucket: The bucket of the request's own charge.
    public func anticipate(_ announcements: [QuotaAnnouncement], returning returned: Int = 0, to bucket: String? = nil) {
        readings.withLock { readings in
            if let bucket, returned != 0, var reading = readings[bucket] {
                reading.remaining = min(reading.limit, max(0, reading.remaining + returned))
                readings[bucket] = reading
            }
            for announcement in announcements {
                guard var reading = readings[announcement.bucket], reading.period.end > announcement.at else { continue }
                if let reset = announcement.resetsAt,
                   QuotaRules.announcedResetMovesEnd(reset, of: reading.period, now: announcement.at) {
                    reading.period.end = reset
                }
                reading.remaining -= QuotaRules.unitsToFollow(
                    announcedRemaining: announcement.remaining, limit: reading.limit,
                    used: reading.limit - reading.remaining
                )
                readings[announcement.bucket] = reading
            }
        }
    }

    private func remember(_ reading: QuotaBucketReading) {
        readings.withLock { readings in
            // Bucket names come from the configuration, so this stays small.
            readings[reading.bucket] = reading
        }
    }

    // MARK: The server's word

    /// Records that the server said a bucket's daily quota is spent (YouTube: 403 `quotaExceeded`):
    /// every process refuses reservations in it until the next Pacific midnight.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - endpoint: The endpoint whose answer said so, if any, for the record.
    /// - Returns: When the bucket opens again.
    /// - Throws: ``QuotaLedgerError/unknownBucket(_:)``; storage errors.
    @discardableResult
    public func markExhausted(bucket: String, endpoint: String? = nil) async throws -> Date {
        let exhaustion = try await storage.markQuotaExhausted(
            bucket: bucket, configuredLimit: try configuredLimit(of: bucket), endpoint: endpoint, at: clock.now()
        )
        return report(exhaustion, endpoint: endpoint)
    }

    /// Logs an exhaustion mark that a caller set itself (the gate, in its settlement transaction),
    /// exactly as ``markExhausted(bucket:endpoint:)`` does.
    /// - Parameters:
    ///   - exhaustion: What the store did.
    ///   - endpoint: The endpoint whose answer said so.
    /// - Returns: When the bucket opens again.
    @discardableResult
    public func report(_ exhaustion: QuotaExhaustion, endpoint: String?) -> Date {
        if exhaustion.isNew {
            logger.notice(
                "The server says quota bucket \(exhaustion.bucket) is spent; refusing its reservations until \(PacificDay.localTimeDescription(of: exhaustion.until))",
                metadata: ["quota.bucket": "\(exhaustion.bucket)", "quota.endpoint": "\(endpoint ?? "-")"]
            )
        }
        return exhaustion.until
    }

    /// Records that the server said the daily quota of an endpoint's bucket is spent.
    /// - Parameter endpoint: The endpoint that got the answer.
    /// - Returns: When its bucket opens again.
    /// - Throws: Storage errors.
    @discardableResult
    public func markExhausted(endpoint: String) async throws -> Date {
        try await markExhausted(bucket: price(of: endpoint).bucket, endpoint: endpoint)
    }

    // MARK: Queries

    /// When today's quota resets: the next midnight, Pacific time.
    public var resetInstant: Date { PacificDay(containing: clock.now()).nextReset }

    /// Every endpoint's usage on a Pacific day.
    /// - Parameter day: The day; today by default.
    /// - Returns: Usage per bucket and endpoint.
    /// - Throws: Storage errors.
    public func usage(on day: PacificDay? = nil) async throws -> [QuotaUsage] {
        try await storage.quotaUsage(on: day ?? PacificDay(containing: clock.now()))
    }

    /// Every endpoint's calls on a Pacific day that carried a batch of single-ID requests, and
    /// the IDs they carried (``GateConfiguration/batching``).
    /// - Parameter day: The day; today by default.
    /// - Returns: One row per bucket and endpoint that carried batches.
    /// - Throws: Storage errors.
    public func batchUsage(on day: PacificDay? = nil) async throws -> [QuotaBatchUsage] {
        try await storage.quotaBatchUsage(on: day ?? PacificDay(containing: clock.now()))
    }

    /// A bucket's limit, usage and exhaustion in its window: the Pacific day unless the
    /// configuration gives the bucket another window.
    /// - Parameters:
    ///   - bucket: The bucket; the default bucket when nil.
    ///   - day: A day whose window to describe; now when nil.
    /// - Returns: Its status.
    /// - Throws: ``QuotaLedgerError/unknownBucket(_:)``; storage errors.
    public func status(bucket: String? = nil, on day: PacificDay? = nil) async throws -> QuotaBucketStatus {
        let bucket = bucket ?? configuration.defaultBucket
        let now = clock.now()
        let at = day.flatMap { $0 == PacificDay(containing: now) ? nil : $0.start } ?? now
        return try await storage.quotaBucketStatus(
            bucket: bucket, configuredLimit: try configuredLimit(of: bucket), window: configuration.window(of: bucket), at: at
        )
    }

    /// Every bucket the store knows, each in its own current window (a bucket another program
    /// configured included, in the window stored with it).
    /// - Returns: One status per bucket, ordered by bucket.
    /// - Throws: Storage errors.
    public func windows() async throws -> [QuotaBucketStatus] {
        let now = clock.now()
        var statuses = try await storage.quotaWindows(at: now)
        // The buckets this configuration knows but the store has not seen yet, and this
        // configuration's windows for those it has.
        for bucket in configuration.bucketLimits.keys.sorted() {
            let status = try await self.status(bucket: bucket)
            if let index = statuses.firstIndex(where: { $0.bucket == bucket }) {
                statuses[index] = status
            } else {
                statuses.append(status)
            }
        }
        return statuses.sorted { $0.bucket < $1.bucket }
    }

    /// The units a bucket can still spend today.
    /// - Parameter bucket: The bucket; the default bucket when nil.
    /// - Returns: The units left; zero when the server said the quota is spent.
    /// - Throws: ``QuotaLedgerError/unknownBucket(_:)``; storage errors.
    public func remaining(bucket: String? = nil) async throws -> Int {
        try await status(bucket: bucket).remaining
    }

    /// Compares the stored per-day totals with the sum of the events.
    /// - Returns: The totals that differ; empty when the ledger is sound.
    /// - Throws: Storage errors.
    public func discrepancies() async throws -> [QuotaLedgerDiscrepancy] {
        try await storage.quotaLedgerDiscrepancies()
    }

    // MARK: Administration

    /// Sets a bucket's daily limit, persisted and winning over the configuration, or hands it back
    /// to the configuration. The change is recorded as an event.
    /// - Parameters:
    ///   - bucket: The bucket.
    ///   - limit: The new limit; nil to follow the configuration again.
    /// - Returns: The bucket's status afterwards.
    /// - Throws: ``QuotaLedgerError/negativeLimit(bucket:limit:)``, ``QuotaLedgerError/limitTooLarge(bucket:limit:)``,
    ///   ``QuotaLedgerError/unknownBucket(_:)``; storage errors.
    @discardableResult
    public func setLimit(bucket: String, limit: Int?) async throws -> QuotaBucketStatus {
        if let limit, limit < 0 { throw QuotaLedgerError.negativeLimit(bucket: bucket, limit: limit) }
        if let limit, limit > QuotaLimits.maximumUnits { throw QuotaLedgerError.limitTooLarge(bucket: bucket, limit: limit) }
        let status = try await storage.setQuotaLimit(
            bucket: bucket, limit: limit, configuredLimit: try configuredLimit(of: bucket), at: clock.now()
        )
        logger.notice("Quota bucket \(bucket) daily limit set to \(status.limit) (\(status.limitSource.rawValue))")
        return status
    }

    /// Gives back every unit a bucket used on a day, recorded as reset events (never a silent
    /// delete). Resetting today also lifts the server's exhausted mark.
    /// - Parameters:
    ///   - day: The Pacific day.
    ///   - bucket: The bucket; the default bucket when nil.
    /// - Returns: What was cleared.
    /// - Throws: ``QuotaLedgerError/unknownBucket(_:)``; storage errors.
    @discardableResult
    public func resetDay(_ day: PacificDay, bucket: String? = nil) async throws -> QuotaDayReset {
        let bucket = bucket ?? configuration.defaultBucket
        _ = try configuredLimit(of: bucket)
        let reset = try await storage.resetQuotaDay(day, bucket: bucket, at: clock.now())
        logger.notice("Quota bucket \(bucket) reset for \(day): \(reset.totalUnitsCleared) units given back")
        return reset
    }

    /// Aligns a bucket's count for a day with the provider's own (Google's console, say): one
    /// event records the difference, so the ledger's totals still equal its events.
    /// - Parameters:
    ///   - used: The units the provider says were used.
    ///   - bucket: The bucket; the default bucket when nil.
    ///   - day: The Pacific day; today when nil.
    /// - Returns: What changed.
    /// - Throws: ``QuotaLedgerError/unknownBucket(_:)``; `StoreRefusal.invalidArgument` for a count
    ///   out of range; storage errors.
    @discardableResult
    public func reconcile(used: Int, bucket: String? = nil, on day: PacificDay? = nil) async throws -> QuotaReconciliation {
        let bucket = bucket ?? configuration.defaultBucket
        let limit = try configuredLimit(of: bucket)
        let now = clock.now()
        let reconciliation = try await storage.reconcileQuota(
            bucket: bucket, used: used, configuredLimit: limit, day: day ?? PacificDay(containing: now), at: now
        )
        logger.notice("Quota bucket \(bucket) reconciled for \(reconciliation.day): \(used) units used (was \(reconciliation.countedBefore))")
        return reconciliation
    }

    /// How fast each bucket is being spent: net units charged over the last `window`, per hour,
    /// and when each bucket runs out at that rate if that comes before the next Pacific midnight.
    /// - Parameter window: How far back to look; one hour by default.
    /// - Returns: One forecast per configured bucket.
    /// - Throws: Storage errors.
    public func forecast(over window: Duration = .seconds(3600)) async throws -> [QuotaForecast] {
        let now = clock.now()
        let burns = try await storage.quotaBurn(since: now.addingTimeInterval(-window.timeInterval), until: now)
        var forecasts: [QuotaForecast] = []
        for bucket in configuration.bucketLimits.keys.sorted() {
            let status = try await self.status(bucket: bucket)
            let perHour = burns.first { $0.bucket == bucket }?.unitsPerHour ?? 0
            forecasts.append(.projecting(bucket: bucket, unitsPerHour: perHour, remaining: status.remaining, from: now,
                                         resetsAt: status.resetsAt))
        }
        return forecasts
    }

    // MARK: Prices

    /// The price the ledger charges for an endpoint: its own, else the default (see
    /// ``noteUnknownEndpoint(_:)``).
    /// - Parameter endpoint: The endpoint.
    /// - Returns: Its bucket, units and 304 policy.
    public func price(of endpoint: String) -> QuotaConfiguration.EndpointCost {
        configuration.cost(for: endpoint) ?? configuration.effectiveCost(for: endpoint)
    }

    /// Says once per file, not on every run, that an endpoint is missing from the cost table: the
    /// first time this process charges it, and only when the file has never charged it before.
    /// ``reserve(endpoint:cost:)`` and the gate's admission call it.
    /// - Parameter endpoint: The endpoint about to be charged.
    public func noteUnknownEndpoint(_ endpoint: String) async {
        guard configuration.cost(for: endpoint) == nil,
              unknownEndpointsLogged.withLock({ $0.insert(endpoint).inserted })
        else { return }
        let seenBefore = (try? await storage.quotaEndpointCharged(endpoint)) ?? false
        let message: Logger.Message = "Endpoint \(endpoint) is not in the quota cost table; charging the default \(configuration.defaultCost) in bucket \(configuration.defaultBucket)"
        if seenBefore || configuration.chargesUnlistedEndpointsTheDefault {
            logger.debug(message, metadata: ["quota.endpoint": "\(endpoint)"])
        } else {
            logger.warning(message, metadata: ["quota.endpoint": "\(endpoint)"])
        }
    }

    /// An actual cost as it is settled: one past the bucket's whole limit settles as the limit (the
    /// window is spent either way, and the caller still gets the answer the server sent), however
    /// the cost was read — from a body held whole or from a stream at its end.
    /// - Parameters:
    ///   - units: The cost the answer reported.
    ///   - bucket: The bucket it is settled in.
    /// - Returns: The units to settle.
    func settleable(_ units: Int, in bucket: String) -> Int {
        min(units, max((try? configuredLimit(of: bucket)) ?? QuotaLimits.maximumUnits, 0))
    }

    func configuredLimit(of bucket: String) throws(QuotaLedgerError) -> Int {
        guard let limit = configuration.bucketLimits[bucket] else { throw .unknownBucket(bucket) }
        return limit
    }
}
