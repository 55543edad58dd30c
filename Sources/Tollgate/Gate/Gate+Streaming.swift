import Foundation
import HTTPTypes
import Logging

extension Gate {
    /// The answer whose body the caller reads as it arrives (the machine's `stream` deliveries):
    /// each chunk is handed on as the transport reads it, kept for the store when `stores` and the
    /// body stays within the cache's limits, and read for the answer's cost. When the body ends,
    /// ``streamEnded(_:_:outgoing:stores:rule:lease:_:)`` settles the attempt — in the store's
    /// transaction when the body came whole and may be stored — after the answer, as any GET's.
    func streamedAnswer(
        _ exchange: Exchange, outgoing: HTTPRequest, stores: Bool, lease: LeaseReturn?, _ request: GateRequest
    ) -> GateResponse {
        guard let upstream = exchange.stream else { preconditionFailure("a streamed delivery without a stream") }
        var settling = exchange
        settling.stream = nil
        let rule = settling.pendingSettlement?.reservation != nil && (200..<300).contains(exchange.response.status.code)
            ? quota.price(of: request.endpoint).actualCost : nil
        let fields = exchange.response.headerFields
        let cache = configuration.cache
        let passing = StreamedAnswer(
            upstream,
            keepingUpTo: stores ? min(cache.maxBodySize, Int(clamping: cache.maxTotalBodyBytes)) : nil,
            announcedLength: fields[.contentLength].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) },
            costReader: rule.map { StreamedCostReader(rule: $0, fields: fields) }
        ) { [self, settling, account = request.account] ending in
            streamEnded(ending, settling, outgoing: outgoing, stores: stores, rule: rule, lease: lease, account)
        }
        var answer = Self.networkAnswer(exchange, request.totals)
        answer.bodyStream = passing.body
        return answer
    }

    /// A streamed body ended: its cost is settled with the attempt — what it reported, the last
    /// report winning; when it was cut short before reporting, the estimate, with the reason in the
    /// event's detail — and the body stored in the same transaction when it came whole and may be.
    func streamEnded(
        _ ending: StreamedAnswer.Ending, _ exchange: Exchange, outgoing: HTTPRequest, stores: Bool,
        rule: QuotaConfiguration.ActualCost?, lease: LeaseReturn?, _ account: GateRequest.Account
    ) {
        var ended = exchange
        ended.body = ending.body ?? Data()
        if var pending = ended.pendingSettlement {
            pending.settlement.at = clock.now()
            if let rule, let reservation = pending.reservation {
                pending.settlement.actualCosts = streamedCosts(ending, rule: rule, reservation: reservation, account)
            }
            ended.pendingSettlement = pending
        }
        if let cutShort = ending.cutShort {
            account.logger.debug("a streamed answer ended before its end", metadata: [
                "gate.endpoint": "\(account.endpoint)", "gate.reason": "\(cutShort)",
            ])
        }
        if stores, ending.body != nil {
            storeAfterAnswer(ended, outgoing: outgoing, lease: lease, account)
        } else {
            writeAfterAnswer(ended, resource: nil, lease: lease, account) { _ in nil }
        }
    }

    /// The actual cost a streamed body reported, or, when it was cut short before it did, the
    /// estimate again with the reason (a `settle` event of no units that says so).
    private func streamedCosts(
        _ ending: StreamedAnswer.Ending, rule: QuotaConfiguration.ActualCost, reservation: QuotaReservation,
        _ account: GateRequest.Account
    ) -> [QuotaActualCost] {
        let bucket = rule.bucket ?? reservation.bucket
        let source = rule.source.description
        if let units = ending.reportedCost {
            let read = ending.cutShort == nil ? source : "\(source), the last a stream cut short reported"
            return [QuotaActualCost(reservationID: reservation.id, bucket: bucket, units: quota.settleable(units, in: bucket),
                                    source: read)]
        }
        guard ending.cutShort != nil else {
            account.logger.debug("the answer does not tell its actual cost; the estimate stands",
                                 metadata: ["gate.endpoint": "\(account.endpoint)", "quota.source": "\(source)"])
            return []
        }
        let price = quota.price(of: account.endpoint)
        let estimate = bucket == reservation.bucket ? reservation.cost
            : price.additionalCharges.first { $0.bucket == bucket }?.units
        guard let estimate else { return [] }
        return [QuotaActualCost(reservationID: reservation.id, bucket: bucket, units: estimate,
                                source: "a stream cut short before it told \(source): the estimate stands")]
    }
}
