import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// Step 6: the answer the caller gets from the server's last response, as the machine's
    /// delivery says: a `304`'s revision of the stored response, or the answer as it came, stored
    /// before or after it is returned, or not at all.
    func deliver(
        _ delivery: GateRequestStateMachine.Delivery, _ exchange: Exchange, outgoing: HTTPRequest,
        revalidating: CachedResponse?, flight: Flight?, machine: inout GateRequestStateMachine,
        _ request: inout GateRequest
    ) async throws -> GateResponse {
        let lease = flight?.leaseReturn
        let endpoint = request.endpoint
        switch delivery {
        case .revise(let inMemory):
            if inMemory, let revalidating {
                // The answer is the stored response as the 304 revises it: written after the answer.
                let revisedAt = clock.now()
                if let answered = cache.revisedInMemory(exchange.response, of: revalidating, for: outgoing,
                                                        endpoint: endpoint, requestedAt: exchange.sentAt, at: revisedAt) {
                    let revised = answered.response
                    reviseAfterAnswer(exchange, answered: answered, at: revisedAt, outgoing: outgoing, lease: lease,
                                      request.account)
                    if let pending = exchange.pendingSettlement, pending.settlement.refundReservationID != nil {
                        // Refunded by that write: the charge is this attempt's own, not refunded before.
                        request.totals.refunded(pending.reservation?.cost ?? 0)
                    } else if let pending = exchange.pendingSettlement, let reservation = pending.reservation,
                              let settled = pending.settlement.actualCosts.first(where: { $0.bucket == reservation.bucket }),
                              exchange.response.status.code == 304 {
                        // Settled by that write at what a 304 costs.
                        request.totals.charged(settled.units - reservation.cost)
                    }
                    return GateResponse(response: revised.response, body: revised.body, source: .revalidated,
                                        unitsCharged: request.totals.unitsCharged, attempts: request.totals.attempts,
                                        age: revised.age)
                }
            }
            // The revision, the attempt's settlement and the lease: one transaction after the answer.
            let bookkeeping = AnswerBookkeeping(settlement: exchange.pendingSettlement?.settlement,
                                                leaseRelease: lease?.take())
            let written = try? await cache.revalidated(exchange.response, for: outgoing, endpoint: endpoint,
                                                       requestedAt: exchange.sentAt, bookkeeping: bookkeeping)
            try await finish(bookkeeping, written: written?.booked, pending: exchange.pendingSettlement, &request.account)
            if let revalidated = written?.cached {
                return GateResponse(response: revalidated.response, body: revalidated.body, source: .revalidated,
                                    unitsCharged: request.totals.unitsCharged, attempts: request.totals.attempts,
                                    age: revalidated.age)
            }
            // A 304 for nothing stored (evicted meanwhile, or another process's entry).
            let notModified = Self.networkAnswer(exchange, request.totals)
            switch machine.revisionFoundNothing() {
            case .answerAsItIs: return notModified
            case .resendUnconditionally: return try await resendUnconditionally(request, after: notModified, &request.totals)
            }
        case .answerUnstored:
            request.logger.debug("cache miss: not stored", metadata: [
                "cache.reason": "\(request.isSafeWithBody ? "the request has a body" : "the body is larger than the cache's maxBodySize")",
            ])
            try await finish(AnswerBookkeeping(), written: nil, pending: exchange.pendingSettlement, &request.account)
            return Self.networkAnswer(exchange, request.totals)
        case .storeThenAnswer:
            // A HEAD revises stored GETs and an unsafe method invalidates stored answers of other
            // resources, which a lookup cannot know to wait for: written before the answer.
            let bookkeeping = AnswerBookkeeping(settlement: exchange.pendingSettlement?.settlement,
                                                leaseRelease: lease?.take())
            let booked = await store(exchange, for: outgoing, bookkeeping: bookkeeping, request.account)
            try await finish(bookkeeping, written: booked, pending: exchange.pendingSettlement, &request.account)
            return Self.networkAnswer(exchange, request.totals)
        case .answerThenStore:
            storeAfterAnswer(exchange, outgoing: outgoing, lease: lease, request.account)
            return Self.networkAnswer(exchange, request.totals)
        case .streamThenStore:
            return streamedAnswer(exchange, outgoing: outgoing, stores: true, lease: lease, request)
        case .storeThenStream:
            // An unsafe method's invalidations, before the answer; its settlement waits for the body's end.
            _ = await store(exchange, for: outgoing, bookkeeping: AnswerBookkeeping(), request.account)
            return streamedAnswer(exchange, outgoing: outgoing, stores: false, lease: lease, request)
        case .streamUnstored:
            return streamedAnswer(exchange, outgoing: outgoing, stores: false, lease: lease, request)
        }
    }

    /// The server's own answer, as the caller gets it.
    static func networkAnswer(_ exchange: Exchange, _ totals: GateRequest.Totals) -> GateResponse {
        GateResponse(response: exchange.response, body: exchange.body, source: .network,
                     unitsCharged: totals.unitsCharged, attempts: totals.attempts, age: nil, bodyStream: exchange.stream)
    }
}
