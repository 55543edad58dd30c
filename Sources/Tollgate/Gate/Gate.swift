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
///    returned at once: no throttle, no quota, no network (source ``ResponseSource/cache``); so is
///    one within the freshness the app chose (``GateConfiguration/freshFor``, source ``ResponseSource/fresh``).
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
/// 6. **Settle.** A `304` costs what the API documents (1 unit on YouTube, nothing on GitHub, the
///    full price by default: ``NotModifiedCost``) and returns the stored body with the 304's
///    headers merged in (``ResponseSource/revalidated``); a `200` is stored
///    (``ResponseSource/network``); the server's "daily quota exceeded" marks the bucket
///    exhausted until the next Pacific midnight for every process.
///
/// Every decision of one request is made by a ``GateRequestStateMachine``, a value with no I/O; the
/// gate's extensions carry its actions out, one concern a file: the request path (`Gate+Route`),
/// admission, sending, settlement, the writes after the answer, stale serving, coalescing and the
/// cache's directives. Redirects are followed here, hop by hop (``RedirectChain``).
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
    let transport: any HTTPTransport
    let clock: any TollgateClock
    let logger: Logger
    let metrics: GateMetrics
    /// Identical requests in flight in this process.
    let coalescer = RequestCoalescer()
    /// Batches of single-ID requests collecting in this process (``GateConfiguration/batching``).
    let batcher = RequestBatcher()
    /// `stale-while-revalidate` revalidations running after their stale answer was returned, by
    /// resource, so one runs at a time per resource and ``flush()`` can wait for them.
    let backgroundRevalidations = Mutex<[String: Task<Void, Never>]>([:])
    /// The logger with each endpoint's metadata, made once per endpoint.
    let endpointLoggers: EndpointLoggers
    /// A GET's cache store or revision, with its settlement, written after its answer was
    /// returned; ``flush()`` waits for them.
    let afterAnswerWrites = AfterAnswerWrites()
    /// The rules one request's state machine decides by, made once.
    let policies: GateRequestStateMachine.Policies
    /// The lifetimes that follow the budget (``ChosenFreshness/followsBudget``), by endpoint, as
    /// last decided.
    let budgetFreshness = Mutex<[String: BudgetFreshness.Decision]>([:])

    /// Creates a gate over a store.
    /// - Parameters:
    ///   - store: Where every service's state lives: an `SQLiteStore` file, or any other store.
    ///   - transport: How requests reach the network.
    ///   - configuration: The services' rules; the YouTube Data API v3 preset by default.
    ///   - clock: The wall clock and sleeper every service uses.
    ///   - logger: Where the gate and its services log; the task's current logger by default.
    ///   - metrics: Where the gate reports its metrics (see the table in `GateMetrics`); the
    ///     bootstrapped `MetricsSystem` by default.
    /// - Throws: A configuration error from a service (an inconsistent cost table, a bad limit).
    public convenience init(
        store: any GateStorage,
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
        self.policies = GateRequestStateMachine.Policies(configuration)
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
        var chain = RedirectChain(request: request, body: body, policy: options.redirects ?? configuration.redirects,
                                  secrets: cache.secretRules)
        var unitsCharged = 0
        var attempts = 0
        while true {
            let hop = chain.hop
            let hopEndpoint = chain.endpoint(for: endpoint)
            var routed = GateRequest(
                request: hop.request, body: hop.body, endpoint: hopEndpoint, options: chain.options(for: options),
                transport: transport ?? self.transport,
                revalidation: GateRequest.isSafeWithBody(hop.request, hop.body) ? .bypassingCache
                    : transport == nil ? .inBackground : .inline,
                logger: logger
            )
            let answer: GateResponse
            do {
                answer = try await route(&routed)
                metrics.record(answer, endpoint: hopEndpoint)
            } catch {
                if let refusal = error as? TollgateError { metrics.record(refusal, endpoint: endpoint) }
                throw GateFailure(error: error, unitsCharged: unitsCharged + routed.totals.unitsCharged,
                                  attempts: attempts + routed.totals.attempts)
            }
            unitsCharged += answer.unitsCharged
            attempts += answer.attempts
            switch chain.answered(answer.response) {
            case .deliver(let loop):
                if loop {
                    logger.debug("redirect loop: the redirect is returned as it is", metadata: [
                        "gate.endpoint": "\(endpoint)", "gate.status": "\(answer.status.code)",
                    ])
                }
                var delivered = answer
                delivered.unitsCharged = unitsCharged
                delivered.attempts = attempts
                delivered.redirects = chain.redirects
                return delivered
            case .follow(let next):
                logger.debug("following a redirect", metadata: [
                    "gate.endpoint": "\(endpoint)", "gate.status": "\(answer.status.code)",
                    "gate.cross_origin": "\(next.crossedOrigin)",
                ])
            }
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
}
