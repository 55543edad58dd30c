import Foundation
import HTTPTypes
import Logging

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
    private let transport: any HTTPTransport
    private let clock: any TollgateClock
    private let logger: Logger

    /// Creates a gate over a store.
    /// - Parameters:
    ///   - store: The SQLite file that holds every service's state.
    ///   - transport: How requests reach the network.
    ///   - configuration: The services' rules; the YouTube Data API v3 preset by default.
    ///   - clock: The wall clock and sleeper every service uses.
    ///   - logger: Where the gate and its services log; the task's current logger by default.
    /// - Throws: A configuration error from a service (an inconsistent cost table, a bad limit).
    public convenience init(
        store: SQLiteStore,
        transport: any HTTPTransport = URLSessionTransport(),
        configuration: GateConfiguration = .youTubeDataAPIv3,
        clock: any TollgateClock = SystemClock(),
        logger: Logger = Logger.current
    ) throws {
        try self.init(
            cacheStorage: store, circuitStorage: store, throttleStorage: store, quotaStorage: store,
            transport: transport, configuration: configuration, clock: clock, logger: logger
        )
    }

    /// Creates a gate over any storage backend.
    /// - Parameters:
    ///   - cacheStorage: Where cache entries live.
    ///   - circuitStorage: Where circuits live.
    ///   - throttleStorage: Where throttle windows live.
    ///   - quotaStorage: Where the ledger lives.
    ///   - transport: How requests reach the network.
    ///   - configuration: The services' rules.
    ///   - clock: The wall clock and sleeper every service uses.
    ///   - logger: Where the gate and its services log.
    /// - Throws: A configuration error from a service.
    public init(
        cacheStorage: any CacheStorage,
        circuitStorage: any CircuitStorage,
        throttleStorage: any ThrottleStorage,
        quotaStorage: any QuotaStorage,
        transport: any HTTPTransport,
        configuration: GateConfiguration,
        clock: any TollgateClock,
        logger: Logger = Logger.current
    ) throws {
        self.configuration = configuration
        self.cache = try ETagCache(storage: cacheStorage, configuration: configuration.cache, clock: clock, logger: logger)
        self.circuit = CircuitBreaker(storage: circuitStorage, configuration: configuration.circuit, clock: clock, logger: logger)
        self.throttle = try RequestThrottler(
            storage: throttleStorage, configuration: configuration.throttle, clock: clock, logger: logger
        )
        self.quota = try QuotaLedger(storage: quotaStorage, configuration: configuration.quota, clock: clock, logger: logger)
        self.transport = transport
        self.clock = clock
        self.logger = logger
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
    ///   served; a storage error when the ledger cannot be written (the gate fails closed).
    public func send(
        _ request: HTTPRequest,
        body: Data? = nil,
        endpoint: String,
        options: GateRequestOptions = GateRequestOptions(),
        via transport: (any HTTPTransport)? = nil
    ) async throws -> GateResponse {
        let transport = transport ?? self.transport
        var logger = self.logger
        logger[metadataKey: "gate.endpoint"] = "\(endpoint)"

        // 1. Cache lookup. A cache that cannot be read never fails the request.
        let lookup: CacheLookup
        do {
            lookup = try await cache.lookup(request, endpoint: endpoint)
        } catch {
            logger.warning("cache lookup failed; sending without it", metadata: ["error": "\(error)"])
            lookup = .miss(request)
        }
        if case .fresh(let cached) = lookup {
            logger.debug("served fresh from cache")
            return GateResponse(response: cached.response, body: cached.body, source: .cache,
                                unitsCharged: 0, attempts: 0, age: cached.age)
        }
        let stored = options.allowsStale ? lookup.cachedResponse : nil
        let outgoing = lookup.requestToSend ?? request

        // 2–5. Circuit, throttle, quota and send, for every attempt, under the retry policy.
        var ledger = AttemptLedger()
        let exchange: Exchange
        do {
            exchange = try await configuration.retry.run(
                endpoint: endpoint,
                method: request.method,
                markedIdempotent: options.markedIdempotent,
                circuit: circuit,
                clock: clock,
                logger: logger
            ) { attempt in
                try await admitThroughThrottle(endpoint: endpoint, canServeStale: stored != nil && attempt == 1)
                let reservation = try await quota.reserve(endpoint: endpoint, cost: options.cost)
                ledger.charged(reservation.cost)
                ledger.attempts = attempt
                return try await sendAttempt(outgoing, body: body, endpoint: endpoint, reservation: reservation,
                                             via: transport, ledger: &ledger)
            }
        } catch let refusal as TollgateError {
            return try await serveStale(stored, because: refusal, endpoint: endpoint, ledger: ledger, logger: logger)
        } catch let failure as HTTPTransportError {
            return try await serveStale(stored, reason: .upstreamFailure, orThrow: failure, endpoint: endpoint,
                                        ledger: ledger, logger: logger)
        }

        // 6. Settle.
        return try await settle(exchange, request: outgoing, stored: stored, endpoint: endpoint, options: options,
                                ledger: ledger, logger: logger)
    }

    /// Writes the cache's buffered LRU touches and statistics. Call before a short-lived tool exits.
    /// - Throws: A storage error.
    public func flush() async throws {
        try await cache.flush()
    }

    // MARK: Steps

    /// What happened over one `send`'s attempts.
    private struct AttemptLedger {
        var unitsCharged = 0
        var attempts = 0
        mutating func charged(_ units: Int) { unitsCharged += units }
        mutating func refunded(_ units: Int) { unitsCharged -= units }
    }

    /// One answer from the server.
    private struct Exchange: Sendable {
        var response: HTTPResponse
        var body: Data
        var serverSaysQuotaSpent: Bool
    }

    private func admitThroughThrottle(endpoint: String, canServeStale: Bool) async throws {
        let admission = try await throttle.admit(endpoint: endpoint)
        guard !admission.allowed else { return }
        if canServeStale {
            throw TollgateError.throttled(retryAfter: admission.retryAfter ?? 0)
        }
        try await throttle.waitUntilAllowed(endpoint: endpoint, maximumWait: configuration.maximumThrottleWait)
    }

    private func sendAttempt(
        _ request: HTTPRequest, body: Data?, endpoint: String, reservation: QuotaReservation,
        via transport: any HTTPTransport, ledger: inout AttemptLedger
    ) async throws -> AttemptResult<Exchange> {
        let response: HTTPResponse
        let responseBody: Data
        do {
            (response, responseBody) = try await transport.send(request, body: body)
        } catch let error as HTTPTransportError {
            // The charge stays: the request may have reached the server, and the ledger never under-counts.
            return .failure(error, trigger: error.retryTrigger, outcome: error.circuitOutcome)
        }
        let status = response.status.code
        if case .refunded(let units) = try await quota.settle(reservation, responseStatus: status) {
            ledger.refunded(units)
        }
        let quotaSpent = status == 403 && !Set(GoogleErrorReasons.reasons(in: responseBody))
            .isDisjoint(with: Self.dailyQuotaReasons)
        if quotaSpent {
            try await quota.markExhausted(endpoint: endpoint)
        }
        return .response(
            Exchange(response: response, body: responseBody, serverSaysQuotaSpent: quotaSpent),
            status: status,
            retryAfter: response.headerFields[.retryAfter].flatMap(RetryAfter.init(headerValue:)),
            outcome: configuration.circuit.classifier.outcome(status: status, body: responseBody)
        )
    }

    private func settle(
        _ exchange: Exchange, request: HTTPRequest, stored: CachedResponse?, endpoint: String,
        options: GateRequestOptions, ledger: AttemptLedger, logger: Logger
    ) async throws -> GateResponse {
        let status = exchange.response.status.code
        if exchange.serverSaysQuotaSpent {
            let price = quota.price(of: endpoint)
            let refusal = TollgateError.quotaExceeded(
                endpoint: endpoint, cost: options.cost ?? price.units, remaining: 0, resetsAt: quota.resetInstant
            )
            return try await serveStale(stored, because: refusal, endpoint: endpoint, ledger: ledger, logger: logger)
        }
        if status == 304 {
            if let revalidated = try? await cache.revalidated(exchange.response, for: request, endpoint: endpoint) {
                return GateResponse(response: revalidated.response, body: revalidated.body, source: .revalidated,
                                    unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: revalidated.age)
            }
            // A 304 for nothing stored (evicted meanwhile, or another process's entry): pass it on.
            return GateResponse(response: exchange.response, body: exchange.body, source: .network,
                                unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: nil)
        }
        if status == 429 || (500...599).contains(status), stored != nil {
            return try await serveStale(stored, reason: .upstreamFailure,
                                        orReturn: exchange, endpoint: endpoint, ledger: ledger, logger: logger)
        }
        do {
            try await cache.storeResponse(exchange.response, body: exchange.body, for: request, endpoint: endpoint)
        } catch {
            // A cache that cannot be written never fails the request.
            logger.warning("could not store the response in the cache", metadata: ["error": "\(error)"])
        }
        return GateResponse(response: exchange.response, body: exchange.body, source: .network,
                            unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: nil)
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

    private func serveStale(
        _ stored: CachedResponse?, reason: StaleReason, orReturn exchange: Exchange, endpoint: String,
        ledger: AttemptLedger, logger: Logger
    ) async throws -> GateResponse {
        guard let stored else {
            return GateResponse(response: exchange.response, body: exchange.body, source: .network,
                                unitsCharged: ledger.unitsCharged, attempts: ledger.attempts, age: nil)
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

    /// Google's reasons for "the daily quota is spent": the ledger marks the bucket exhausted.
    static let dailyQuotaReasons: Set<String> = ["quotaExceeded", "dailyLimitExceeded"]
}
