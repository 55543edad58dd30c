import Foundation
import HTTPTypes
import Testing
@testable import Tollgate

/// The gate's decisions, event by event, asserted as actions: no network, no store, no clock.
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
        #expect(describe(first) == "admit 1 stale lease")
        _ = machine.admitted(isProbe: false)
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        var generator = Self.generator
        _ = machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)
        #expect(describe(machine.retryTimerFired()) == "admit 2")
    }

    // MARK: 2. Circuit

    @Test("an open circuit serves the stored response, else refuses")
    func openCircuit() {
        var (withStored, _) = Self.sending(Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(describe(withStored.refused(.circuitOpen(retryAfter: 30))) == "serveStale circuitOpen")
        var (bare, _) = Self.sending()
        #expect(describe(bare.refused(.circuitOpen(retryAfter: 30))) == "fail \(TollgateError.circuitOpen(retryAfter: 30))")
    }

    // MARK: 3. Throttle

    @Test("a full throttle window is waited out up to the maximum, then admitted again")
    func throttleWait() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(5)))
        #expect(describe(machine.throttled(retryAfter: 2)) == "wait 2.0s")
        #expect(describe(machine.throttleWaitEnded()) == "admit 1 lease")
        #expect(describe(machine.throttled(retryAfter: 3)) == "wait 3.0s")
        #expect(describe(machine.throttleWaitEnded()) == "admit 1 lease")
        // 2 s + 3 s waited: one more second is past the 5 s maximum.
        #expect(describe(machine.throttled(retryAfter: 1)) == "fail \(TollgateError.throttled(retryAfter: 1))")
    }

    @Test("a full throttle window serves the stored response rather than wait")
    func throttleStale() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(60)),
                                        Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(describe(machine.throttled(retryAfter: 2)) == "serveStale throttled")
    }

    @Test("a throttle wait longer than the maximum is refused at once")
    func throttleRefused() {
        var (machine, _) = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, maximumThrottleWait: .seconds(1)))
        #expect(describe(machine.throttled(retryAfter: 1.5)) == "fail \(TollgateError.throttled(retryAfter: 1.5))")
    }

    // MARK: 4. Quota

    @Test("a spent quota serves the stored response, else refuses with quotaExceeded")
    func quotaRefusal() {
        let refusal = TollgateError.quotaExceeded(endpoint: "videos.list", cost: 1, remaining: 0, resetsAt: Self.now)
        var (withStored, _) = Self.sending(Machine.Sending(hasServableStale: true, revalidates: true))
        #expect(describe(withStored.refused(refusal)) == "serveStale quotaExhausted")
        var (bare, _) = Self.sending()
        #expect(describe(bare.refused(refusal)) == "fail \(refusal)")
    }

    // MARK: 5–6. Attempts and settlement

    @Test("a free 304 is refunded, settled with the answer's write, and answered with the stored response revised")
    func notModifiedRefund() {
        var machine = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .free, price: 1))
        #expect(describe(machine.responseReceived(status: 304, body: Data(), retryAfter: nil))
            == "settleWithAnswer success refund(notModified)")
        var generator = Self.generator
        #expect(describe(machine.settlementDeferred(now: Self.now, using: &generator)) == "answer revise(inMemory: true)")
    }

    @Test("a 304 of an endpoint that charges it in full, or as much as the call, keeps the charge")
    func notModifiedCharged() {
        var full = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .full, price: 50))
        #expect(describe(full.responseReceived(status: 304, body: Data(), retryAfter: nil)) == "settleWithAnswer success")
        var youTube = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 1))
        #expect(describe(youTube.responseReceived(status: 304, body: Data(), retryAfter: nil)) == "settleWithAnswer success")
    }

    @Test("a 304 that costs less than the call settles the charge at its units, as the ledger's settle does")
    func notModifiedSettled() {
        var machine = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 100))
        #expect(describe(machine.responseReceived(status: 304, body: Data(), retryAfter: nil))
            == "settleWithAnswer success settle(1)")
        var ok = Self.attempting(Machine.Sending(revalidates: true, notModifiedCost: .units(1), price: 100))
        #expect(describe(ok.responseReceived(status: 200, body: Data(), retryAfter: nil)) == "settleWithAnswer success")
    }

    @Test("the half-open probe's success is settled at once: it closes the circuit")
    func probeSettlesAtOnce() {
        var machine = Self.attempting(isProbe: true)
        #expect(describe(machine.responseReceived(status: 200, body: Data(), retryAfter: nil)) == "settleNow success")
    }

    @Test("a 5xx is retried after 1 s, 2 s and 4 s; then the last answer is returned, or the stored response")
    func serverErrorBackoff() {
        for hasStored in [false, true] {
            var machine = Self.attempting(Machine.Sending(hasServableStale: hasStored, revalidates: hasStored))
            var generator = Self.generator
            for (attempt, delay) in [(1, "1.0s"), (2, "2.0s"), (3, "4.0s")] {
                #expect(describe(machine.responseReceived(status: 503, body: Data(), retryAfter: nil)) == "settleNow failure")
                #expect(describe(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
                    == "retry \(attempt) after \(delay)")
                #expect(describe(machine.retryTimerFired()) == "admit \(attempt + 1)")
                _ = machine.admitted(isProbe: false)
            }
            _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
            #expect(describe(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
                == (hasStored ? "serveStale upstreamFailure" : "answer answerThenStore") + " (3 retries spent)")
        }
    }

    @Test("a 429's Retry-After wins over the schedule; one past the maximum delay returns the answer at once")
    func retryAfter() {
        var generator = Self.generator
        var machine = Self.attempting()
        _ = machine.responseReceived(status: 429, body: Data(), retryAfter: .seconds(7))
        #expect(describe(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "retry 1 after 7.0s")

        var tooLong = Self.attempting()
        #expect(describe(tooLong.responseReceived(status: 429, body: Data(), retryAfter: .seconds(120))) == "settleNow rateLimited")
        #expect(describe(tooLong.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
            == "answer answerThenStore (Retry-After 120s exceeds the maximum delay 60s)")
    }

    @Test("an attempt that opens the circuit stops the retrying")
    func circuitOpensMidRetry() {
        var generator = Self.generator
        var machine = Self.attempting()
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(describe(machine.attemptSettled(circuit: .open, now: Self.now, using: &generator))
            == "answer answerThenStore (circuit open)")
    }

    @Test("a request that never left the machine is refunded and is no circuit failure; one that may have reached the server keeps its charge")
    func neverSent() {
        var generator = Self.generator
        var tls = Self.attempting()
        let refused = HTTPTransportError.tlsFailure("certificate")
        #expect(describe(tls.transportFailed(refused)) == "settleNow neutral refund(neverSent(because: \"\(refused)\"))")
        #expect(describe(tls.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "fail \(refused)")

        var timedOut = Self.attempting()
        #expect(describe(timedOut.transportFailed(HTTPTransportError.timedOut)) == "settleNow failure")
        #expect(describe(timedOut.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "retry 1 after 1.0s")
    }

    @Test("an error that is not the transport's (a cancellation) ends the request unrecorded")
    func cancelled() {
        var machine = Self.attempting()
        #expect(describe(machine.transportFailed(CancellationError())) == "fail CancellationError()")
    }

    @Test("the server's daily quotaExceeded marks the quota spent: the stored response, else quotaExceeded; never retried")
    func serverQuotaSpent() {
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"quotaExceeded"}]}}"#.utf8)
        var generator = Self.generator
        var bare = Self.attempting()
        #expect(describe(bare.responseReceived(status: 403, body: body, retryAfter: nil)) == "settleNow neutral quotaSpent")
        #expect(describe(bare.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "failQuotaSpent")

        var withStored = Self.attempting(Machine.Sending(hasServableStale: true, revalidates: true))
        _ = withStored.responseReceived(status: 403, body: body, retryAfter: nil)
        #expect(describe(withStored.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
            == "serveStale quotaExhausted")
    }

    @Test("an API description's own 'quota spent' answers: a field with its value, on 403 or 429; neutral for the circuit")
    func describedQuotaSpent() throws {
        let remaining = try #require(HTTPField.Name("X-RateLimit-Remaining"))
        let policies = Machine.Policies(retry: Self.exactRetries, quotaExhaustedAnswers: [
            QuotaExhaustionRule(status: 403, field: (remaining, "0")), QuotaExhaustionRule(status: 429, field: (remaining, "0")),
        ])
        var spent = Self.attempting(policies: policies)
        #expect(describe(spent.responseReceived(status: 429, fields: [remaining: " 0"], body: Data(), retryAfter: nil))
            == "settleNow neutral quotaSpent")
        var generator = Self.generator
        #expect(describe(spent.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "failQuotaSpent")
        var left = Self.attempting(policies: policies)
        #expect(describe(left.responseReceived(status: 429, fields: [remaining: "3"], body: Data(), retryAfter: nil))
            == "settleNow rateLimited")
        // Google's reasons are not this API's: a 403 quotaExceeded body is a plain 403 here.
        var google = Self.attempting(policies: policies)
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"quotaExceeded"}]}}"#.utf8)
        #expect(describe(google.responseReceived(status: 403, body: body, retryAfter: nil)) == "settleNow neutral")
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
        #expect(describe(own.attemptSettled(circuit: .closed, now: Self.now, using: &generator)).hasPrefix("answer"))
        var other = Machine(policies: policies, method: .get, options: GateRequestOptions(), endpoint: "videos.list")
        _ = other.cacheLookedUp(.miss, onlyIfCached: false, revalidatesInBackground: false)
        _ = other.readyToSend(.miss, Machine.Sending())
        _ = other.admitted(isProbe: false)
        _ = other.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(describe(other.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "retry 1 after 1.0s")
    }

    @Test("a 403 rate limit is not a spent quota")
    func rateLimitIsNotQuota() {
        let body = Data(#"{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}]}}"#.utf8)
        var machine = Self.attempting()
        #expect(describe(machine.responseReceived(status: 403, body: body, retryAfter: nil)) == "settleNow rateLimited")
    }

    @Test("a method that is not idempotent is not retried unless marked")
    func idempotency() {
        var generator = Self.generator
        var post = Self.attempting(method: .post)
        _ = post.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(describe(post.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
            == "answer storeThenAnswer (method not idempotent)")
        var marked = Self.attempting(method: .post, options: GateRequestOptions(markedIdempotent: true))
        _ = marked.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(describe(marked.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "retry 1 after 1.0s")
    }

    @Test("servesStaleInsteadOfRetrying answers a failure with the stored response at once")
    func staleInsteadOfRetrying() {
        var retry = Self.exactRetries
        retry.servesStaleInsteadOfRetrying = true
        var generator = Self.generator
        var machine = Self.attempting(policies: Machine.Policies(retry: retry),
                                      Machine.Sending(hasServableStale: true, revalidates: true))
        _ = machine.responseReceived(status: 503, body: Data(), retryAfter: nil)
        #expect(describe(machine.attemptSettled(circuit: .closed, now: Self.now, using: &generator))
            == "serveStale upstreamFailure")
    }

    @Test("how the answer is delivered: a GET stored after it, other methods before it, a body the cache cannot key not at all; a stream passed on and settled at its end, a GET's stored with it")
    func deliveries() {
        var generator = Self.generator
        func delivered(_ method: HTTPRequest.Method, _ sending: Machine.Sending = Machine.Sending(),
                       status: Int = 200, isStreamed: Bool = false) -> String {
            var machine = Self.attempting(method: method, sending)
            _ = machine.responseReceived(status: status, body: Data(), retryAfter: nil, isStreamed: isStreamed)
            return describe(machine.settlementDeferred(now: Self.now, using: &generator))
        }
        #expect(delivered(.get) == "answer answerThenStore")
        #expect(delivered(.head) == "answer storeThenAnswer")
        #expect(delivered(.delete) == "answer storeThenAnswer")
        #expect(delivered(.get, Machine.Sending(storesAnswer: false)) == "answer answerUnstored")
        #expect(delivered(.get, isStreamed: true) == "answer streamThenStore")
        #expect(delivered(.post, isStreamed: true) == "answer storeThenStream")
        #expect(delivered(.get, Machine.Sending(storesAnswer: false), isStreamed: true) == "answer streamUnstored")
        // A 404's body too large to read whole: passed on, not stored.
        #expect(delivered(.get, status: 404, isStreamed: true) == "answer streamUnstored")
    }

    @Test("a streamed 200 is the answer, never retried: a stream that reached the caller is never replayed; a streamed 503 is retried (its stream dropped unread)")
    func streamsAreNeverReplayed() {
        var generator = Self.generator
        var streamed = Self.attempting(method: .post, options: GateRequestOptions(markedIdempotent: true))
        _ = streamed.responseReceived(status: 200, body: Data(), retryAfter: nil, isStreamed: true)
        #expect(describe(streamed.settlementDeferred(now: Self.now, using: &generator)) == "answer storeThenStream")
        var failing = Self.attempting(method: .get)
        _ = failing.responseReceived(status: 503, body: Data(), retryAfter: nil, isStreamed: true)
        #expect(describe(failing.attemptSettled(circuit: .closed, now: Self.now, using: &generator)) == "retry 1 after 1.0s")
    }

    @Test("a 304 that revised nothing is sent again without the cache's conditions, or passed on when the caller sent them")
    func revisionFoundNothing() {
        var generator = Self.generator
        for (added, expected) in [(true, Machine.RevisionAction.resendUnconditionally), (false, .answerAsItIs)] {
            var machine = Self.attempting(Machine.Sending(cacheAddedConditions: added))
            _ = machine.responseReceived(status: 304, body: Data(), retryAfter: nil)
            #expect(describe(machine.settlementDeferred(now: Self.now, using: &generator)) == "answer revise(inMemory: false)")
            #expect(machine.revisionFoundNothing() == expected)
        }
    }

    // MARK: Ledger failures

    @Test("an admission the ledger cannot write refuses the request under failClosed, sends it unrecorded under failOpen")
    func admissionLedgerFailure() {
        let failure = StoreError.fileMoved(path: "/tmp/t.sqlite")
        var closed = Self.sending(policies: Machine.Policies(ledgerFailurePolicy: .failClosed)).0
        #expect(describe(closed.admissionFailed(failure)) == "fail \(failure)")

        var open = Self.sending(policies: Machine.Policies(retry: Self.exactRetries, ledgerFailurePolicy: .failOpen)).0
        #expect(describe(open.admissionFailed(failure)) == "sendUnrecorded 1")
        // Unrecorded: even a success is settled at once, never with the answer's write.
        #expect(describe(open.responseReceived(status: 200, body: Data(), retryAfter: nil)) == "settleNow success")
    }

    @Test("under failOpen, an error that is not the ledger's (a bad argument, a cancellation) still fails the request",
          arguments: [StoreRefusal.invalidArgument("cost") as any Error, CancellationError()])
    func notLedgerFailures(error: any Error) {
        var open = Self.sending(policies: Machine.Policies(ledgerFailurePolicy: .failOpen)).0
        #expect(describe(open.admissionFailed(error)) == "fail \(error)")
    }

    @Test("a settlement the ledger cannot write fails the request under failClosed, is delivered unrecorded under failOpen")
    func settlementLedgerFailure() {
        let failure = StoreError.fileMoved(path: "/tmp/t.sqlite")
        var generator = Self.generator
        var closed = Self.attempting(policies: Machine.Policies(ledgerFailurePolicy: .failClosed))
        _ = closed.responseReceived(status: 200, body: Data(), retryAfter: nil)
        let (closedAction, closedUnrecorded) = closed.settlementFailed(failure, now: Self.now, using: &generator)
        #expect(describe(closedAction) == "fail \(failure)")
        #expect(!closedUnrecorded)

        var open = Self.attempting(policies: Machine.Policies(ledgerFailurePolicy: .failOpen))
        _ = open.responseReceived(status: 200, body: Data(), retryAfter: nil)
        let (openAction, openUnrecorded) = open.settlementFailed(failure, now: Self.now, using: &generator)
        #expect(describe(openAction) == "answer answerThenStore")
        #expect(openUnrecorded)
    }
}

// MARK: Descriptions: one line per action, so a failing expectation shows both sides.

func describe(_ action: GateRequestStateMachine.AdmissionAction?) -> String {
    switch action {
    case nil: "nil"
    case .admit(let admission)?:
        "admit \(admission.attempt)" + (admission.canServeStale ? " stale" : "") + (admission.takesLease ? " lease" : "")
    case .waitForThrottle(let delay)?: "wait \(GateRequestStateMachineTests.seconds(delay))"
    case .send(let attempt)?: "send \(attempt)"
    case .sendUnrecorded(let attempt, _)?: "sendUnrecorded \(attempt)"
    case .serveStale(let reason)?: "serveStale \(reason.rawValue)"
    case .fail(let error)?: "fail \(error)"
    }
}

func describe(_ action: GateRequestStateMachine.SettlementAction) -> String {
    func settlement(_ settlement: GateRequestStateMachine.Settlement) -> String {
        "\(settlement.outcome)" + (settlement.refunds ? " refund(\(settlement.refundReason.map { "\($0)" } ?? "?"))" : "")
            + (settlement.settledUnits.map { " settle(\($0))" } ?? "")
            + (settlement.quotaSpent ? " quotaSpent" : "")
    }
    return switch action {
    case .settleNow(let now): "settleNow " + settlement(now)
    case .settleWithAnswer(let deferred): "settleWithAnswer " + settlement(deferred)
    case .fail(let error): "fail \(error)"
    }
}

func describe(_ action: GateRequestStateMachine.AttemptAction) -> String {
    switch action {
    case .retry(let delay, let attempt, _): return "retry \(attempt) after \(GateRequestStateMachineTests.seconds(delay))"
    case .finish(let finish, let stop):
        let ending = switch finish {
        case .answer(let delivery): "answer \(delivery)"
        case .serveStale(let reason): "serveStale \(reason.rawValue)"
        case .fail(let error): "fail \(error)"
        case .failQuotaSpent: "failQuotaSpent"
        }
        return ending + (stop.map { " (\($0))" } ?? "")
    }
}

extension GateRequestStateMachineTests {
    static func seconds(_ duration: Duration) -> String { String(format: "%.1fs", duration.timeInterval) }
}
