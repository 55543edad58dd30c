import Foundation
import HTTPTypes

/// Every decision of one request through the gate, apart from its I/O: a value with no `await`,
/// no store and no transport, in the shape of AsyncHTTPClient's `RequestBag.StateMachine`.
///
/// The gate's async code reports what happened — the cache's verdict, the admission's, the
/// exchange's, the settlement's, a timer's end — and carries out the action each event returns:
///
/// ```
/// cacheLookedUp ──► answerFromCache | answerNotCached | serveStaleAndRevalidate | send
/// readyToSend ────► answerFromCache | admit
/// admit ──► admitted ───────────────► send
///       ──► throttled ──────────────► waitForThrottle (then throttleWaitEnded ► admit) | serveStale | fail
///       ──► refused ────────────────► serveStale | fail
///       ──► admissionFailed ────────► sendUnrecorded | fail          (LedgerFailurePolicy)
/// send ──► responseReceived / transportFailed ► settleNow | settleWithAnswer
/// settle ─► attemptSettled / settlementDeferred / settlementFailed
///          ► retry (then retryTimerFired ► admit) | finish(answer | serveStale | fail | failQuotaSpent)
/// answer revalidated nothing ─► revisionFoundNothing ► resendUnconditionally | answerAsItIs
/// ```
///
/// A body the transport streams (``GateRequestOptions/streamsBodies``) is only ever a `2xx`'s, or
/// an error's too large to read whole: a `2xx` is never retried, so the machine's last word on a
/// streamed answer is one of the `stream` deliveries, and nothing replays a stream that reached
/// the caller. Its settlement (and its store) waits for the stream's end.
///
/// Tested without network or store (`GateRequestStateMachineTests`).
struct GateRequestStateMachine {
    /// The gate's rules the decisions follow, made once per gate: the machine holds a reference,
    /// so a request copies none of them.
    final class Policies: Sendable {
        /// When and how long to wait before another attempt.
        let retry: RetryPolicy
        /// The endpoints that retry by a policy of their own.
        let endpointRetries: [String: RetryPolicy]
        /// What an answer tells the circuit.
        let classifier: OutcomeClassifier
        /// What to do when the ledger cannot be written.
        let ledgerFailurePolicy: LedgerFailurePolicy
        /// The longest a request waits in total for a full throttle window.
        let maximumThrottleWait: Duration
        /// The answers that say a bucket's quota is spent.
        let quotaExhaustedAnswers: [QuotaExhaustionRule]

        init(retry: RetryPolicy = .default, classifier: OutcomeClassifier = OutcomeClassifier(),
             ledgerFailurePolicy: LedgerFailurePolicy = .failClosed, maximumThrottleWait: Duration = .zero,
             quotaExhaustedAnswers: [QuotaExhaustionRule] = QuotaExhaustionRule.google,
             endpointRetries: [String: RetryPolicy] = [:]) {
            self.retry = retry
            self.endpointRetries = endpointRetries
            self.classifier = classifier
            self.ledgerFailurePolicy = ledgerFailurePolicy
            self.maximumThrottleWait = maximumThrottleWait
            self.quotaExhaustedAnswers = quotaExhaustedAnswers
        }

        convenience init(_ configuration: GateConfiguration) {
            self.init(retry: configuration.retry, classifier: configuration.circuit.classifier,
                      ledgerFailurePolicy: configuration.ledgerFailurePolicy,
                      maximumThrottleWait: configuration.maximumThrottleWait,
                      quotaExhaustedAnswers: configuration.quotaExhaustedAnswers,
                      endpointRetries: configuration.endpointRetries)
        }

        /// The retry policy of `endpoint`: its own, else the gate's.
        func retry(for endpoint: String?) -> RetryPolicy {
            endpoint.flatMap { endpointRetries[$0] } ?? retry
        }

        /// Whether an answer says its quota is spent. The body is read for error reasons only
        /// when a rule has the answer's status.
        func quotaSpent(status: Int, fields: HTTPFields, body: Data) -> Bool {
            let candidates = quotaExhaustedAnswers.filter { $0.status == status }
            guard !candidates.isEmpty else { return false }
            let reasons = candidates.contains { $0.reason != nil } ? GoogleErrorReasons.reasons(in: body) : []
            return candidates.contains { $0.matches(status: status, fields: fields, reasons: reasons) }
        }
    }

    /// What the cache said about the request.
    enum CacheVerdict: Sendable, Hashable {
        /// A stored response still fresh.
        case fresh
        /// A stored response that must be revalidated; `withinStaleWhileRevalidate` when it may be
        /// served while a revalidation runs (RFC 5861 §3).
        case stale(withinStaleWhileRevalidate: Bool)
        /// Nothing usable stored.
        case miss
    }

    /// What the request brings, before anything is sent, that the sending decisions depend on.
    struct Sending: Sendable, Hashable {
        /// The stored response may stand in for an answer the gate cannot get (the caller allows
        /// stale answers and the stored response's directives do).
        var hasServableStale = false
        /// The conditional request revalidates a stored response.
        var revalidates = false
        /// The answer may be stored (false for a request with a body the cache key cannot see).
        var storesAnswer = true
        /// The cache added conditions the caller did not send: a `304` that selects nothing
        /// stored means nothing to the caller.
        var cacheAddedConditions = false
        /// What the endpoint's `304` costs.
        var notModifiedCost = NotModifiedCost.full
        /// The units each attempt is charged on admission.
        var price = 0
        /// The server's "quota spent" answer is the caller's answer, not a failure.
        var passesQuotaSpentAnswers = false
    }

    // MARK: Actions

    /// What to do after the cache lookup.
    enum LookupAction: Sendable, Hashable {
        /// Return the stored response (source `.cache`).
        case answerFromCache
        /// Return a `504` (`only-if-cached` with nothing fresh stored).
        case answerNotCached
        /// Return the stored response (source `.stale(.revalidating)`) and revalidate it in the background.
        case serveStaleAndRevalidate
        /// Coalesce, then ``GateRequestStateMachine/readyToSend(_:_:)``.
        case send
    }

    /// One admission to ask the store for.
    struct Admission: Sendable, Hashable {
        /// The attempt it admits, from 1.
        var attempt: Int
        /// A full throttle window serves the stored response instead of waiting.
        var canServeStale: Bool
        /// The admission takes the coalescing lease (the first attempt only).
        var takesLease: Bool
    }

    /// What to do before an attempt is sent.
    enum AdmissionAction: Sendable, Equatable {
        /// Ask the store to admit the attempt.
        case admit(Admission)
        /// Sleep, then ``GateRequestStateMachine/throttleWaitEnded()``.
        case waitForThrottle(Duration)
        /// Send the attempt.
        case send(attempt: Int)
        /// Send the attempt uncharged and unrecorded: the ledger cannot be written and the policy fails open.
        case sendUnrecorded(attempt: Int, ledgerFailure: ErrorValue)
        /// Return the stored response instead.
        case serveStale(StaleReason)
        /// Throw.
        case fail(ErrorValue)
    }

    /// An attempt's settlement: what it tells the circuit and the ledger.
    struct Settlement: Sendable, Hashable {
        /// The circuit's outcome.
        var outcome: CircuitOutcome
        /// The attempt's charge is refunded.
        var refunds: Bool
        /// Why, for the ledger's event.
        var refundReason: RefundReason?
        /// The attempt's charge is settled at these units, fewer than charged (a `304` that costs
        /// less than the call).
        var settledUnits: Int? = nil
        /// The server said the daily quota is spent: the endpoint's buckets are marked exhausted.
        var quotaSpent: Bool
    }

    /// Why an attempt's charge is given back.
    enum RefundReason: Sendable, Hashable {
        /// A `304 Not Modified` of an endpoint that charges it less than the call.
        case notModified
        /// The request never left the machine; the transport's error, described.
        case neverSent(because: String)
    }

    /// How to write an attempt's settlement.
    enum SettlementAction: Sendable, Equatable {
        /// In a transaction of its own, before deciding on a retry (it may open the circuit);
        /// then ``GateRequestStateMachine/attemptSettled(circuit:now:using:)``.
        case settleNow(Settlement)
        /// With the cache's write of the answer, after the answer: it cannot open the circuit;
        /// then ``GateRequestStateMachine/settlementDeferred(now:using:)``.
        case settleWithAnswer(Settlement)
        /// Throw the error, unrecorded: not the transport's own (a cancellation, say), it says
        /// nothing of the server; the charge stays.
        case fail(ErrorValue)
    }

    /// What to do after an attempt is settled.
    enum AttemptAction: Sendable, Equatable {
        /// Sleep, then ``GateRequestStateMachine/retryTimerFired()``.
        case retry(after: Duration, attempt: Int, trigger: RetryTrigger)
        /// No more attempts; `notRetrying` says why when it is worth a log line.
        case finish(Finish, notRetrying: RetryStopReason?)
    }

    /// How the request ends.
    enum Finish: Sendable, Equatable {
        /// Make the answer from the server's last response.
        case answer(Delivery)
        /// Return the stored response instead.
        case serveStale(StaleReason)
        /// Throw the error (the last attempt's, or the ledger's).
        case fail(ErrorValue)
        /// Throw the endpoint's `quotaExceeded`: the server said the quota is spent and nothing
        /// stored can be served.
        case failQuotaSpent
    }

    /// How the server's last response becomes the answer.
    enum Delivery: Sendable, Hashable {
        /// A `304`: the stored response as it revises it (source `.revalidated`); `inMemory` when
        /// the revision is computed for the answer and written after it.
        case revise(inMemory: Bool)
        /// The answer as it came, not stored; its settlement written before the answer.
        case answerUnstored
        /// Store it, then return it (a HEAD or an unsafe method changes what other lookups find).
        case storeThenAnswer
        /// Return it, and store it after the answer (a GET).
        case answerThenStore
        /// Return its body as it arrives; when the body ends, settle the attempt (its cost read
        /// from the body) and store the body in the same transaction if it came whole within the
        /// cache's limits (a GET).
        case streamThenStore
        /// Write what it changes in the cache first (an unsafe method's invalidations), then
        /// return its body as it arrives and settle the attempt when the body ends.
        case storeThenStream
        /// Return its body as it arrives, never stored; settle the attempt when the body ends.
        case streamUnstored
    }

    /// What to do when a `304` revised nothing stored.
    enum RevisionAction: Sendable, Hashable {
        /// Send the caller's request again, without the cache's conditions.
        case resendUnconditionally
        /// Pass the `304` on.
        case answerAsItIs
    }

    // MARK: State

    private enum State {
        case lookingUp
        case coalescing
        case admitting(Admission, waited: Duration)
        case sending(attempt: Int, recorded: Bool, probe: Bool)
        case settling(attempt: Int, Outcome)
        case waitingToRetry(attempt: Int)
        case answering
        case finished
    }

    /// An attempt's outcome, kept until its settlement is known.
    private enum Outcome {
        case response(status: Int, retryAfter: RetryAfter?, quotaSpent: Bool, isStreamed: Bool)
        case transportFailure(HTTPTransportError)
    }

    private var state = State.lookingUp
    private let policies: Policies
    private let method: HTTPRequest.Method
    private let markedIdempotent: Bool
    private let allowsStale: Bool
    /// The endpoint, for its own retry policy; looked up only when an attempt may be retried.
    private let endpoint: String?
    private var sending = Sending()

    /// Creates the machine of one request.
    /// - Parameters:
    ///   - policies: The gate's rules.
    ///   - method: The request's method, for the idempotency rule.
    ///   - options: The caller's per-request choices.
    ///   - endpoint: The endpoint, whose own retry policy applies when it has one.
    init(policies: Policies, method: HTTPRequest.Method, options: GateRequestOptions, endpoint: String? = nil) {
        self.policies = policies
        self.endpoint = endpoint
        self.method = method
        self.markedIdempotent = options.markedIdempotent
        self.allowsStale = options.allowsStale
    }

    /// An event the gate's driver sent in a state that cannot receive it: the driver broke the
    /// machine's protocol (every event above names the states it comes in, and each `switch` lists
    /// every state, so a new state makes the compiler ask what each event does in it).
    private func invalidTransition(_ event: String) -> Never {
        preconditionFailure("\(event) in \(state)")
    }

    // MARK: 1. Cache lookup

    /// The cache's verdict on the request.
    /// - Parameters:
    ///   - verdict: What is stored.
    ///   - onlyIfCached: The request says `Cache-Control: only-if-cached`.
    ///   - revalidatesInBackground: A stale response within `stale-while-revalidate` may be served
    ///     while the gate's own transport revalidates it.
    mutating func cacheLookedUp(
        _ verdict: CacheVerdict, onlyIfCached: Bool, revalidatesInBackground: Bool
    ) -> LookupAction {
        switch state {
        case .lookingUp: break
        case .coalescing, .admitting, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("cacheLookedUp")
        }
        if verdict == .fresh {
            state = .finished
            return .answerFromCache
        }
        if onlyIfCached {
            state = .finished
            return .answerNotCached
        }
        if revalidatesInBackground, allowsStale, verdict == .stale(withinStaleWhileRevalidate: true) {
            state = .finished
            return .serveStaleAndRevalidate
        }
        state = .coalescing
        return .send
    }

    /// The request is about to be sent, after coalescing (which may have looked the cache up again).
    /// - Parameters:
    ///   - verdict: The cache's verdict now.
    ///   - sending: What the request brings.
    mutating func readyToSend(_ verdict: CacheVerdict, _ sending: Sending) -> AdmissionAction? {
        switch state {
        case .coalescing: break
        case .lookingUp, .admitting, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("readyToSend")
        }
        if verdict == .fresh {
            // Stored meanwhile by an earlier request, and fresh: no request at all.
            state = .finished
            return nil
        }
        self.sending = sending
        return admit(attempt: 1)
    }

    // MARK: 2–4. Admission

    /// The store admitted the attempt: circuit, throttle and quota passed, the charge made.
    /// - Parameter isProbe: The attempt is the half-open circuit's probe.
    mutating func admitted(isProbe: Bool) -> AdmissionAction {
        let admission: Admission
        switch state {
        case .admitting(let admissionFound, _): admission = admissionFound
        case .lookingUp, .coalescing, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("admitted")
        }
        state = .sending(attempt: admission.attempt, recorded: true, probe: isProbe)
        return .send(attempt: admission.attempt)
    }

    /// The endpoint's throttle window is full.
    /// - Parameter retryAfter: When a request would pass, in seconds.
    mutating func throttled(retryAfter: TimeInterval) -> AdmissionAction {
        let (admission, waited): (Admission, Duration)
        switch state {
        case .admitting(let admissionFound, let waitedFound): (admission, waited) = (admissionFound, waitedFound)
        case .lookingUp, .coalescing, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("throttled")
        }
        let delay = Duration.milliseconds(SaturatingConversion.int64((retryAfter * 1000).rounded(.up)))
        guard !admission.canServeStale, waited + delay <= policies.maximumThrottleWait else {
            return refused(.throttled(retryAfter: retryAfter))
        }
        state = .admitting(admission, waited: waited + delay)
        return .waitForThrottle(delay)
    }

    /// The throttle wait ended: ask again.
    mutating func throttleWaitEnded() -> AdmissionAction {
        let admission: Admission
        switch state {
        case .admitting(let admissionFound, _): admission = admissionFound
        case .lookingUp, .coalescing, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("throttleWaitEnded")
        }
        return .admit(admission)
    }

    /// The circuit or the quota refused the attempt (or a full throttle window was not waited out).
    /// - Parameter refusal: The refusal.
    mutating func refused(_ refusal: TollgateError) -> AdmissionAction {
        switch state {
        case .admitting: break
        case .lookingUp, .coalescing, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("refused")
        }
        state = .finished
        guard sending.hasServableStale else { return .fail(ErrorValue(refusal)) }
        let reason: StaleReason = switch refusal {
        case .circuitOpen: .circuitOpen
        case .throttled: .throttled
        case .quotaExceeded: .quotaExhausted
        }
        return .serveStale(reason)
    }

    /// The admission threw.
    /// - Parameter error: What it threw.
    mutating func admissionFailed(_ error: any Error) -> AdmissionAction {
        let admission: Admission
        switch state {
        case .admitting(let admissionFound, _): admission = admissionFound
        case .lookingUp, .coalescing, .sending, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("admissionFailed")
        }
        if Self.goesUnrecorded(error, under: policies.ledgerFailurePolicy) {
            state = .sending(attempt: admission.attempt, recorded: false, probe: false)
            return .sendUnrecorded(attempt: admission.attempt, ledgerFailure: ErrorValue(error))
        }
        state = .finished
        return .fail(ErrorValue(error))
    }

    // MARK: 5. The attempt's outcome

    /// The most of an error's body decoded to read its reasons: Google's errors are a few hundred bytes.
    static let errorBodyLimit = 1 << 20

    /// The server answered.
    /// - Parameters:
    ///   - status: The status code.
    ///   - fields: The answer's fields, for the "quota spent" rules that name one.
    ///   - body: The body, read for Google's error reasons on a `4xx`.
    ///   - retryAfter: The answer's `Retry-After`.
    ///   - isStreamed: The body comes back as a stream: delivered as it arrives, settled (and
    ///     stored, when it may be) when it ends.
    mutating func responseReceived(
        status: Int, fields: HTTPFields = [:], body: Data, retryAfter: RetryAfter?, isStreamed: Bool = false
    ) -> SettlementAction {
        let (attempt, recorded, probe): (Int, Bool, Bool)
        switch state {
        case .sending(let attemptFound, let recordedFound, let probeFound): (attempt, recorded, probe) = (attemptFound, recordedFound, probeFound)
        case .lookingUp, .coalescing, .admitting, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("responseReceived")
        }
        // An error's reasons are read as the server wrote them: a client that asked for gzip (every
        // Google client library does, and a proxy passes its Accept-Encoding on) gets errors compressed.
        let readable = (400...499).contains(status)
            ? ContentDecoding.decoded(body, fields: fields, limit: Self.errorBodyLimit) ?? body : body
        let quotaSpent = policies.quotaSpent(status: status, fields: fields, body: readable)
        // A spent quota says nothing of the server's health, whatever its status (GitHub's 429 with
        // X-RateLimit-Remaining: 0 included).
        let outcome = quotaSpent ? .neutral : policies.classifier.outcome(status: status, body: readable)
        // The core's one rule of what a 304 costs, as the ledger's own settle follows it.
        let charge = sending.notModifiedCost.charge(forStatus: status, price: sending.price)
        let refunds = charge == .refunded
        let settledUnits: Int? = if case .settled(let units) = charge { units } else { nil }
        let settlement = Settlement(outcome: outcome, refunds: refunds,
                                    refundReason: refunds || settledUnits != nil ? .notModified : nil,
                                    settledUnits: settledUnits, quotaSpent: quotaSpent)
        state = .settling(attempt: attempt, .response(status: status, retryAfter: retryAfter, quotaSpent: quotaSpent,
                                                      isStreamed: isStreamed))
        // A success that is neither the half-open probe nor "quota spent" cannot open the circuit:
        // its settlement shares the answer's write, after the answer.
        if outcome == .success, !quotaSpent, !probe, recorded { return .settleWithAnswer(settlement) }
        return .settleNow(settlement)
    }

    /// The transport threw instead of answering.
    /// - Parameter error: Its error.
    mutating func transportFailed(_ error: any Error) -> SettlementAction {
        let attempt: Int
        switch state {
        case .sending(let attemptFound, _, _): attempt = attemptFound
        case .lookingUp, .coalescing, .admitting, .settling, .waitingToRetry, .answering, .finished:
            invalidTransition("transportFailed")
        }
        guard let error = error as? HTTPTransportError else {
            state = .finished
            return .fail(ErrorValue(error))
        }
        state = .settling(attempt: attempt, .transportFailure(error))
        // The charge stays when the request may have reached the server: the ledger never
        // under-counts. An attempt that never left the machine is refunded.
        let refunds = !error.mayHaveReachedServer
        return .settleNow(Settlement(outcome: error.circuitOutcome, refunds: refunds,
                                     refundReason: refunds ? .neverSent(because: "\(error)") : nil, quotaSpent: false))
    }

    // MARK: 6. Retry or settle

    /// The settlement was written; the circuit is now in `circuit`.
    /// - Parameters:
    ///   - circuit: The circuit's state after the attempt's outcome.
    ///   - now: The time, for a `Retry-After` date.
    ///   - generator: The jitter's random source.
    mutating func attemptSettled(
        circuit: CircuitState, now: Date, using generator: inout some RandomNumberGenerator
    ) -> AttemptAction {
        let (attempt, outcome): (Int, Outcome)
        switch state {
        case .settling(let attemptFound, let outcomeFound): (attempt, outcome) = (attemptFound, outcomeFound)
        case .lookingUp, .coalescing, .admitting, .sending, .waitingToRetry, .answering, .finished:
            invalidTransition("attemptSettled")
        }
        return decide(after: attempt, outcome, circuit: circuit, now: now, using: &generator)
    }

    /// The settlement waits for the answer's write: the circuit stays closed.
    /// - Parameters:
    ///   - now: The time.
    ///   - generator: The jitter's random source.
    mutating func settlementDeferred(now: Date, using generator: inout some RandomNumberGenerator) -> AttemptAction {
        attemptSettled(circuit: .closed, now: now, using: &generator)
    }

    /// The settlement could not be written.
    /// - Parameters:
    ///   - error: The store's error.
    ///   - now: The time.
    ///   - generator: The jitter's random source.
    /// - Returns: What to do, and whether the attempt goes unrecorded (the ledger cannot be
    ///   written and the policy fails open: the answer is here, and is delivered).
    mutating func settlementFailed(
        _ error: any Error, now: Date, using generator: inout some RandomNumberGenerator
    ) -> (AttemptAction, unrecorded: Bool) {
        switch state {
        case .settling: break
        case .lookingUp, .coalescing, .admitting, .sending, .waitingToRetry, .answering, .finished:
            invalidTransition("settlementFailed")
        }
        if Self.goesUnrecorded(error, under: policies.ledgerFailurePolicy) {
            return (attemptSettled(circuit: .closed, now: now, using: &generator), true)
        }
        state = .finished
        return (.finish(.fail(ErrorValue(error)), notRetrying: nil), false)
    }

    /// The wait before a retry ended.
    mutating func retryTimerFired() -> AdmissionAction {
        let attempt: Int
        switch state {
        case .waitingToRetry(let attemptFound): attempt = attemptFound
        case .lookingUp, .coalescing, .admitting, .sending, .settling, .answering, .finished:
            invalidTransition("retryTimerFired")
        }
        return admit(attempt: attempt + 1)
    }

    /// The answer was a `304` that revised nothing stored (evicted meanwhile, or another
    /// process's entry).
    mutating func revisionFoundNothing() -> RevisionAction {
        switch state {
        case .answering: break
        case .lookingUp, .coalescing, .admitting, .sending, .settling, .waitingToRetry, .finished:
            invalidTransition("revisionFoundNothing")
        }
        state = .finished
        return sending.cacheAddedConditions ? .resendUnconditionally : .answerAsItIs
    }

    // MARK: Rules

    /// Whether an error of the admission or settlement means the ledger cannot be written (a full
    /// disk, a read-only file, a lock held too long, a database server out of reach), as opposed to
    /// an invalid argument (a programming error, never sent past), a cancellation or another
    /// process's coalescing lead. Every store's errors say which they are (``StorageFailure``), so
    /// this is the same on either store.
    static func isLedgerFailure(_ error: any Error) -> Bool {
        if let error = error as? any StorageFailure { return error.isStorageFailure }
        return !(error is CancellationError || error is Gate.AnotherProcessLeads)
    }

    /// Whether a write of the ledger that failed with `error` lets the request go on unrecorded:
    /// only when the ledger cannot be written and the policy fails open. Also the rule for the
    /// settlements written after the answer.
    static func goesUnrecorded(_ error: any Error, under policy: LedgerFailurePolicy) -> Bool {
        policy == .failOpen && isLedgerFailure(error)
    }

    private mutating func admit(attempt: Int) -> AdmissionAction {
        let admission = Admission(attempt: attempt, canServeStale: sending.hasServableStale && attempt == 1,
                                  takesLease: attempt == 1)
        state = .admitting(admission, waited: .zero)
        return .admit(admission)
    }

    private mutating func decide(
        after attempt: Int, _ outcome: Outcome, circuit: CircuitState, now: Date,
        using generator: inout some RandomNumberGenerator
    ) -> AttemptAction {
        var trigger: RetryTrigger?
        var retryAfter: RetryAfter?
        switch outcome {
        case .response(let status, let after, let quotaSpent, _):
            // A spent quota is never retried, whatever its status (a 429 included): the bucket is
            // closed until its window ends.
            trigger = quotaSpent ? nil : .answer(status: status)
            retryAfter = after
        case .transportFailure(let error):
            trigger = error.retryTrigger
        }
        var stop: RetryStopReason?
        if let trigger {
            let retry = policies.retry(for: endpoint)
            // An attempt that opened the circuit is the last; so is one whose stored answer the
            // policy prefers to another attempt.
            if let reason = retry.stopReason(
                for: trigger, method: method, markedIdempotent: markedIdempotent, circuit: circuit,
                servesStaleInstead: sending.hasServableStale && retry.servesStaleInsteadOfRetrying
            ) {
                stop = reason
            } else {
                switch retry.delay(forRetry: attempt, retryAfter: retryAfter, now: now, using: &generator) {
                case .wait(let duration):
                    state = .waitingToRetry(attempt: attempt)
                    return .retry(after: duration, attempt: attempt, trigger: trigger)
                case .giveUp(let reason):
                    stop = reason
                }
            }
        }
        let logged = stop.flatMap { attempt > 1 || $0 != .notRetryable ? $0 : nil }
        return .finish(finish(outcome), notRetrying: logged)
    }

    /// How the request ends with `outcome` as its last attempt's.
    private mutating func finish(_ outcome: Outcome) -> Finish {
        switch outcome {
        case .transportFailure(let error):
            state = .finished
            return sending.hasServableStale ? .serveStale(.upstreamFailure) : .fail(ErrorValue(error))
        case .response(let status, _, let quotaSpent, let isStreamed):
            if quotaSpent {
                state = .finished
                if sending.hasServableStale { return .serveStale(.quotaExhausted) }
                guard sending.passesQuotaSpentAnswers else { return .failQuotaSpent }
                return .answer(isStreamed ? .streamUnstored : .answerUnstored)
            }
            if status == 304 {
                state = .answering
                return .answer(.revise(inMemory: sending.revalidates))
            }
            state = .finished
            if status == 429 || (500...599).contains(status), sending.hasServableStale {
                return .serveStale(.upstreamFailure)
            }
            if isStreamed {
                // An error's body too large to read whole is passed on, never stored.
                guard (200..<300).contains(status), sending.storesAnswer else { return .answer(.streamUnstored) }
                return .answer(method == .get ? .streamThenStore : .storeThenStream)
            }
            if !sending.storesAnswer { return .answer(.answerUnstored) }
            return .answer(method == .get ? .answerThenStore : .storeThenAnswer)
        }
    }
}
