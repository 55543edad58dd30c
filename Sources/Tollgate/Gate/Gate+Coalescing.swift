import Foundation
import HTTPTypes
import Logging
import Synchronization

extension Gate {
    /// What coalescing decided for a request that would otherwise be sent.
    enum Coalescing {
        /// An identical request's answer, stored while this one waited.
        case served(GateResponse)
        /// This request leads: send it, then end the flight with ``Gate/endFlight(_:)``.
        case leading(Flight)
        /// Send it alone, with the cache looked up again if this request waited.
        case alone(CacheLookup)
    }

    /// A flight this request leads: in this process, and in the store once its admission takes
    /// the lease there.
    struct Flight {
        let key: String
        let local: RequestCoalescer.Flight
        /// The holder of the store's lease this request's admissions take (each one dated when it
        /// runs); nil when it leads without one (it waited for another process's lead in vain).
        let leaseHolder: String?
        /// The store's lease, for whichever write gives it back first: the answer's cache write, in
        /// its own transaction, or ``Gate/endFlight(_:)``. Giving back a lease never taken
        /// deletes nothing: the holder is this request's own.
        let leaseReturn: LeaseReturn?

        init(key: String, local: RequestCoalescer.Flight, leaseHolder: String?) {
            self.key = key
            self.local = local
            self.leaseHolder = leaseHolder
            self.leaseReturn = leaseHolder.map {
                LeaseReturn(AnswerBookkeeping.LeaseRelease(resourceKey: key, holder: $0))
            }
        }

        /// The same flight, leading without the store's lease.
        var withoutStoreLease: Flight { Flight(key: key, local: local, leaseHolder: nil) }
    }

    /// Thrown by a leading request's admission when another process holds the store's lease on
    /// the resource: nothing was charged, and the request waits for that process's answer.
    struct AnotherProcessLeads: Error {
        let lease: CoalescingLease
    }

    /// A store lease that two writes may give back — the answer's cache write, in its own
    /// transaction, or the end of the flight — and exactly one does: whichever takes it first.
    final class LeaseReturn: Sendable {
        private let release: AnswerBookkeeping.LeaseRelease
        private let taken = Atomic<Bool>(false)

        init(_ release: AnswerBookkeeping.LeaseRelease) { self.release = release }

        /// The release, the first time only.
        func take() -> AnswerBookkeeping.LeaseRelease? {
            taken.exchange(true, ordering: .acquiringAndReleasing) ? nil : release
        }
    }

    /// Joins or starts the flight of identical requests (same cache key): the first leads, the
    /// others wait for its stored answer — without polling within this process, by polling the
    /// store's lease across processes — and send their own request only when none came in time.
    func coalesce(
        _ request: HTTPRequest, body: Data?, lookup: CacheLookup, endpoint: String, options: GateRequestOptions,
        revalidation: Revalidation, freshFor: Duration? = nil
    ) async -> Coalescing {
        let settings = configuration.cache
        guard settings.coalescesRequests, revalidation != .bypassingCache, request.method == .get, body == nil,
              let key = try? cache.key(for: request).resourceKey
        else { return .alone(lookup) }
        let (local, leads) = coalescer.join(key, at: clock.now())
        guard leads else {
            let deadline = clock.now().addingTimeInterval(settings.coalescingWait.timeInterval)
            let finished = await local.wait(until: deadline, on: clock)
            // The leader's answer may have been returned before its write: wait for that write.
            await afterAnswerWrites.waitForQueued()
            if let answer = await answerStored(since: local.startedAt, for: request, endpoint: endpoint) {
                return .served(answer)
            }
            logger.debug("coalescing: no answer from the leading request; sending this one",
                         metadata: ["gate.endpoint": "\(endpoint)", "gate.leader_finished": "\(finished)"])
            return .alone((try? await cache.lookup(request, endpoint: endpoint, freshFor: freshFor)) ?? lookup)
        }

        // This process leads; another process may lead already: the first admission takes the
        // store's lease, or finds theirs. This process's earlier answers give their leases back
        // in their after-answer writes: those first, or one would look like another process's flight.
        await afterAnswerWrites.waitForQueued()
        return .leading(Flight(key: key, local: local, leaseHolder: ProcessUniqueToken.next()))
    }

    /// The store's lease for `holder`, dated now: each admission that takes it asks for it afresh.
    func coalescingLease(holder: String) -> CoalescingLease {
        let nowMs = CacheTime.milliseconds(clock.now())
        return CoalescingLease(holder: holder, startedMs: nowMs,
                               expiresMs: nowMs + CacheTime.milliseconds(configuration.cache.coalescingLease))
    }

    /// How often a request waiting for another process's answer looks at the store: no process
    /// can wake another through the file, so it looks.
    static let otherProcessPollInterval = Duration.milliseconds(20)

    /// Waits, polling the store, for the answer of the request another process leads.
    ///
    /// Both the polls and the patience are on the gate's clock: the waits are this request's own
    /// (as a backoff is), so a simulated clock moves through them and a manual clock holds them
    /// until it is advanced.
    /// - Returns: That answer once stored, or nil when none came before the wait ran out or the
    ///   other process's lease lapsed: this request then sends its own.
    func waitForOtherProcess(
        _ running: CoalescingLease, leading flight: Flight, request: HTTPRequest, endpoint: String
    ) async -> GateResponse? {
        let deadline = clock.now().addingTimeInterval(configuration.cache.coalescingWait.timeInterval)
        let since = Date(timeIntervalSince1970: Double(running.startedMs) / 1000)
        while true {
            let left = deadline.timeIntervalSince(clock.now())
            guard left > 0 else { break }
            do {
                try await clock.sleep(for: min(Self.otherProcessPollInterval, SaturatingConversion.duration(seconds: left)))
            } catch {
                break
            }
            if let answer = await answerStored(since: since, for: request, endpoint: endpoint) {
                return answer
            }
            guard let current = try? await storage.coalescingLease(resourceKey: flight.key),
                  current.holder == running.holder, current.expiresMs > CacheTime.milliseconds(clock.now())
            else {
                // The leader stores its answer and gives the lease back in one write, which may
                // have come between the look for the answer and the look at the lease: a lease
                // gone is most often an answer just stored, and sending now would ask again.
                if let answer = await answerStored(since: since, for: request, endpoint: endpoint) {
                    return answer
                }
                break
            }
        }
        logger.debug("coalescing: the other process's request gave no answer in time; sending this one",
                     metadata: ["gate.endpoint": "\(endpoint)"])
        return nil
    }

    /// Ends a flight this request led, once its answer is stored: gives the store's lease back
    /// and wakes the requests waiting in this process.
    func endFlight(_ flight: Flight) async {
        if let release = flight.leaseReturn?.take() {
            // A lease that cannot be given back lapses on its own.
            try? await storage.releaseCoalescingLease(resourceKey: release.resourceKey, holder: release.holder)
        }
        coalescer.finish(flight.key, flight.local)
    }

    /// The stored answer to `request` if it was stored or revalidated since `since`, as an answer
    /// of its own (source ``ResponseSource/coalesced``).
    private func answerStored(since: Date, for request: HTTPRequest, endpoint: String) async -> GateResponse? {
        // Read without counting: the coalesced answer is counted once, as coalesced.
        guard let cached = try? await cache.staleResponse(for: request, endpoint: endpoint),
              CacheTime.milliseconds(cached.validatedAt) >= CacheTime.milliseconds(since)
        else { return nil }
        do {
            try await cache.recordCoalescedServe(cached, endpoint: endpoint)
        } catch {
            logger.warning("could not count a coalesced answer", metadata: ["error": "\(error)"])
        }
        return GateResponse(response: cached.response, body: cached.body, source: .coalesced,
                            unitsCharged: 0, attempts: 0, age: cached.age)
    }
}
