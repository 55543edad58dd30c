import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// The request path, steps 1 to 6, for one hop: the cache lookup, the answers that need no
    /// request, coalescing, then ``forward(_:lookup:machine:flight:)``.
    /// `request.totals` is the caller's, so that what was charged is known when this throws.
    func route(_ request: inout GateRequest) async throws -> GateResponse {
        var http = request.request
        // 1. Cache lookup. A cache that cannot be read never fails the request.
        if !afterAnswerWrites.isIdle {
            if http.method != .get {
                // A HEAD revises stored GETs, an unsafe method invalidates stored answers: after
                // the GETs' stores and revisions that earlier answers left queued, not before them.
                await afterAnswerWrites.waitForQueued()
            } else if let key = try? cache.key(for: http).resourceKey, afterAnswerWrites.isPending(resourceKey: key) {
                // This resource's last answer is still being written: look it up as that write leaves it.
                await afterAnswerWrites.waitForQueued()
            }
        }
        var lookup: CacheLookup
        let freshFor = await chosenFreshness(for: request)
        request.freshFor = freshFor
        do {
            if request.revalidation == .bypassingCache {
                lookup = .miss(http)
            } else if let stored = try await storedAnswerForOwnConditionals(request) {
                // The caller's conditions are evaluated by the caller on what is stored.
                (http, request.request, lookup) = (stored.request, stored.request, stored.lookup)
            } else {
                lookup = try await cache.lookup(http, endpoint: request.endpoint, freshFor: freshFor)
            }
        } catch {
            logger.warning("cache lookup failed; sending without it",
                           metadata: ["gate.endpoint": "\(request.endpoint)", "error": "\(error)"])
            lookup = .miss(http)
        }
        var machine = GateRequestStateMachine(policies: policies, method: http.method, options: request.options,
                                              endpoint: request.endpoint)
        let verdict = verdict(of: lookup, request)
        switch machine.cacheLookedUp(
            verdict,
            // Read only when it can matter: a fresh hit is answered whatever the request says.
            onlyIfCached: verdict != .fresh && RequestDirectives(http.headerFields).onlyIfCached,
            revalidatesInBackground: request.revalidation == .inBackground
                && configuration.cache.servesFresh(for: request.endpoint)
        ) {
        case .answerFromCache:
            logger.debug("served fresh from cache", metadata: ["gate.endpoint": "\(request.endpoint)"])
            return Self.freshAnswer(lookup)
        case .answerNotCached:
            return GateResponse(response: HTTPResponse(status: .gatewayTimeout), body: Data(), source: .notCached,
                                unitsCharged: 0, attempts: 0, age: nil)
        case .serveStaleAndRevalidate:
            return await serveWhileRevalidating(request, lookup: lookup)
        case .send:
            break
        }
        request.logger = endpointLoggers.logger(for: request.endpoint)
        var flight: Flight?
        switch await coalesce(http, body: request.body, lookup: lookup, endpoint: request.endpoint,
                              options: request.options, revalidation: request.revalidation, freshFor: freshFor) {
        case .served(let answer): return answer
        case .leading(let leading): flight = leading
        case .alone(let refreshed): lookup = refreshed
        }
        guard var flight else { return try await forward(&request, lookup: lookup, machine: machine) }
        // The flight ends once the answer is stored or its write queued (those waiting for it in
        // this process wait for the queue), so that they find it.
        do {
            let answer: GateResponse
            do {
                answer = try await forward(&request, lookup: lookup, machine: machine, flight: flight)
            } catch let other as AnotherProcessLeads {
                // Its first admission found another process's lease: nothing was charged.
                flight = flight.withoutStoreLease
                if let served = await waitForOtherProcess(other.lease, leading: flight, request: http,
                                                          endpoint: request.endpoint) {
                    await endFlight(flight)
                    return served
                }
                answer = try await forward(&request, lookup: lookup, machine: machine, flight: flight)
            }
            await endFlight(flight)
            return answer
        } catch {
            await endFlight(flight)
            throw error
        }
    }

    /// The lookup of a request's own conditional as if it carried no conditions, when it asks for
    /// that (``GateRequestOptions/answersConditionalsFromStore``) and something is stored for it.
    /// - Returns: The request without its conditions and its lookup; nil to send it as it is.
    /// - Throws: The cache's read error.
    private func storedAnswerForOwnConditionals(_ request: GateRequest) async throws
        -> (request: HTTPRequest, lookup: CacheLookup)? {
        guard request.options.answersConditionalsFromStore, request.request.method == .get || request.request.method == .head,
              ConditionalRequest.isConditional(request.request.headerFields)
        else { return nil }
        var unconditional = request.request
        for name in ConditionalRequest.fields { unconditional.headerFields[name] = nil }
        let lookup = try await cache.lookup(unconditional, endpoint: request.endpoint, freshFor: request.freshFor)
        return lookup.cachedResponse == nil ? nil : (unconditional, lookup)
    }

    /// Steps 2 to 6 for a request the cache could not answer, as the machine decides them:
    /// admission (circuit, throttle, quota), the attempt, its settlement, a retry or the answer.
    /// - Parameter machine: The request's machine, ready to send (a copy: a second forward after
    ///   another process's lead starts from the same point).
    func forward(
        _ request: inout GateRequest, lookup: CacheLookup, machine: GateRequestStateMachine, flight: Flight? = nil
    ) async throws -> GateResponse {
        // A request for one ID of a batchable endpoint goes in a batch, unless nothing else of
        // its batch is on the wire or collecting.
        let passage = try await batchPassage(request, lookup: lookup)
        if case .answered(let answer) = passage { return answer }
        defer { if case .alone(let key?) = passage { batchCallLanded(key) } }
        var machine = machine
        let http = request.request
        let revalidating = if case .revalidate(let cached, _) = lookup { cached } else { CachedResponse?.none }
        let stored = request.options.allowsStale
            ? lookup.cachedResponse.flatMap { cached in
                isWithinChosenStaleness(cached, request, window: \.staleIfError) ? cached : servableOnError(cached, for: http)
            } : nil
        let outgoing = lookup.requestToSend ?? http
        let sending = GateRequestStateMachine.Sending(
            hasServableStale: stored != nil,
            revalidates: revalidating != nil,
            storesAnswer: !request.isSafeWithBody && request.batchedIDs == nil,
            cacheAddedConditions: outgoing != http && !ConditionalRequest.isConditional(http.headerFields),
            notModifiedCost: quota.price(of: request.endpoint).notModifiedCost,
            price: request.options.cost ?? quota.price(of: request.endpoint).units,
            passesQuotaSpentAnswers: request.options.passesQuotaSpentAnswers
        )
        guard var next = machine.readyToSend(verdict(of: lookup, request), sending) else {
            // Stored meanwhile by an earlier request, and fresh: no request at all.
            return Self.freshAnswer(lookup)
        }
        var generator = SystemRandomNumberGenerator()
        var admitted = Admitted(reservation: nil, probeToken: nil)
        while true {
            // 2–4. Admission, until the attempt may be sent. A throttle's waits are one sample of
            // the throttle-wait metric per admission.
            var throttleWaited = Duration.zero
            defer { if throttleWaited > .zero { metrics.recordThrottleWait(throttleWaited, endpoint: request.endpoint) } }
            admission: while true {
                switch next {
                case .admit(let admission):
                    // A caller that has gone (a cancelled task) spends nothing more.
                    try Task.checkCancellation()
                    next = try await admit(admission, &request, machine: &machine, flight: flight, admitted: &admitted)
                case .waitForThrottle(let delay):
                    try await clock.sleep(for: delay)
                    throttleWaited += delay
                    next = machine.throttleWaitEnded()
                case .send(let attempt):
                    request.totals.charged(admitted.reservation?.cost ?? 0)
                    request.totals.attempts = attempt
                    if attempt > 1 { metrics.recordRetry(endpoint: request.endpoint) }
                    break admission
                case .sendUnrecorded(let attempt, let failure):
                    request.logger.warning(
                        "the ledger cannot be written; sending uncharged (ledger failure policy: fail open)",
                        metadata: ["gate.endpoint": "\(request.endpoint)", "error": "\(failure.error)"]
                    )
                    admitted = Admitted(reservation: nil, probeToken: nil)
                    request.totals.attempts = attempt
                    if attempt > 1 { metrics.recordRetry(endpoint: request.endpoint) }
                    break admission
                case .serveStale(let reason):
                    return await serveStale(stored, reason: reason, request)
                case .fail(let failure):
                    throw refusing(failure.error, request)
                }
            }
            // 5. The attempt, and its settlement.
            request.logger.debug("Attempt \(request.totals.attempts)", metadata: ["retry.endpoint": "\(request.endpoint)"])
            var (settling, exchange) = await sendAttempt(outgoing, request, streamsLargeBodies: request.options.streamsLargeBodies,
                                                         streamsBodies: request.options.streamsBodies, machine: &machine)
            let decided: GateRequestStateMachine.AttemptAction
            switch settling {
            case .settleNow(let settlement):
                let pending = try pendingSettlement(settlement, admitted: admitted, request, answer: exchange)
                anticipate(pending)
                do {
                    let circuit = try await settle(pending, &request.account)
                    decided = machine.attemptSettled(circuit: circuit, now: clock.now(), using: &generator)
                } catch {
                    let (action, unrecorded) = machine.settlementFailed(error, now: clock.now(), using: &generator)
                    if unrecorded { logUnrecordedSettlement(error, request.account) }
                    decided = action
                }
            case .settleWithAnswer(let settlement):
                let pending = try pendingSettlement(settlement, admitted: admitted, request, answer: exchange)
                anticipate(pending)
                exchange?.pendingSettlement = pending
                decided = machine.settlementDeferred(now: clock.now(), using: &generator)
            case .fail(let failure):
                throw failure.error
            }
            // 6. Retry, or the answer.
            switch decided {
            case .retry(let delay, let attempt, let trigger):
                request.logger.debug("Retry \(attempt)/\(policies.retry(for: request.endpoint).maximumRetries) in \(Self.describe(delay)) after \(trigger)",
                                    metadata: ["retry.endpoint": "\(request.endpoint)"])
                try await clock.sleep(for: delay)
                next = machine.retryTimerFired()
            case .finish(let finish, let stop):
                if let stop {
                    request.logger.debug("Not retrying after attempt \(request.totals.attempts): \(stop)",
                                        metadata: ["retry.endpoint": "\(request.endpoint)"])
                }
                switch finish {
                case .serveStale(let reason):
                    return await serveStale(stored, reason: reason, request)
                case .fail(let failure):
                    throw refusing(failure.error, request)
                case .failQuotaSpent:
                    throw refusing(serverQuotaRefusal(request), request)
                case .answer(let delivery):
                    guard let exchange else { preconditionFailure("an answer without an exchange") }
                    return try await deliver(delivery, exchange, outgoing: outgoing, revalidating: revalidating,
                                             flight: flight, machine: &machine, &request)
                }
            }
        }
    }

    /// What the machine needs of a lookup: a stale response within its own `stale-while-revalidate`
    /// window, or the one chosen for the request, may be served while it is revalidated.
    private func verdict(of lookup: CacheLookup, _ request: GateRequest) -> GateRequestStateMachine.CacheVerdict {
        switch lookup {
        case .fresh, .chosenFresh: .fresh
        case .revalidate(let cached, _):
            .stale(withinStaleWhileRevalidate: cached.isWithinStaleWhileRevalidate(at: cache.clock.now())
                || isWithinChosenStaleness(cached, request, window: \.staleWhileRevalidate))
        case .miss: .miss
        }
    }

    /// A fresh stored response, as the caller gets it.
    private static func freshAnswer(_ lookup: CacheLookup) -> GateResponse {
        switch lookup {
        case .fresh(let cached):
            return GateResponse(response: cached.response, body: cached.body, source: .cache,
                                unitsCharged: 0, attempts: 0, age: cached.age)
        case .chosenFresh(let cached):
            return GateResponse(response: cached.response, body: cached.body, source: .fresh,
                                unitsCharged: 0, attempts: 0, age: cached.age)
        case .revalidate, .miss:
            preconditionFailure("a fresh answer from \(lookup)")
        }
    }

    /// Logs a refusal or failure that nothing stored could stand in for, and returns it to throw.
    private func refusing(_ error: any Error, _ request: GateRequest) -> any Error {
        if error is TollgateError || error is HTTPTransportError {
            request.logger.debug("request refused and nothing stored to serve", metadata: ["error": "\(error)"])
        }
        return error
    }

    static func describe(_ duration: Duration) -> String {
        String(format: "%.1fs", duration.timeInterval)
    }
}
