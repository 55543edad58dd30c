import Foundation
import HTTPTypes
import CoreMetrics
import Logging
import Synchronization

/// The one call every request goes through: ETag cache, circuit breaker, throttle, daily quota
/// ledger and retries, with all their state in one SQLite file shared by every process.
///
/// ```swift
/// let store = try SQLiteStore(path: "tollgate.sqlite")
/// let gate = try Gate(store: store, transport: URLSessionTransport())
/// let answer = try await gate.send(HTTPRequest(url: videosURL), endpoint: "videos.list")
/// print(answer.source, answer.unitsCharged)   // revalidated 0
/// ```
///
/// ``send(_:body:endpoint:options:via:)`` takes these steps, in this order:
/// 1. **Cache lookup.** A stored response still fresh under its own `max-age`/`Expires` is
///    returned at once: no throttle, no quota, no network (source ``ResponseSource/cache``).
/// 2. **Circuit check.** An open circuit serves the stored response if there is one
///    (``StaleReason/circuitOpen``), else throws ``TollgateError/circuitOpen(retryAfter:)``.
/// 3. **Throttle.** A full window serves stale if it can, else waits up to
///    ``GateConfiguration/maximumThrottleWait``, else throws ``TollgateError/throttled(retryAfter:)``.
/// 4. **Quota reservation.** One transaction checks and charges the endpoint's cost for today's
///    Pacific day; over budget serves stale (``StaleReason/quotaExhausted``) or throws
///    ``TollgateError/quotaExceeded(endpoint:cost:remaining:resetsAt:)``.
/// 5. **Send**, with `If-None-Match`/`If-Modified-Since` from the stored entry, under the retry
///    policy: every attempt passes the circuit, the throttle and the quota again, and every
///    attempt's outcome is recorded in the circuit; retrying stops as soon as it opens.
/// 6. **Settle.** A `304` is refunded (by default) and returns the stored body with the 304's
///    headers merged in (``ResponseSource/revalidated``); a `200` is stored
///    (``ResponseSource/network``); the server's "daily quota exceeded" marks the bucket
///    exhausted until the next Pacific midnight for every process.
///
/// When the ledger cannot be written (the admission or the settlement fails in the store), the
/// gate follows ``GateConfiguration/ledgerFailurePolicy``: it refuses the request by default, or
/// sends it uncharged with a warning. A cache that cannot be read or written never fails a request.
public final class Gate: Sendable {
    /// The rules in force.
    public let configuration: GateConfiguration
    /// The ETag cache.
    public let cache: ETagCache
    /// The circuit breaker.
    public let circuit: CircuitBreaker
    /// The client-side throttle.
    public let throttle: RequestThrottler
    /// The daily quota ledger.
    public let quota: QuotaLedger
    let storage: any GateStorage
    private let transport: any HTTPTransport
    let clock: any TollgateClock
    let logger: Logger
    private let metrics: GateMetrics
    /// Identical requests in flight in this process.
    let coalescer = RequestCoalescer()
    /// `stale-while-revalidate` revalidations running after their stale answer was returned, by
    /// resource, so one runs at a time per resource and ``flush()`` can wait for them.
    let backgroundRevalidations = Mutex<[String: Task<Void, Never>]>([:])
    /// The logger with each endpoint's metadata, made once per endpoint.
    private let endpointLoggers: EndpointLoggers
    /// A GET's cache store or revision, with its settlement, written after its answer was
    /// returned; ``flush()`` waits for them.
    let afterAnswerWrites = AfterAnswerWrites()

    /// Creates a gate over a store.
    /// - Parameters:
    ///   - store: The SQLite file that holds every service's state.
    ///   - transport: How requests reach the network.
    ///   - configuration: The services' rules; the YouTube Data API v3 preset by default.
    ///   - clock: The wall clock and sleeper every service uses.
    ///   - logger: Where the gate and its services log; the task's current logger by default.
    ///   - metrics: Where the gate reports its metrics (see the table in `GateMetrics`); the
    ///     bootstrapped `MetricsSystem` by default.
    /// - Throws: A configuration error from a service (an inconsistent cost table, a bad limit).
    public convenience init(
        store: SQLiteStore,
        transport: any HTTPTransport = URLSessionTransport(),
        configuration: GateConfiguration = .youTubeDataAPIv3,
        clock: any TollgateClock = SystemClock(),
        logger: Logger = Logger.current,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws {
        try self.init(storage: store, transport: transport, configuration: configuration, clock: clock, logger: logger,
                      metrics: metrics)
    }

    /// Creates a gate over any storage backend.
    /// - Parameters:
    ///   - storage: Where every service's state lives.
    ///   - transport: How requests reach the network.
    ///   - configuration: The services' rules.
    ///   - clock: The wall clock and sleeper every service uses.
    ///   - logger: Where the gate and its services log.
    ///   - metrics: Where the gate reports requests by source, units charged, refusals, circuit
    ///     states and the cache hit rate, per endpoint.
    /// - Throws: A configuration error from a service.
    public init(
        storage: any GateStorage,
        transport: any HTTPTransport,
        configuration: GateConfiguration,
        clock: any TollgateClock,
        logger: Logger = Logger.current,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws {
        self.configuration = configuration
        self.storage = storage
        self.cache = try ETagCache(storage: storage, configuration: configuration.cache, clock: clock, logger: logger)
        self.circuit = CircuitBreaker(storage: storage, configuration: configuration.circuit, clock: clock, logger: logger)
        self.throttle = try RequestThrottler(
            storage: storage, configuration: configuration.throttle, clock: clock, logger: logger
        )
        self.quota = try QuotaLedger(storage: storage, configuration: configuration.quota, clock: clock, logger: logger)
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.endpointLoggers = EndpointLoggers(base: logger)
        self.metrics = GateMetrics(factory: metrics)
    }

    /// Takes one request through the gate.
    /// - Parameters:
    ///   - request: The request, with an absolute URL.
    ///   - body: The request body, if any.
    ///   - endpoint: The endpoint's name in the cost table, such as `videos.list`.
    ///   - options: Per-request overrides.
    ///   - transport: A transport for this request only (the OpenAPI middleware passes its `next`).
    /// - Returns: The answer, its source and its cost.
    /// - Throws: ``TollgateError`` when the circuit, throttle or quota refuse and nothing stored
    ///   can be served; ``HTTPTransportError`` when the network fails and nothing stored can be
    ///   served; the store's error (such as ``StoreError/diskFull(path:cause:)`` or ``StoreError/readOnly(path:cause:)``) when the
    ///   ledger cannot be written and ``GateConfiguration/ledgerFailurePolicy`` is
    ///   ``LedgerFailurePolicy/failClosed``.
    ///
    /// The admission is the one write on a GET's path. The cache's store of a `200`, or a `304`'s
    /// revision of the stored response with its refund, and the attempt's circuit outcome are
    /// written just after the answer returns, in one transaction. This gate's next admission waits
    /// for them, so it never decides on a ledger that an earlier answer has not reached, and so
    /// does a lookup of the same resource, so it sees what was stored. ``flush()`` waits for them too.
    public func send(
        _ request: HTTPRequest,
        body: Data? = nil,
        endpoint: String,
        options: GateRequestOptions = GateRequestOptions(),
        via transport: (any HTTPTransport)? = nil
    ) async throws -> GateResponse {
        do {
            return try await sendReportingCost(request, body: body, endpoint: endpoint, options: options, via: transport)
        } catch {
            throw error.error
        }
    }

    /// Takes one request through the gate, like ``send(_:body:endpoint:options:via:)``, and when it
    /// fails says what the attempts cost before the failure.
    /// - Parameters:
    ///   - request: The request, with an absolute URL.
    ///   - body: The request body, if any.
    ///   - endpoint: The endpoint's name in the cost table, such as `videos.list`.
    ///   - options: Per-request overrides.
    ///   - transport: A transport for this request only.
    /// - Returns: The answer, its source and its cost.
    /// - Throws: ``GateFailure``: the error ``send(_:body:endpoint:options:via:)`` would throw, with
    ///   the units charged and the attempts made before it.
    public func sendReportingCost(
        _ request: HTTPRequest,
        body: Data? = nil,
        endpoint: String,
        options: GateRequestOptions = GateRequestOptions(),
        via transport: (any HTTPTransport)? = nil
    ) async throws(GateFailure) -> GateResponse {
        // Whatever derived the name, it is written in plaintext everywhere: never with a secret in it.
        let endpoint = EndpointNaming.redactingSecrets(in: endpoint, rules: cache.secretRules)
        let policy = options.redirects ?? configuration.redirects
        var hop = RedirectHop(request: request, body: body, crossedOrigin: false)
        var redirects: [URL] = []
        // Every request made in this send, so a redirect back to one of them ends the chain.
        var visited: Set<String> = [RedirectHop.visit(request)]
        var unitsCharged = 0
        var attempts = 0
        while true {
            var ledger = AttemptLedger()
            let answer: GateResponse
            do {
                // A hop to another origin is not the endpoint's call: nothing to charge, and its
                // throttle and circuit are its own.
                var hopOptions = options
                var hopEndpoint = endpoint
                if hop.crossedOrigin {
                    // The host alone: an authority's user information is a credential.
                    hopEndpoint = "redirect \(Self.hostAndPort(of: hop.request.authority ?? ""))"
                    hopOptions.cost = 0
                }
                answer = try await route(hop.request, body: hop.body, endpoint: hopEndpoint, options: hopOptions,
                                         via: transport ?? self.transport,
                                         revalidation: Self.isSafeWithBody(hop.request, hop.body) ? .bypassingCache
                                             : transport == nil ? .inBackground : .inline,
                                         ledger: &ledger)
                metrics.record(answer, endpoint: hopEndpoint)
            } catch {
                if let refusal = error as? TollgateError { metrics.record(refusal, endpoint: endpoint) }
                throw GateFailure(error: error, unitsCharged: unitsCharged + ledger.unitsCharged,
                                  attempts: attempts + ledger.attempts)
            }
            unitsCharged += answer.unitsCharged
            attempts += answer.attempts
            var following = RedirectHop.next(
                after: answer.response, to: hop.request, body: hop.body, hopsSoFar: redirects.count,
                alreadyCrossed: hop.crossedOrigin, policy: policy, secrets: cache.secretRules
            )
            if let loop = following, !visited.insert(RedirectHop.visit(loop.request)).inserted {
                // Back to a request already made in this send: the same answer again, at a price.
                logger.info("redirect loop: the redirect is returned as it is", metadata: [
                    "gate.endpoint": "\(endpoint)", "gate.status": "\(answer.status.code)",
                ])
                following = nil
            }
            guard let next = following else {
                var delivered = answer
                delivered.unitsCharged = unitsCharged
                delivered.attempts = attempts
                delivered.redirects = redirects
                return delivered
            }
            if let url = next.request.url { redirects.append(url) }
            logger.debug("following a redirect", metadata: [
                "gate.endpoint": "\(endpoint)", "gate.status": "\(answer.status.code)",
                "gate.cross_origin": "\(next.crossedOrigin)",
            ])
            hop = next
        }
    }

    /// Waits for background revalidations (`stale-while-revalidate`) and for the writes that
    /// follow answers already returned (a GET's cache store or revision, refund and circuit outcome), then
    /// writes the cache's buffered LRU touches and statistics. Call before a short-lived tool
    /// exits, or before reading the ledger for an exact count of what just happened.
    /// - Throws: A storage error.
    public func flush() async throws {
        let running = backgroundRevalidations.withLock { Array($0.values) }
        for revalidation in running { await revalidation.value }
        await afterAnswerWrites.waitForQueued()
        try await cache.flush()
    }

    // MARK: Steps

    /// The request path, steps 1 to 6.
    /// `ledger` is the caller's, so that what was charged is known when this throws.
    func route(
        _ request: HTTPRequest, body: Data?, endpoint: String, options: GateRequestOptions,
        via transport: any HTTPTransport, revalidation: Revalidation, ledger: inout AttemptLedger
    ) async throws -> GateResponse {
        // 1. Cache lookup. A cache that cannot be read never fails the request.
        if !afterAnswerWrites.isIdle {
            if request.method != .get {
                // A HEAD revises stored GETs, an unsafe method invalidates stored answers: after
                // the GETs' stores and revisions that earlier answers left queued, not before them.
                await afterAnswerWrites.waitForQueued()
            } else if let key = try? cache.key(for: request).resourceKey, afterAnswerWrites.isPending(resourceKey: key) {
                // This resource's last answer is still being written: look it up as that write leaves it.
                await afterAnswerWrites.waitForQueued()
            }
        }
        var lookup: CacheLookup
        do {
            lookup = revalidation == .bypassingCache ? .miss(request) : try await cache.lookup(request, endpoint: endpoint)
        } catch {
            self.logger.warning("cache lookup failed; sending without it",
                                metadata: ["gate.endpoint": "\(endpoint)", "error": "\(error)"])
            lookup = .miss(request)
        }
        if case .fresh(let cached) = lookup {
            self.logger.debug("served fresh from cache", metadata: ["gate.endpoint": "\(endpoint)"])
            return GateResponse(response: cached.response, body: cached.body, source: .cache,
                                unitsCharged: 0, attempts: 0, age: cached.age)
        }
        let logger = endpointLoggers.logger(for: endpoint)
        if let early = await answerWithoutSending(request, lookup: lookup, endpoint: endpoint, options: options,
                                                  via: transport, revalidation: revalidation) {
            return early
        }
        var flight: Flight?
        switch await coalesce(request, body: body, lookup: lookup, endpoint: endpoint, options: options,
                              revalidation: revalidation) {
        case .served(let answer): return answer
        case .leading(let leading): flight = leading
        case .alone(let refreshed):
            if case .fresh(let cached) = refreshed {
                // Stored meanwhile by an earlier request, and fresh: no request at all.
                return GateResponse(response: cached.response, body: cached.body, source: .cache,
                                    unitsCharged: 0, attempts: 0, age: cached.age)
            }
            lookup = refreshed
        }
        guard var flight else {
            return try await forward(request, body: body, lookup: lookup, endpoint: endpoint, options: options,
                                     via: transport, ledger: &ledger, logger: logger)
        }
        // The flight ends once the answer is stored or its write queued (those waiting for it in
        // this process wait for the queue), so that they find it.
        do {
            let answer: GateResponse
            do {
                answer = try await forward(request, body: body, lookup: lookup, endpoint: endpoint, options: options,
                                           via: transport, flight: flight, ledger: &ledger, logger: logger)
            } catch let other as AnotherProcessLeads {
                // Its first admission found another process's lease: nothing was charged.
                flight = flight.withoutStoreLease
                if let served = await waitForOtherProcess(other.lease, leading: flight, request: request,
                                                          endpoint: endpoint) {
                    await endFlight(flight)
                    return served
                }
                answer = try await forward(request, body: body, lookup: lookup, endpoint: endpoint, options: options,
                                           via: transport, flight: flight, ledger: &ledger, logger: logger)
            }
            await endFlight(flight)
            return answer
        } catch {
            await endFlight(flight)
            throw error
        }
    }

    /// Steps 2 to 6 for a request the cache could not answer: circuit, throttle, quota, send under
    /// the retry policy, then store, revalidate or serve stale.
    private func forward(
        _ request: HTTPRequest, body: Data?, lookup: CacheLookup, endpoint: String, options: GateRequestOptions,
        via transport: any HTTPTransport, flight: Flight? = nil, ledger: inout AttemptLedger, logger: Logger
    ) async throws -> GateResponse {
        let stored = options.allowsStale ? lookup.cachedResponse.flatMap { servableOnError($0, for: request) } : nil
        let outgoing = lookup.requestToSend ?? request

        // 2–5. Circuit, throttle, quota and send, for every attempt, under the retry policy.
        let exchange: Exchange
        do {
            // The circuit is asked inside the admission transaction, not by the retry loop.
            exchange = try await configuration.retry.run(
                endpoint: endpoint,
                method: request.method,
                markedIdempotent: options.markedIdempotent,
                clock: clock,
                logger: logger
            ) { attempt in
                // The leader's first admission takes the store's coalescing lease in its transaction.
                let lease = attempt == 1 ? flight.flatMap { flight in flight.leaseHolder.map { (flight.key, $0) } } : nil
                let admitted = try await admit(endpoint: endpoint, cost: options.cost,
                                               canServeStale: stored != nil && attempt == 1, leasing: lease)
                ledger.charged(admitted.reservation?.cost ?? 0)
                ledger.attempts = attempt
                var result = try await sendAttempt(outgoing, body: body, endpoint: endpoint, admitted: admitted,
                                                   streamsLargeBodies: options.streamsLargeBodies, via: transport,
                                                   ledger: &ledger)
                if stored != nil, configuration.retry.servesStaleInsteadOfRetrying, result.trigger != nil {
                    // The policy prefers the stored answer to another attempt.
                    result.trigger = nil
                }
                return result
            }
        } catch let refusal as TollgateError {
            return try await serveStale(stored, because: refusal, endpoint: endpoint, ledger: ledger, logger: logger)
        } catch let failure as HTTPTransportError {
            return try await serveStale(stored, reason: .upstreamFailure, orThrow: failure, endpoint: endpoint,
                                        ledger: ledger, logger: logger)
        }

        // 6. Settle: store, revalidate, or serve stale.
        let revalidating = if case .revalidate(let cached, _) = lookup { cached } else { CachedResponse?.none }
        let answer = try await deliver(exchange, request: outgoing, stored: stored, revalidating: revalidating,
                                       endpoint: endpoint, options: options,
                                       storesAnswer: !Self.isSafeWithBody(request, body), lease: flight?.leaseReturn,
                                       ledger: &ledger, logger: logger)
        if answer.status.code == 304, answer.source == .network, outgoing != request,
           !request.headerFields.contains(.ifNoneMatch), !request.headerFields.contains(.ifModifiedSince) {
            return try await resendUnconditionally(request, body: body, after: answer, endpoint: endpoint,
                                                   options: options, via: transport, ledger: &ledger)
        }
        return answer
    }

    /// What happened over one `send`'s attempts.
    struct AttemptLedger {
        var unitsCharged = 0
        var attempts = 0
        mutating func charged(_ units: Int) { unitsCharged += units }
        mutating func refunded(_ units: Int) { unitsCharged -= units }
    }

    /// One answer from the server.
    private struct Exchange: Sendable {
        var response: HTTPResponse
        var body: Data
        /// The body, when it was too large for the cache and the caller asked for a stream.
        var stream: HTTPBodyStream?
        var serverSaysQuotaSpent: Bool
        /// When the request left, for the response delay in a stored answer's age (RFC 9111 §4.2.3).
        var sentAt: Date? = nil
        /// The attempt's settlement, when it can wait for the cache's write of the answer and share
        /// its transaction (see ``Gate/settlementCanWait(outcome:quotaSpent:admitted:)``).
        var pendingSettlement: PendingSettlement? = nil
    }

    /// A settlement written with the answer instead of on its own.
    struct PendingSettlement: Sendable {
        var settlement: AttemptSettlement
        var reservation: QuotaReservation?
        var refundReason: String
    }

    /// What one admission granted.
    private struct Admitted {
        /// The charge; nil when the ledger could not be written and the policy fails open.
        var reservation: QuotaReservation?
        /// The probe token, when this attempt is the half-open probe.
        var probeToken: String?
    }

    /// Steps 2–4 in one transaction: circuit, throttle, quota. A full throttle window is waited out
    /// on the clock, up to the configured maximum, unless a stored response can be served instead.
    /// - Parameter lease: The resource key and the holder of the coalescing lease to take in the
    ///   same transaction, dated at each admission (a throttle wait renews it).
    /// - Throws: ``AnotherProcessLeads`` when another process holds that lease (nothing charged).
    private func admit(
        endpoint: String, cost: Int?, canServeStale: Bool, leasing lease: (resourceKey: String, holder: String)?
    ) async throws -> Admitted {
        let probeToken = CircuitBreaker.newProbeToken()
        let policy = configuration.circuit.policy(for: endpoint)
        let limit = configuration.throttle.limit(for: endpoint)
        var waited = Duration.zero
        await quota.noteUnknownEndpoint(endpoint)
        // Earlier answers' settlements first: the ledger and the circuit as those answers left them.
        await afterAnswerWrites.waitForQueued()
        while true {
            let charge = try quota.reservationRequest(endpoint: endpoint, cost: cost)
            let outcome: AdmissionOutcome
            do {
                let admission = AdmissionRequest(
                    endpoint: endpoint, circuitPolicy: policy, probeToken: probeToken, throttleLimit: limit, quota: charge
                )
                if let lease {
                    let leased = try await storage.admit(admission, leasing: lease.resourceKey,
                                                         lease: coalescingLease(holder: lease.holder))
                    guard let leasedOutcome = leased.outcome else { throw AnotherProcessLeads(lease: leased.lease) }
                    outcome = leasedOutcome
                } else {
                    outcome = try await storage.admit(admission)
                }
            } catch let error where isLedgerFailure(error) && configuration.ledgerFailurePolicy == .failOpen {
                logger.warning("the ledger cannot be written; sending uncharged (ledger failure policy: fail open)",
                               metadata: ["gate.endpoint": "\(endpoint)", "error": "\(error)"])
                return Admitted(reservation: nil, probeToken: nil)
            }
            switch outcome {
            case .admitted(let circuitAdmission, let throttleAdmission, let quotaCharge):
                let decision = circuit.report(circuitAdmission, endpoint: endpoint)
                throttle.report(throttleAdmission, endpoint: endpoint)
                let reservation = try quota.report(.reserved(quotaCharge), endpoint: endpoint, cost: charge.cost)
                return Admitted(reservation: reservation, probeToken: decision.probe?.token)
            case .refusedByCircuit(let circuitAdmission):
                let decision = circuit.report(circuitAdmission, endpoint: endpoint)
                metrics.record(circuitAdmission.record.state, endpoint: endpoint)
                throw TollgateError.circuitOpen(retryAfter: decision.retryAfter ?? 0)
            case .throttled(_, let throttleAdmission):
                throttle.report(throttleAdmission, endpoint: endpoint)
                let retryAfter = throttleAdmission.retryAfter ?? limit.window.timeInterval
                let delay = Duration.milliseconds(Int64((retryAfter * 1000).rounded(.up)))
                guard !canServeStale, waited + delay <= configuration.maximumThrottleWait else {
                    throw TollgateError.throttled(retryAfter: retryAfter)
                }
                try await clock.sleep(for: delay)
                waited += delay
            case .refusedByQuota(_, let refusal):
                _ = try quota.report(.refused(refusal), endpoint: endpoint, cost: charge.cost)
                // The refusal names the bucket that could not pay: with several buckets, not always the first.
                throw TollgateError.quotaExceeded(endpoint: endpoint, cost: refusal.cost, remaining: refusal.remaining,
                                                  resetsAt: refusal.resetsAt)
            }
        }
    }

    /// Step 5 for one attempt, and its settlement in one transaction: the circuit's outcome, the
    /// 304 refund and the server's "quota spent".
    private func sendAttempt(
        _ request: HTTPRequest, body: Data?, endpoint: String, admitted: Admitted, streamsLargeBodies: Bool,
        via transport: any HTTPTransport, ledger: inout AttemptLedger
    ) async throws -> AttemptResult<Exchange> {
        let reservation = admitted.reservation
        let response: HTTPResponse
        var responseBody = Data()
        var stream: HTTPBodyStream?
        let sentAt = clock.now()
        do {
            if streamsLargeBodies {
                let answer: HTTPResponseBody
                (response, answer) = try await transport.send(request, body: body,
                                                              streamingPast: configuration.cache.maxBodySize)
                switch answer {
                case .complete(let data): responseBody = data
                case .streaming(let rest): stream = rest
                }
            } else {
                (response, responseBody) = try await transport.send(request, body: body)
            }
        } catch let error as HTTPTransportError {
            // The charge stays when the request may have reached the server: the ledger never
            // under-counts. An attempt that never left the machine is refunded.
            let state = try await settle(endpoint: endpoint, outcome: error.circuitOutcome, admitted: admitted,
                                         refund: !error.mayHaveReachedServer, refundReason: "never sent: \(error)",
                                         quotaSpent: false, ledger: &ledger)
            return AttemptResult(result: .failure(error), outcome: error.circuitOutcome,
                                 trigger: state == .open ? nil : error.retryTrigger)
        }
        let status = response.status.code
        let quotaSpent = status == 403 && !Set(GoogleErrorReasons.reasons(in: responseBody))
            .isDisjoint(with: Self.dailyQuotaReasons)
        let outcome = configuration.circuit.classifier.outcome(status: status, body: responseBody)
        let refund = status == 304 && quota.price(of: endpoint).refundsNotModified
        var pending: PendingSettlement?
        let state: CircuitState
        if settlementCanWait(outcome: outcome, quotaSpent: quotaSpent, admitted: admitted) {
            pending = PendingSettlement(
                settlement: try settlement(endpoint: endpoint, outcome: outcome, admitted: admitted, refund: refund,
                                           refundReason: "304 Not Modified", quotaSpent: false),
                reservation: admitted.reservation, refundReason: "304 Not Modified"
            )
            state = .closed
        } else {
            state = try await settle(endpoint: endpoint, outcome: outcome, admitted: admitted, refund: refund,
                                     refundReason: "304 Not Modified", quotaSpent: quotaSpent, ledger: &ledger)
        }
        var result = AttemptResult.response(
            Exchange(response: response, body: responseBody, stream: stream, serverSaysQuotaSpent: quotaSpent,
                     sentAt: sentAt, pendingSettlement: pending),
            status: status,
            retryAfter: response.headerFields[.retryAfter].flatMap(RetryAfter.init(headerValue:)),
            outcome: outcome
        )
        if state == .open, result.trigger != nil {
            // This answer opened the circuit: retrying stops here.
            logger.info("circuit opened; not retrying", metadata: ["gate.reservation": "\(reservation.map { "\($0.id)" } ?? "uncharged")"])
            result.trigger = nil
        }
        return result
    }

    /// Whether an attempt's settlement may wait for the cache's write of its answer: a success (a
    /// `200`, a `304`) that is not the half-open probe and not the server's "quota spent". Such a
    /// settlement cannot open the circuit, so the retry loop does not need it first.
    private func settlementCanWait(outcome: CircuitOutcome, quotaSpent: Bool, admitted: Admitted) -> Bool {
        outcome == .success && !quotaSpent && admitted.probeToken == nil && admitted.reservation != nil
    }

    private func settlement(
        endpoint: String, outcome: CircuitOutcome, admitted: Admitted, refund: Bool, refundReason: String,
        quotaSpent: Bool
    ) throws -> AttemptSettlement {
        let reservation = admitted.reservation
        let bucket = reservation?.bucket ?? quota.price(of: endpoint).bucket
        return AttemptSettlement(
            endpoint: endpoint, outcome: outcome, probeToken: admitted.probeToken,
            circuitPolicy: configuration.circuit.policy(for: endpoint),
            refundReservationID: refund ? reservation?.id : nil, refundReason: refundReason,
            exhaustedBucket: quotaSpent
                ? .init(bucket: bucket, configuredLimit: try quota.configuredLimit(of: bucket))
                : nil,
            at: clock.now()
        )
    }

    private func settle(
        endpoint: String, outcome: CircuitOutcome, admitted: Admitted, refund: Bool, refundReason: String,
        quotaSpent: Bool, ledger: inout AttemptLedger
    ) async throws -> CircuitState {
        let attempt = try settlement(endpoint: endpoint, outcome: outcome, admitted: admitted, refund: refund,
                                     refundReason: refundReason, quotaSpent: quotaSpent)
        return try await settle(PendingSettlement(settlement: attempt, reservation: admitted.reservation,
                                                  refundReason: refundReason),
                                endpoint: endpoint, ledger: &ledger)
    }

    /// Writes a settlement in a transaction of its own: at once, or after the answer when the
    /// cache's write did not carry it.
    @discardableResult
    private func settle(
        _ pending: PendingSettlement, endpoint: String, ledger: inout AttemptLedger
    ) async throws -> CircuitState {
        let result: AttemptSettlementResult
        do {
            result = try await storage.settleAttempt(pending.settlement)
        } catch let error where isLedgerFailure(error) && configuration.ledgerFailurePolicy == .failOpen {
            // The answer is here: with a ledger that cannot be written it is delivered unrecorded.
            logger.warning("the ledger cannot be written; the answer is not recorded (ledger failure policy: fail open)",
                           metadata: ["gate.endpoint": "\(endpoint)", "error": "\(error)"])
            return .closed
        }
        return await report(result, of: pending, endpoint: endpoint, ledger: &ledger)
    }

    /// Logs and counts what a settlement did, wherever it was written.
    private func report(
        _ settlement: AttemptSettlementResult, of pending: PendingSettlement, endpoint: String,
        ledger: inout AttemptLedger
    ) async -> CircuitState {
        let quotaSpent = pending.settlement.exhaustedBucket != nil
        if let reservation = pending.reservation, let refunded = settlement.refund,
           case .refunded(let units) = quota.report(refunded, of: reservation, reason: pending.refundReason) {
            ledger.refunded(units)
        }
        if let exhaustion = settlement.exhaustion {
            quota.report(exhaustion, endpoint: endpoint)
        }
        if quotaSpent {
            // The server's "quota spent" closes every bucket this endpoint is charged in, and no other.
            for extra in quota.price(of: endpoint).additionalCharges {
                do {
                    _ = try await quota.markExhausted(bucket: extra.bucket, endpoint: endpoint)
                } catch {
                    logger.warning("could not mark a bucket exhausted", metadata: ["quota.bucket": "\(extra.bucket)", "error": "\(error)"])
                }
            }
        }
        let state = circuit.report(settlement.circuit, endpoint: endpoint)
        metrics.record(state, endpoint: endpoint)
        return state
    }

    /// Step 6: the answer the caller gets, from the server's last answer and what is stored.
    /// `storesAnswer` is false for a request with a body: the cache key cannot see the body, so
    /// its answer must not answer the same URL without it (a GET with a body, such as a search).
    /// `revalidating` is the stored response the conditional request was built from.
    private func deliver(
        _ exchange: Exchange, request: HTTPRequest, stored: CachedResponse?, revalidating: CachedResponse?,
        endpoint: String, options: GateRequestOptions, storesAnswer: Bool, lease: LeaseReturn?,
        ledger: inout AttemptLedger, logger: Logger
    ) async throws -> GateResponse {
        let status = exchange.response.status.code
        if exchange.serverSaysQuotaSpent {
            let price = quota.price(of: endpoint)
            let refusal = TollgateError.quotaExceeded(
                endpoint: endpoint, cost: options.cost ?? price.units, remaining: 0, resetsAt: quota.resetInstant
            )
            return try await serveStale(stored, because: refusal, endpoint: endpoint, ledger: ledger, logger: logger)
        }
        if status == 304, let revalidating {
            // The answer is the stored response as the 304 revises it: written after the answer.
            let revisedAt = clock.now()
            if let answered = cache.revisedInMemory(exchange.response, of: revalidating, for: request,
                                                    endpoint: endpoint, requestedAt: exchange.sentAt, at: revisedAt) {
                let revised = answered.response
                reviseAfterAnswer(exchange, answered: answered, at: revisedAt, request: request, endpoint: endpoint,
                                  lease: lease, logger: logger)
                if let pending = exchange.pendingSettlement, pending.settlement.refundReservationID != nil {
                    // Refunded by that write: the charge is this attempt's own, not refunded before.
                    ledger.refunded(pending.reservation?.cost ?? 0)
                }
                return GateResponse(response: revised.response, body: revised.body, source: .revalidated,
                                    unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: revised.age)
            }
        }
        if status == 304 {
            // The revision, the attempt's settlement and the lease: one transaction after the answer.
            let bookkeeping = AnswerBookkeeping(settlement: exchange.pendingSettlement?.settlement,
                                                leaseRelease: lease?.take())
            let written = try? await cache.revalidated(exchange.response, for: request, endpoint: endpoint,
                                                       requestedAt: exchange.sentAt, bookkeeping: bookkeeping)
            try await finish(bookkeeping, written: written?.booked, pending: exchange.pendingSettlement,
                             endpoint: endpoint, ledger: &ledger)
            if let revalidated = written?.cached {
                return GateResponse(response: revalidated.response, body: revalidated.body, source: .revalidated,
                                    unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: revalidated.age)
            }
            // A 304 for nothing stored (evicted meanwhile, or another process's entry): pass it on.
            return Self.networkAnswer(exchange, ledger)
        }
        if status == 429 || (500...599).contains(status), let stored {
            return await stale(stored, reason: .upstreamFailure, endpoint: endpoint, ledger: ledger, logger: logger)
        }
        if exchange.stream != nil || !storesAnswer {
            logger.debug("cache miss: not stored", metadata: [
                "cache.reason": "\(storesAnswer ? "the body is larger than the cache's maxBodySize" : "the request has a body")",
            ])
            try await finish(AnswerBookkeeping(), written: nil, pending: exchange.pendingSettlement, endpoint: endpoint,
                             ledger: &ledger)
            return Self.networkAnswer(exchange, ledger)
        }
        guard request.method == .get else {
            // A HEAD revises stored GETs and an unsafe method invalidates stored answers of other
            // resources, which a lookup cannot know to wait for: written before the answer.
            let bookkeeping = AnswerBookkeeping(settlement: exchange.pendingSettlement?.settlement,
                                                leaseRelease: lease?.take())
            let booked = await store(exchange, for: request, endpoint: endpoint, bookkeeping: bookkeeping, logger: logger)
            try await finish(bookkeeping, written: booked, pending: exchange.pendingSettlement, endpoint: endpoint,
                             ledger: &ledger)
            return Self.networkAnswer(exchange, ledger)
        }
        storeAfterAnswer(exchange, request: request, endpoint: endpoint, lease: lease, logger: logger)
        return Self.networkAnswer(exchange, ledger)
    }

    /// The cache's store of an answer, with `bookkeeping` in its transaction; nil when nothing
    /// was written (the bookkeeping is then the caller's to write). A cache that cannot be written
    /// never fails the request.
    private func store(
        _ exchange: Exchange, for request: HTTPRequest, endpoint: String, bookkeeping: AnswerBookkeeping, logger: Logger
    ) async -> AnswerBookkeepingResult? {
        do {
            return try await cache.storeResponse(exchange.response, body: exchange.body, for: request, endpoint: endpoint,
                                                 requestedAt: exchange.sentAt, bookkeeping: bookkeeping).booked
        } catch {
            logger.warning("could not store the response in the cache", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Queues the cache's store of an answer the caller gets as it came, with the attempt's
    /// settlement and the lease's return, in one transaction after the answer.
    private func storeAfterAnswer(
        _ exchange: Exchange, request: HTTPRequest, endpoint: String, lease: LeaseReturn?, logger: Logger
    ) {
        writeAfterAnswer(exchange, resource: try? cache.key(for: request).resourceKey, lease: lease, endpoint: endpoint,
                         logger: logger) { [self] bookkeeping in
            await store(exchange, for: request, endpoint: endpoint, bookkeeping: bookkeeping, logger: logger)
        }
    }

    /// Queues the write of a `304`'s revision, the attempt's settlement and the lease's return, in
    /// one transaction after the answer. It revises the entry the answer was built from, with the
    /// revision computed for the answer while that entry is unchanged, or nothing: another process
    /// may have replaced it meanwhile, and the 304 does not confirm its replacement.
    private func reviseAfterAnswer(
        _ exchange: Exchange, answered: RevisedInMemory, at revisedAt: Date, request: HTTPRequest, endpoint: String,
        lease: LeaseReturn?, logger: Logger
    ) {
        writeAfterAnswer(exchange, resource: answered.base.resourceKey, lease: lease, endpoint: endpoint,
                         logger: logger) { [self] bookkeeping in
            try? await cache.revalidated(exchange.response, for: request, endpoint: endpoint,
                                         requestedAt: exchange.sentAt, bookkeeping: bookkeeping, at: revisedAt,
                                         answered: answered).booked
        }
    }

    /// Queues `write` — the cache's store or revision of `resource`, carrying the attempt's
    /// settlement and the lease's return in its transaction — and then writes whatever of those
    /// it did not carry. The caller's answer is already out, its units counted as if every
    /// refund succeeds: one that falls short is logged.
    private func writeAfterAnswer(
        _ exchange: Exchange, resource: String?, lease: LeaseReturn?, endpoint: String, logger: Logger,
        _ write: @escaping @Sendable (AnswerBookkeeping) async -> AnswerBookkeepingResult?
    ) {
        let pending = exchange.pendingSettlement
        let bookkeeping = AnswerBookkeeping(settlement: pending?.settlement, leaseRelease: lease?.take())
        afterAnswerWrites.enqueue(resource: resource) { [self] in
            // This ledger is the write's alone.
            var ledger = AttemptLedger()
            do {
                try await finish(bookkeeping, written: await write(bookkeeping), pending: pending, endpoint: endpoint,
                                 ledger: &ledger)
            } catch {
                logger.warning("could not write an answer's settlement", metadata: ["error": "\(error)"])
            }
            if let pending, let reservation = pending.reservation, pending.settlement.refundReservationID != nil,
               ledger.unitsCharged != -reservation.cost {
                // The answer said it cost nothing: the ledger kept what it could not give back
                // (a reset or a reconciliation of the day gave those units back already, or the write failed).
                logger.warning("an answer reported as free was not refunded in full", metadata: [
                    "gate.endpoint": "\(endpoint)", "gate.reservation": "\(reservation.id)",
                    "quota.refunded": "\(-ledger.unitsCharged)", "quota.cost": "\(reservation.cost)",
                ])
            }
        }
    }

    /// Reports bookkeeping the cache's write carried, or writes on its own what it did not carry.
    private func finish(
        _ bookkeeping: AnswerBookkeeping, written: AnswerBookkeepingResult?, pending: PendingSettlement?,
        endpoint: String, ledger: inout AttemptLedger
    ) async throws {
        if let written {
            if let pending, let result = written.settlement {
                _ = await report(result, of: pending, endpoint: endpoint, ledger: &ledger)
            }
            return
        }
        if let release = bookkeeping.leaseRelease {
            // First, so that a settlement that fails does not keep other processes waiting; a
            // lease that cannot be given back lapses on its own.
            try? await storage.releaseCoalescingLease(resourceKey: release.resourceKey, holder: release.holder)
        }
        if let pending { try await settle(pending, endpoint: endpoint, ledger: &ledger) }
    }

    /// An authority without its user information (`user:password@`), which is a credential.
    static func hostAndPort(of authority: String) -> Substring {
        guard let at = authority.lastIndex(of: "@") else { return authority[...] }
        return authority[authority.index(after: at)...]
    }

    /// A GET or HEAD with a body: the cache key cannot see the body, so such a request is neither
    /// answered from the cache nor stored (RFC 9110 §9.3.1 gives the body no meaning; some APIs
    /// search with it all the same).
    static func isSafeWithBody(_ request: HTTPRequest, _ body: Data?) -> Bool {
        guard let body, !body.isEmpty else { return false }
        return request.method == .get || request.method == .head
    }

    /// The server's own answer, as the caller gets it.
    private static func networkAnswer(_ exchange: Exchange, _ ledger: AttemptLedger) -> GateResponse {
        GateResponse(response: exchange.response, body: exchange.body, source: .network,
                     unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: nil, bodyStream: exchange.stream)
    }

    // MARK: Serving stale

    private func serveStale(
        _ stored: CachedResponse?, because refusal: TollgateError, endpoint: String, ledger: AttemptLedger,
        logger: Logger
    ) async throws -> GateResponse {
        let reason: StaleReason = switch refusal {
        case .circuitOpen: .circuitOpen
        case .throttled: .throttled
        case .quotaExceeded: .quotaExhausted
        }
        return try await serveStale(stored, reason: reason, orThrow: refusal, endpoint: endpoint,
                                    ledger: ledger, logger: logger)
    }

    private func serveStale(
        _ stored: CachedResponse?, reason: StaleReason, orThrow error: any Error, endpoint: String,
        ledger: AttemptLedger, logger: Logger
    ) async throws -> GateResponse {
        guard let stored else {
            logger.info("request refused and nothing stored to serve", metadata: ["gate.reason": "\(reason.rawValue)"])
            throw error
        }
        return await stale(stored, reason: reason, endpoint: endpoint, ledger: ledger, logger: logger)
    }

    private func stale(
        _ stored: CachedResponse, reason: StaleReason, endpoint: String, ledger: AttemptLedger, logger: Logger
    ) async -> GateResponse {
        do {
            try await cache.recordStaleServe(stored, endpoint: endpoint)
        } catch {
            logger.warning("could not count a stale serve", metadata: ["error": "\(error)"])
        }
        logger.info("serving stale response", metadata: [
            "gate.reason": "\(reason.rawValue)", "gate.age_seconds": "\(Int(stored.age.timeInterval))",
        ])
        return GateResponse(response: stored.response, body: stored.body, source: .stale(reason),
                            unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: stored.age)
    }

    /// Whether an error of the admission or settlement means the ledger cannot be written (a full
    /// disk, a read-only file, a lock held too long, a database server out of reach), as opposed to
    /// an invalid argument (a programming error, never sent past) or a cancellation. Every store's
    /// errors say which they are (``StorageFailure``), so this is the same on either store.
    private func isLedgerFailure(_ error: any Error) -> Bool {
        if let error = error as? any StorageFailure { return error.isStorageFailure }
        return !(error is CancellationError || error is AnotherProcessLeads)
    }

    /// Google's reasons for "the daily quota is spent": the ledger marks the bucket exhausted.
    static let dailyQuotaReasons: Set<String> = ["quotaExceeded", "dailyLimitExceeded"]
}
