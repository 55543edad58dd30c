import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The gate's decisions, event by event, asserted as actions compared whole (values, errors as
/// ``ErrorValue``s): no network, no store, no clock.
@Suite("The gate's request state machine")
struct GateRequestStateMachineTests {
    typealias Machine = GateRequestStateMachine

    /// Retries without jitter, so delays are exact.
    static let exactRetries = RetryPolicy(jitter: 0)
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A machine past the lookup (a miss, or a stored response to revalidate), about to admit.
    static func sending(
        method: HTTPRequest.Method = .get, options: GateRequestOptions = GateRequestOptions(),
        policies: Machine.Policies = Machine.Policies(retry: exactRetries),
        _ sending: Machine.Sending = Machine.Sending()
    ) -> (Machine, Machine.AdmissionAction?) {
        var machine = Machine(policies: policies, method: method, options: options)
        let verdict: Machine.CacheVerdict = sending.revalidates ? .stale(withinStaleWhileRevalidate: false) : .miss
        #expect(machine.cacheLookedUp(verdict, onlyIfCached: false, revalidatesInBackground: false) == .send)
        let first = machine.readyToSend(verdict, sending)
        return (machine, first)
    }

    /// A machine whose first attempt is being sent.
    static func attempting(
        method: HTTPRequest.Method = .get, options: GateRequestOptions = GateRequestOptions(),
        policies: Machine.Policies = Machine.Policies(retry: exactRetries),
        isProbe: Bool = false, _ sending: Machine.Sending = Machine.Sending()
    ) -> Machine {
        var (machine, _) = Self.sending(method: method, options: options, policies: policies, sending)
        _ = machine.admitted(isProbe: isProbe)
        return machine
    }

    /// A fixed random source: the jitter is off in these policies, so it is never read.
    static var generator: SystemRandomNumberGenerator { SystemRandomNumberGenerator() }

    /// An attempt's settlement, with what a test does not name left out (nothing refunded, no
    /// quota spent).
    static func settlement(
        _ outcome: CircuitOutcome, refunds: Bool = false, reason: Machine.RefundReason? = nil,
        settledUnits: Int? = nil, quotaSpent: Bool = false
    ) -> Machine.Settlement {
        Machine.Settlement(outcome: outcome, refunds: refunds, refundReason: reason, settledUnits: settledUnits,
                           quotaSpent: quotaSpent)
    }

    /// The answer as it came, with no retry worth a log line.
    static func answer(_ delivery: Machine.Delivery) -> Machine.AttemptAction {
        .finish(.answer(delivery), notRetrying: nil)
    }

    // MARK: 1. The cache's verdict

    @Test("a fresh stored response is the answer: nothing admitted, nothing sent")
    func freshHit() {
        var machine = Machine(policies: Machine.Policies(), method: .get, options: GateRequestOptions())
        #expect(machine.cacheLookedUp(.fresh, onlyIfCached: true, revalidatesInBackground: true) == .answerFromCache)
    }

    @Test("only-if-cached with nothing fresh is a 504 made by the gate")
    func onlyIfCached() {
        var machine = Machine(policies: Machine.Policies(), method: .get, options: GateRequestOptions())
        #expect(machine.cacheLookedUp(.stale(withinStaleWhileRevalidate: true), onlyIfCached: true,
                                      revalidatesInBackground: true) == .answerNotCached)
    }

    @Test("within stale-while-revalidate the stored response is served and revalidated behind it, unless the caller refuses stale answers or it cannot run in the background",
          arguments: [(true, true, Machine.LookupAction.serveStaleAndRevalidate), (false, true, .send), (true, false, .send)])
    func staleWhileRevalidate(allowsStale: Bool, inBackground: Bool, expected: Machine.LookupAction) {
        var machine = Machine(policies: Machine.Policies(), method: .get,
                              options: GateRequestOptions(allowsStale: allowsStale))
        #expect(machine.cacheLookedUp(.stale(withinStaleWhileRevalidate: true), onlyIfCached: false,
                                      revalidatesInBackground: inBackground) == expected)
    }

    @Test("a response stored fresh while the request waited for an identical one is the answer")
    func freshAfterCoalescing() {
        var machine = Machine(policies: Machine.Policies(), method: .get, options: GateRequestOptions())
        #expect(machine.cacheLookedUp(.miss, onlyIfCached: false, revalidatesInBackground: false) == .send)
        #expect(machine.readyToSend(.fresh, Machine.Sending()) == nil)
    }

    @Test("the first admission takes the coalescing lease and may serve stale; a retry's does neither")
    func admissions() {
        var (machine, first) = Self.sending(Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(first == .admit(Machine.Admission(attempt: 1, canServeStale: true, takesLease: true)))
        _ = machine.admitted(isProbe: false)
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        var generator = Self.generator
        _ = machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
        #expect(machine.retryTimerFired() == .admit(Machine.Admission(attempt: 2, canServeStale: false, takesLease: false)))
    }

    // MARK: 2. Circuit

    @Test("an open circuit serves the stored response, else refuses")
    func openCircuit() {
        var (withStored, _) = Self.sending(Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(withStored.refused(.circuitOpen(retryAfter: 30)) == .serveStale(.circuitOpen))
        var (bare, _) = Self.sending()
        #expect(bare.refused(.circuitOpen(retryAfter: 30)) == .fail(ErrorValue(TollgateError.circuitOpen(retryAfter: 30))))
    }

    // MARK: 3. Throttle

    @Test("a full throttle window is waited out up to the maximum, then admitted again")
    func throttleWait() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(5)))
        let again = Machine.AdmissionAction.admit(Machine.Admission(attempt: 1, canServeStale: false, takesLease: true))
        #expect(machine.throttled(retryAfter: 2) == .waitForThrottle(.seconds(2)))
        #expect(machine.throttleWaitEnded() == again)
        #expect(machine.throttled(retryAfter: 3) == .waitForThrottle(.seconds(3)))
        #expect(machine.throttleWaitEnded() == again)
        // 2 s + 3 s waited: one more second is past the 5 s maximum.
        #expect(machine.throttled(retryAfter: 1) == .fail(ErrorValue(TollgateError.throttled(retryAfter: 1))))
    }

    @Test("a full throttle window serves the stored response rather than wait")
    func throttleStale() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(60)),
                                        Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(machine.throttled(retryAfter: 2) == .serveStale(.throttled))
    }

    @Test("a throttle wait longer than the maximum is refused at once")
    func throttleRefused() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(1)))
        #expect(machine.throttled(retryAfter: 1.5) == .fail(ErrorValue(TollgateError.throttled(retryAfter: 1.5))))
    }

    // MARK: 4. Quota

    @Test("a spent quota serves the stored response, else refuses with quotaExceeded")
    func quotaRefusal() {
        let refusal = TollgateError.quotaExceeded(endpoint: "videos.list", cost: 1, remaining: 0, resetsAt: Self.now)
        var (withStored, _) = Self.sending(Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(withStored.refused(refusal) == .serveStale(.quotaExhausted))
        var (bare, _) = Self.sending()
        #expect(bare.refused(refusal) == .fail(ErrorValue(refusal)))
    }

    // MARK: 5–6. Attempts and settlement

    @Test("a free 304 is refunded, settled with the answer's write, and answered with the stored response revised")
    func notModifiedRefund() {
        var machine = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .free, price: 1))
        #expect(machine.responseReceived(status: 304, body: Data(), retryAfter: nil)
            == .settleWithAnswer(Self.settlement(.success, refunds: true, reason: .notModified)))
        var generator = Self.generator
        #expect(machine.settlementDeferred(now: Self.now, using: &generator) == Self.answer(.revise(inMemory: true)))
    }

    @Test("a 304 of an endpoint that charges it in full, or as much as the call, keeps the charge")
    func notModifiedCharged() {
        var full = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .full, price: 50))
        #expect(full.responseReceived(status: 304, body: Data(), retryAfter: nil) == .settleWithAnswer(Self.settlement(.success)))
        var youTube = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 1))
        #expect(youTube.responseReceived(status: 304, body: Data(), retryAfter: nil) == .settleWithAnswer(Self.settlement(.success)))
    }

    @Test("a 304 that costs less than the call settles the charge at its units, as the ledger's settle does")
    func notModifiedSettled() {
        var machine = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 100))
        #expect(machine.responseReceived(status: 304, body: Data(), retryAfter: nil)
            == .settleWithAnswer(Self.settlement(.success, reason: .notModified, settledUnits: 1)))
        var ok = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 100))
        #expect(ok.responseReceived(status: 200, body: Data(), retryAfter: nil) == .settleWithAnswer(Self.settlement(.success)))
    }

    @Test("the half-open probe's success is settled at once: it closes the circuit")
    func probeSettlesAtOnce() {
        var machine = Self.attempting(isProbe: true)
        #expect(machine.responseReceived(status: 200, body: Data(), retryAfter: nil) == .settleNow(Self.settlement(.success)))
    }

    @Test("a 5xx is retried after 1 s, 2 s and 4 s; then the last answer is returned, or the stored response")
    func serverErrorBackoff() {
        for hasStored in [false, true] {
            var machine = Self.attempting(Machine.Sending(hasServableStale: hasStored, revalidates: hasStored))
            var generator = Self.generator
            for (attempt, delay) in [(1, Duration.seconds(1)), (2, .seconds(2)), (3, .seconds(4))] {
                #expect(machine.responseReceived(status: 503, body: Data(), retryAfter: nil) == .settleNow(Self.settlement(.failure)))
                #expect(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
                    == .retry(after: delay, attempt: attempt, trigger: .status(503)))
                #expect(machine.retryTimerFired()
                    == .admit(Machine.Admission(attempt: attempt + 1, canServeStale: false, takesLease: false)))
                _ = machine.admitted(isProbe: false)
            }
            _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
            #expect(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
                == .finish(hasStored ? .serveStale(.upstreamFailure) : .answer(.answerThenStore),
                           notRetrying: .retriesExhausted(retries: 3)))
        }
    }

    @Test("a 429's Retry-After wins over the schedule; one past the maximum delay returns the answer at once")
    func retryAfter() {
        var generator = Self.generator
        var machine = Self.attempting()
        _ = machine.responseReceived(status: 429, body: Data(), retryAfter: .seconds(7))
        #expect(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .retry(after: .seconds(7), attempt: 1, trigger: .status(429)))

        var tooLong = Self.attempting()
        #expect(tooLong.responseReceived(status: 429, body: Data(), retryAfter: .seconds(120))
            == .settleNow(Self.settlement(.rateLimited)))
        #expect(tooLong.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.answer(.answerThenStore),
                       notRetrying: .retryAfterExceedsMaximum(retryAfter: .seconds(120), maximum: .seconds(60))))
    }

    @Test("an attempt that opens the circuit stops the retrying")
    func circuitOpensMidRetry() {
        var generator = Self.generator
        var machine = Self.attempting()
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(machine.attemptSettled(circuit: .open, now: Self.now, using: &generator)
            == .finish(.answer(.answerThenStore), notRetrying: .circuitOpen))
    }

    @Test("a request that never left the machine is refunded and is no circuit failure; one that may have reached the server keeps its charge")
    func neverSent() {
        var generator = Self.generator
        var tls = Self.attempting()
        let refused = HTTPTransportError.tlsFailure("certificate")
        #expect(tls.transportFailed(refused)
            == .settleNow(Self.settlement(.neutral, refunds: true, reason: .neverSent(because: "\(refused)"))))
        #expect(tls.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.fail(ErrorValue(refused)), notRetrying: nil))

        var timedOut = Self.attempting()
        #expect(timedOut.transportFailed(HTTPTransportError.timedOut) == .settleNow(Self.settlement(.failure)))
        #expect(timedOut.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .retry(after: .seconds(1), attempt: 1, trigger: .timeout))
    }

    @Test("an error that is not the transport's (a cancellation) ends the request unrecorded")
    func cancelled() {
        var machine = Self.attempting()
        #expect(machine.transportFailed(CancellationError()) == .fail(ErrorValue(CancellationError())))
    }

    @Test("the server's daily quotaExceeded marks the quota spent: the stored response, else quotaExceeded; never retried")
    func serverQuotaSpent() {
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"quotaExceeded"}]}}"#.utf8)
        var generator = Self.generator
        var bare = Self.attempting()
        #expect(bare.responseReceived(status: 403, body: body, retryAfter: nil)
            == .settleNow(Self.settlement(.neutral, quotaSpent: true)))
        #expect(bare.attemptSettled(circuit: .closed, now: Self.now, using: &generator) == .finish(.failQuotaSpent, notRetrying: nil))

        var withStored = Self.attempting(Machine.Sending(hasServableStale: true, revalidates: true))
        _ = withStored.responseReceived(status: 403, body: body, retryAfter: nil)
        #expect(withStored.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.serveStale(.quotaExhausted), notRetrying: nil))

        // Compressed, as Google sends it to a client that asked for gzip (Python's gzip, mtime 0).
        let gzipped = Data(base64Encoded:
            "H4sIAAAAAAACA6tWSi0qyi9SsqpWSs5PSVWyMjEw1oGIFStZRVcrFaUmFufnKVkpFZbmlyS6ViSnpqakpijVxtbWAgAQ8uWYPAAAAA==")!
        var compressed = Self.attempting()
        #expect(compressed.responseReceived(status: 403, fields: [.contentEncoding: "gzip"], body: gzipped, retryAfter: nil)
            == .settleNow(Self.settlement(.neutral, quotaSpent: true)))

        // A proxy's request: the server's own answer goes back, unstored; a stored one still comes first.
        var passed = Self.attempting(Machine.Sending(passesQuotaSpentAnswers: true))
        #expect(passed.responseReceived(status: 403, body: body, retryAfter: nil)
            == .settleNow(Self.settlement(.neutral, quotaSpent: true)))
        #expect(passed.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.answer(.answerUnstored), notRetrying: nil))
        var passedStored = Self.attempting(Machine.Sending(hasServableStale: true, passesQuotaSpentAnswers: true))
        _ = passedStored.responseReceived(status: 403, body: body, retryAfter: nil)
        #expect(passedStored.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.serveStale(.quotaExhausted), notRetrying: nil))
    }

    @Test("an API description's own 'quota spent' answers: a field with its value, on 403 or 429; neutral for the circuit")
    func describedQuotaSpent() throws {
        let remaining = try #require(HTTPField.Name("X-RateLimit-Remaining"))
        let policies = Machine.Policies(retry: Self.exactRetries, quotaExhaustedAnswers: [
            QuotaExhaustionRule(status: 403, field: (remaining, "0")), QuotaExhaustionRule(status: 429, field: (remaining, "0")),
        ])
        var spent = Self.attempting(policies: policies)
        #expect(spent.responseReceived(status: 429, fields: [remaining: " 0"], body: Data(), retryAfter: nil)
            == .settleNow(Self.settlement(.neutral, quotaSpent: true)))
        var generator = Self.generator
        #expect(spent.attemptSettled(circuit: .closed, now: Self.now, using: &generator) == .finish(.failQuotaSpent, notRetrying: nil))
        var left = Self.attempting(policies: policies)
        #expect(left.responseReceived(status: 429, fields: [remaining: "3"], body: Data(), retryAfter: nil)
            == .settleNow(Self.settlement(.rateLimited)))
        // Google's reasons are not this API's: a 403 quotaExceeded body is a plain 403 here.
        var google = Self.attempting(policies: policies)
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"quotaExceeded"}]}}"#.utf8)
        #expect(google.responseReceived(status: 403, body: body, retryAfter: nil) == .settleNow(Self.settlement(.neutral)))
    }

    @Test("an endpoint with a retry policy of its own follows it; the others follow the gate's")
    func endpointRetryPolicy() {
        let policies = Machine.Policies(retry: Self.exactRetries,
                                        endpointRetries: ["videos.insert": RetryPolicy(maximumRetries: 0, jitter: 0)])
        var generator = Self.generator
        var own = Machine(policies: policies, method: .get, options: GateRequestOptions(), endpoint: "videos.insert")
        #expect(own.cacheLookedUp(.miss, onlyIfCached: false, revalidatesInBackground: false) == .send)
        _ = own.readyToSend(.miss, Machine.Sending())
        _ = own.admitted(isProbe: false)
        _ = own.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(own.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.answer(.answerThenStore), notRetrying: .retriesExhausted(retries: 0)))
        var other = Machine(policies: policies, method: .get, options: GateRequestOptions(), endpoint: "videos.list")
        _ = other.cacheLookedUp(.miss, onlyIfCached: false, revalidatesInBackground: false)
        _ = other.readyToSend(.miss, Machine.Sending())
        _ = other.admitted(isProbe: false)
        _ = other.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(other.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .retry(after: .seconds(1), attempt: 1, trigger: .status(503)))
    }

    @Test("a 403 rate limit is not a spent quota")
    func rateLimitIsNotQuota() {
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}]}}"#.utf8)
        var machine = Self.attempting()
        #expect(machine.responseReceived(status: 403, body: body, retryAfter: nil) == .settleNow(Self.settlement(.rateLimited)))
    }

    @Test("a method that is not idempotent is not retried unless marked")
    func idempotency() {
        var generator = Self.generator
        var post = Self.attempting(method: .post)
        _ = post.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(post.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.answer(.storeThenAnswer), notRetrying: .notIdempotent))
        var marked = Self.attempting(method: .post, options: GateRequestOptions(markedIdempotent: true))
        _ = marked.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(marked.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .retry(after: .seconds(1), attempt: 1, trigger: .status(503)))
    }

    @Test("servesStaleInsteadOfRetrying answers a failure with the stored response at once")
    func staleInsteadOfRetrying() {
        var retry = Self.exactRetries
        retry.servesStaleInsteadOfRetrying = true
        var generator = Self.generator
        var machine = Self.attempting(policies: Machine.Policies(retry: retry),
                                      Machine.Sending(hasServableStale: true, revalidates: true))
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .finish(.serveStale(.upstreamFailure), notRetrying: nil))
    }

    @Test("how the answer is delivered: a GET stored after it, other methods before it, a body the cache cannot key not at all; a stream passed on and settled at its end, a GET's stored with it")
    func deliveries() {
        var generator = Self.generator
        func delivered(_ method: HTTPRequest.Method, _ sending: Machine.Sending = Machine.Sending(),
                       status: Int = 200, isStreamed: Bool = false) -> Machine.AttemptAction {
            var machine = Self.attempting(method: method, sending)
            _ = machine.responseReceived(status: status, body: Data(), retryAfter: nil, isStreamed: isStreamed)
            return machine.settlementDeferred(now: Self.now, using: &generator)
        }
        #expect(delivered(.get) == Self.answer(.answerThenStore))
        #expect(delivered(.head) == Self.answer(.storeThenAnswer))
        #expect(delivered(.delete) == Self.answer(.storeThenAnswer))
        #expect(delivered(.get, Machine.Sending(storesAnswer: false)) == Self.answer(.answerUnstored))
        #expect(delivered(.get, isStreamed: true) == Self.answer(.streamThenStore))
        #expect(delivered(.post, isStreamed: true) == Self.answer(.storeThenStream))
        #expect(delivered(.get, Machine.Sending(storesAnswer: false), isStreamed: true) == Self.answer(.streamUnstored))
        // A 404's body too large to read whole: passed on, not stored.
        #expect(delivered(.get, status: 404, isStreamed: true) == Self.answer(.streamUnstored))
    }

    @Test("a streamed 200 is the answer, never retried: a stream that reached the caller is never replayed; a streamed 503 is retried (its stream dropped unread)")
    func streamsAreNeverReplayed() {
        var generator = Self.generator
        var streamed = Self.attempting(method: .post, options: GateRequestOptions(markedIdempotent: true))
        _ = streamed.responseReceived(status: 200, body: Data(), retryAfter: nil, isStreamed: true)
        #expect(streamed.settlementDeferred(now: Self.now, using: &generator) == Self.answer(.storeThenStream))
        var failing = Self.attempting(method: .get)
        _ = failing.responseReceived(status: 503, body: Data(), retryAfter: nil, isStreamed: true)
        #expect(failing.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
            == .retry(after: .seconds(1), attempt: 1, trigger: .status(503)))
    }

    @Test("a 304 that revised nothing is sent again without the cache's conditions, or passed on when the caller sent them")
    func revisionFoundNothing() {
        var generator = Self.generator
        for (added, expected) in [(true, Machine.RevisionAction.resendUnconditionally), (false, .answerAsItIs)] {
            var machine = Self.attempting(Machine.Sending(cacheAddedConditions: added))
            _ = machine.responseReceived(status: 304, body: Data(), retryAfter: nil)
            #expect(machine.settlementDeferred(now: Self.now, using: &generator) == Self.answer(.revise(inMemory: false)))
            #expect(machine.revisionFoundNothing() == expected)
        }
    }

    // MARK: Ledger failures

    @Test("an admission the ledger cannot write refuses the request under failClosed, sends it unrecorded under failOpen")
    func admissionLedgerFailure() {
        let failure = StoreError.fileMoved(path: "/tmp/t.sqlite")
        var closed = Self.sending(policies: Machine.Policies(ledgerFailurePolicy: .failClosed)).0
        #expect(closed.admissionFailed(failure) == .fail(ErrorValue(failure)))

        var open = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, ledgerFailurePolicy: .failOpen)).0
        #expect(open.admissionFailed(failure) == .sendUnrecorded(attempt: 1, ledgerFailure: ErrorValue(failure)))
        // Unrecorded: even a success is settled at once, never with the answer's write.
        #expect(open.responseReceived(status: 200, body: Data(), retryAfter: nil) == .settleNow(Self.settlement(.success)))
    }

    @Test("under failOpen, an error that is not the ledger's (a bad argument, a cancellation) still fails the request",
          arguments: [StoreRefusal.invalidArgument("cost") as any Error, CancellationError()])
    func notLedgerFailures(error: any Error) {
        var open = Self.sending(policies: Machine.Policies(ledgerFailurePolicy: .failOpen)).0
        #expect(open.admissionFailed(error) == .fail(ErrorValue(error)))
    }

    @Test("a settlement the ledger cannot write fails the request under failClosed, is delivered unrecorded under failOpen")
    func settlementLedgerFailure() {
        let failure = StoreError.fileMoved(path: "/tmp/t.sqlite")
        var generator = Self.generator
        var closed = Self.attempting(policies: Machine.Policies(ledgerFailurePolicy: .failClosed))
        _ = closed.responseReceived(status: 200, body: Data(), retryAfter: nil)
        let (closedAction, closedUnrecorded) = closed.settlementFailed(failure, now: Self.now, using: &generator)
        #expect(closedAction == .finish(.fail(ErrorValue(failure)), notRetrying: nil))
        #expect(!closedUnrecorded)

        var open = Self.attempting(policies: Machine.Policies(ledgerFailurePolicy: .failOpen))
        _ = open.responseReceived(status: 200, body: Data(), retryAfter: nil)
        let (openAction, openUnrecorded) = open.settlementFailed(failure, now: Self.now, using: &generator)
        #expect(openAction == Self.answer(.answerThenStore))
        #expect(openUnrecorded)
    }
}
