import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// The cache's store of an answer, with `bookkeeping` in its transaction; nil when nothing
    /// was written (the bookkeeping is then the caller's to write). A cache that cannot be written
    /// never fails the request.
    func store(
        _ exchange: Exchange, for outgoing: HTTPRequest, bookkeeping: AnswerBookkeeping, _ account: GateRequest.Account
    ) async -> AnswerBookkeepingResult? {
        do {
            return try await cache.storeResponse(exchange.response, body: exchange.body, for: outgoing,
                                                 endpoint: account.endpoint, requestedAt: exchange.sentAt,
                                                 bookkeeping: bookkeeping).booked
        } catch {
            account.logger.warning("could not store the response in the cache", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Queues the cache's store of an answer the caller gets as it came, with the attempt's
    /// settlement and the lease's return, in one transaction after the answer.
    func storeAfterAnswer(_ exchange: Exchange, outgoing: HTTPRequest, lease: LeaseReturn?, _ account: GateRequest.Account) {
        writeAfterAnswer(exchange, resource: try? cache.key(for: outgoing).resourceKey, lease: lease,
                         account) { [self] bookkeeping in
            await store(exchange, for: outgoing, bookkeeping: bookkeeping, account)
        }
    }

    /// Queues the write of a `304`'s revision, the attempt's settlement and the lease's return, in
    /// one transaction after the answer. It revises the entry the answer was built from, with the
    /// revision computed for the answer while that entry is unchanged, or nothing: another process
    /// may have replaced it meanwhile, and the 304 does not confirm its replacement.
    func reviseAfterAnswer(
        _ exchange: Exchange, answered: RevisedInMemory, at revisedAt: Date, outgoing: HTTPRequest,
        lease: LeaseReturn?, _ account: GateRequest.Account
    ) {
        writeAfterAnswer(exchange, resource: answered.base.resourceKey, lease: lease, account) { [self] bookkeeping in
            try? await cache.revalidated(exchange.response, for: outgoing, endpoint: account.endpoint,
                                         requestedAt: exchange.sentAt, bookkeeping: bookkeeping, at: revisedAt,
                                         answered: answered).booked
        }
    }

    /// Queues `write` — the cache's store or revision of `resource`, carrying the attempt's
    /// settlement and the lease's return in its transaction — and then writes whatever of those
    /// it did not carry. The caller's answer is already out, its units counted as if every
    /// refund succeeds: one that falls short is logged.
    func writeAfterAnswer(
        _ exchange: Exchange, resource: String?, lease: LeaseReturn?, _ account: GateRequest.Account,
        _ write: @escaping @Sendable (AnswerBookkeeping) async -> AnswerBookkeepingResult?
    ) {
        let pending = exchange.pendingSettlement
        let bookkeeping = AnswerBookkeeping(settlement: pending?.settlement, leaseRelease: lease?.take())
        afterAnswerWrites.enqueue(resource: resource) { [self] in
            // These totals are the write's alone.
            var written = account
            written.totals = GateRequest.Totals()
            do {
                try await finish(bookkeeping, written: await write(bookkeeping), pending: pending, &written)
            } catch {
                written.logger.warning("could not write an answer's settlement", metadata: ["error": "\(error)"])
            }
            if let pending, let reservation = pending.reservation, pending.settlement.refundReservationID != nil,
               written.totals.unitsCharged != -reservation.cost {
                // The answer said it cost nothing: the ledger kept what it could not give back
                // (a reset or a reconciliation of the day gave those units back already, or the write failed).
                written.logger.warning("an answer reported as free was not refunded in full", metadata: [
                    "gate.endpoint": "\(written.endpoint)", "gate.reservation": "\(reservation.id)",
                    "quota.refunded": "\(-written.totals.unitsCharged)", "quota.cost": "\(reservation.cost)",
                ])
            }
        }
    }
}
