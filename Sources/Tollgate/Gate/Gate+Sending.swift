import Foundation
import HTTPTypes

extension Gate {
    /// One answer from the server.
    struct Exchange: Sendable {
        var response: HTTPResponse
        var body: Data
        /// The body as it arrives, when the caller asked for streams (``GateRequestOptions/streamsBodies``),
        /// or when it was too large for the cache and the caller asked for large bodies as streams.
        var stream: HTTPBodyStream?
        /// When the request left, for the response delay in a stored answer's age (RFC 9111 §4.2.3).
        var sentAt: Date? = nil
        /// The attempt's settlement, when it waits for the cache's write of the answer and shares
        /// its transaction (the machine's `settleWithAnswer`).
        var pendingSettlement: PendingSettlement? = nil
    }

    /// Step 5 for one attempt: the request through the transport, its outcome reported to the
    /// machine. Returns how to settle it, and the exchange when the server answered.
    /// With `streamsBodies`, a `2xx` answer's body is handed on as it arrives; any other status's
    /// is read whole (up to the cache's `maxBodySize`) first, since the machine reads it to decide
    /// on the circuit and a retry, and a HEAD's has no body to stream.
    func sendAttempt(
        _ outgoing: HTTPRequest, _ request: GateRequest, streamsLargeBodies: Bool, streamsBodies: Bool = false,
        machine: inout GateRequestStateMachine
    ) async -> (GateRequestStateMachine.SettlementAction, Exchange?) {
        let response: HTTPResponse
        var responseBody = Data()
        var stream: HTTPBodyStream?
        let sentAt = clock.now()
        let started = ContinuousClock.now
        defer { metrics.recordUpstreamLatency(ContinuousClock.now - started, endpoint: request.endpoint) }
        do {
            if streamsBodies, outgoing.method != .head {
                // Every body as it arrives: the transport returns the head with the first bytes.
                let answer: HTTPResponseBody
                (response, answer) = try await request.transport.send(outgoing, body: request.body, streamingPast: 0)
                switch answer {
                case .complete(let data): responseBody = data
                case .streaming(let rest) where (200..<300).contains(response.status.code): stream = rest
                case .streaming(let rest):
                    // Read in a task of its own, as the head was: a caller that has gone (a proxy client
                    // that disconnected) does not cut short the answer of the attempt in flight, which
                    // is settled as any other.
                    let limit = configuration.cache.maxBodySize
                    switch try await Task(operation: { try await rest.collected(upTo: limit) }).value {
                    case .complete(let data): responseBody = data
                    case .streaming(let large): stream = large
                    }
                }
            } else if streamsLargeBodies {
                let answer: HTTPResponseBody
                (response, answer) = try await request.transport.send(outgoing, body: request.body,
                                                                      streamingPast: configuration.cache.maxBodySize)
                switch answer {
                case .complete(let data): responseBody = data
                case .streaming(let rest): stream = rest
                }
            } else {
                (response, responseBody) = try await request.transport.send(outgoing, body: request.body)
            }
        } catch {
            return (machine.transportFailed(error), nil)
        }
        let settling = machine.responseReceived(
            status: response.status.code, fields: response.headerFields, body: responseBody,
            retryAfter: response.headerFields[.retryAfter].flatMap(RetryAfter.init(headerValue:)),
            isStreamed: stream != nil
        )
        return (settling, Exchange(response: response, body: responseBody, stream: stream, sentAt: sentAt))
    }
}
