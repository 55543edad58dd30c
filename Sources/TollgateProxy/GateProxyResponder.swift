import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Tollgate
import TollgateSimulation

/// Answers each request by sending it upstream through the gate.
struct GateProxyResponder: HTTPResponder {
    typealias Context = ProxyRequestContext

    let gate: Gate
    let transport: any HTTPTransport
    let upstream: URL
    let naming: EndpointNaming
    /// The upstream as links to it are recognised (``UpstreamLinkRewriter``).
    let linkedUpstream: UpstreamLinkRewriter.Upstream?
    /// Media types whose JSON bodies have their links to the upstream pointed at the proxy.
    let rewrittenBodyTypes: Set<String>
    let maximumBodySize: Int
    let clock: any TollgateClock
    /// Where exchanges are written as HAR (`--record`), if anywhere.
    let recorder: HTTPArchiveRecorder?
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        if request.method == .connect {
            // A reverse proxy opens no tunnel (RFC 9110 §9.3.6); the connection closes after this
            // answer (HTTP1ConnectionRules).
            var refused = refusal(.methodNotAllowed, code: "method_not_allowed",
                                  message: "The proxy is not a tunnel: CONNECT is not supported.", endpoint: nil)
            refused.headers[.allow] = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
            return refused
        }
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maximumBodySize)
        } catch {
            return refusal(.contentTooLarge, code: "request_too_large",
                           message: "The request body is larger than \(maximumBodySize) bytes.", endpoint: nil)
        }
        guard var outgoing = upstreamRequest(for: request) else {
            return refusal(.badRequest, code: "path_outside_upstream",
                           message: "The path leaves the upstream's base path \(upstream.path).", endpoint: nil)
        }
        if body.readableBytes > 0, request.method == .get || request.method == .head {
            // RFC 9110 §9.3.1: a GET body has no meaning, and the cache key cannot see it.
            return refusal(.badRequest, code: "body_not_allowed",
                           message: "A \(request.method) request cannot carry a body through the proxy.", endpoint: nil)
        }
        let endpoint = naming.endpoint(for: outgoing)
        if case .jsonBody = gate.quota.price(of: endpoint).actualCost?.source {
            // Its cost is read from the body: ask only for codings the gate can decode (a client's
            // zstd would leave the estimate standing).
            ContentDecoding.limitAcceptEncoding(&outgoing.headerFields)
        }
        if linkedUpstream != nil, !rewrittenBodyTypes.isEmpty {
            ClientConditional.restoreUpstreamTags(in: &outgoing.headerFields)
        }
        let bodyData = body.readableBytes == 0 ? nil : Data(body.readableBytesView)
        let startedAt = clock.now()
        do {
            var answer = try await sendForClient(outgoing, body: bodyData, endpoint: endpoint, context: context)
            let links = UpstreamLinkRewriter(upstream: linkedUpstream, clientAuthority: request.head.authority)
            if links != nil, request.method != .head, let stream = answer.bodyStream,
               UpstreamLinkRewriter.isRewritable(answer.response.headerFields, mediaTypes: rewrittenBodyTypes) {
                // A body whose links are rewritten is needed whole: read it here (the gate still
                // stores and settles it as it passes), within the proxy's body limit.
                do {
                    switch try await stream.collected(upTo: maximumBodySize) {
                    case .complete(let whole):
                        answer.body = whole
                        answer.bodyStream = nil
                    case .streaming(let rest):
                        answer.bodyStream = rest
                    }
                } catch {
                    logger.warning("\(outgoing.method.rawValue) \(request.uri.path) broke off upstream: \(error)",
                                   metadata: ["proxy.endpoint": "\(endpoint)"])
                    return refusal(.badGateway, code: "upstream_unreachable",
                                   message: "The upstream's answer broke off: \(error)", endpoint: endpoint,
                                   unitsCharged: answer.unitsCharged)
                }
            }
            if answer.bodyStream == nil {
                await recorder?.record(request: outgoing, requestBody: bodyData, startedAt: startedAt,
                                       duration: clock.now().timeIntervalSince(startedAt), response: answer.response,
                                       body: answer.body)
            }
            logger.info("\(outgoing.method.rawValue) \(request.uri.path) → \(answer.status.code)", metadata: [
                "proxy.endpoint": "\(endpoint)", "proxy.source": "\(answer.source)", "proxy.units": "\(answer.unitsCharged)",
            ])
            var fields = ProxyHeaders.forwardable(answer.response.headerFields, dropping: [.contentLength])
            fields[ProxyHeaders.source] = answer.source.description
            fields[ProxyHeaders.units] = String(answer.unitsCharged)
            fields[ProxyHeaders.endpoint] = endpoint
            fields[ProxyHeaders.upstreamDate] = answer.response.headerFields[.date]
            addRateLimitFields(to: &fields, endpoint: endpoint, answer: answer)
            if request.method == .head, let length = answer.response.headerFields[.contentLength] {
                // No body, but the length a GET would have (RFC 9110 §9.3.2), not the empty body's 0.
                fields[.contentLength] = length
            }
            var (status, body) = (answer.response.status, answer.body)
            // Links to the upstream lead back through the gate: `Link`, `Location` and `Content-Location`
            // always; a body of a listed media type when it is held whole (not streamed, not a HEAD's,
            // whose `Content-Length` stays the upstream's: the rewritten length is not known without
            // the body). The stored body keeps the upstream's bytes. Before the client's conditional:
            // a 304 must carry the tag the client's 200 carried, weakened when its body was rewritten.
            if let links {
                links.rewriteFields(&fields)
                if answer.bodyStream == nil, request.method != .head {
                    links.rewriteBody(&body, fields: &fields, status: status, mediaTypes: rewrittenBodyTypes,
                                      decodedLimit: maximumBodySize)
                }
            }
            if answer.bodyStream == nil, ClientConditional.isNotModified(
                method: request.method, requestFields: request.headers, status: status, responseFields: fields
            ) {
                // The client's own conditions say it holds this answer: a 304, not the body again.
                (status, body) = (.notModified, Data())
                ClientConditional.removeRepresentationMetadata(from: &fields)
            }
            if request.method == .head, fields[.contentLength] == nil, status != .notModified {
                // A GET would have been chunked: say so (NIO frames it; the body stays unsent), not
                // the empty body's `Content-Length: 0`, which would say the resource is empty.
                return Response(status: status, headers: fields, body: ResponseBody(contentLength: nil) { writer in
                    try await writer.finish(nil)
                })
            }
            guard let stream = answer.bodyStream else {
                return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
            }
            // From the upstream: each chunk passed on as it arrives (every write is flushed), at the
            // pace the client reads; the gate stores it and settles its cost when it ends. A client
            // that goes cancels the read, and with it the upstream request, at once.
            let length = answer.response.headerFields[.contentLength].flatMap(Int.init)
            let client = await ClientConnectionWatcher.watching(context.channel)
            let (recorder, clock, maximumBodySize, response, sent) = (self.recorder, self.clock, self.maximumBodySize,
                                                                       answer.response, outgoing)
            return Response(status: answer.response.status, headers: fields, body: ResponseBody(contentLength: length) { writer in
                let reader = ClientBodyReader(stream)
                client?.onDisconnect { reader.cancel() }
                defer { client?.clear() }
                // --record keeps a copy for the file, within the proxy's body limit.
                var recorded: Data? = recorder == nil ? nil : Data()
                while let chunk = try await reader.next() {
                    try await writer.write(ByteBuffer(bytes: chunk))
                    if let kept = recorded { recorded = kept.count + chunk.count <= maximumBodySize ? kept + chunk : nil }
                }
                // Written before the answer's end goes out, as a whole answer's entry is: a client
                // that reads a chunked answer to its end finds it in the file, even if the proxy is
                // killed right after. (With a length, the last chunk may reach it a moment sooner.)
                await recorder?.record(request: sent, requestBody: bodyData, startedAt: startedAt,
                                       duration: clock.now().timeIntervalSince(startedAt), response: response, body: recorded)
                try await writer.finish(nil)
            })
        } catch {
            await recorder?.record(request: outgoing, requestBody: bodyData, startedAt: startedAt,
                                   duration: clock.now().timeIntervalSince(startedAt), response: nil, body: nil)
            return failure(error.error, unitsCharged: error.unitsCharged, request: request, outgoing: outgoing,
                           endpoint: endpoint)
        }
    }

    /// Adds `RateLimit-Policy` and `RateLimit` from what the admission read (``RateLimitFields``),
    /// except to an answer served from the cache with a positive `Age`, whose clients ignore them
    /// (draft-ietf-httpapi-ratelimit-headers §5).
    private func addRateLimitFields(to fields: inout HTTPFields, endpoint: String, answer: GateResponse) {
        if let age = fields[.age].flatMap(Int.init), age > 0 { return }
        guard let rate = RateLimitFields.fields(gate: gate, endpoint: endpoint, now: clock.now()) else { return }
        fields[RateLimitFields.policy] = rate.policy
        fields[RateLimitFields.rateLimit] = rate.limit
    }

    /// Sends a request through the gate for as long as someone waits for it: a client that
    /// disconnects, or a shutdown, cancels the remaining attempts and their waits (`CancellationError`,
    /// with what was charged). The attempt in flight finishes and is settled as any other, unless
    /// the responder itself is cancelled (a shutdown past its grace period).
    private func sendForClient(
        _ outgoing: HTTPRequest, body: Data?, endpoint: String, context: Context
    ) async throws(GateFailure) -> GateResponse {
        let shield = AttemptShield(transport)
        let gate = self.gate
        let work = Task { () async throws -> GateResponse in
            // The API's own "quota spent" answer goes to the client as the API wrote it: its SDK reads it.
            // The client's own conditional is answered from what is stored, as a 304 when it matches.
            try await gate.sendReportingCost(outgoing, body: body, endpoint: endpoint,
                                             options: GateRequestOptions(streamsBodies: true, passesQuotaSpentAnswers: true,
                                                                         answersConditionalsFromStore: true),
                                             via: shield)
        }
        let client = await ClientConnectionWatcher.watching(context.channel)
        let logger = self.logger
        client?.onDisconnect {
            logger.info("\(outgoing.method.rawValue) \(outgoing.path ?? "") client gone: no further attempt",
                        metadata: ["proxy.endpoint": "\(endpoint)"])
            work.cancel()
        }
        defer { client?.clear() }
        let result = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await work.result
            } onGracefulShutdown: {
                work.cancel()
            }
        } onCancel: {
            work.cancel()
            shield.abort()
        }
        switch result {
        case .success(let answer):
            return answer
        case .failure(let failure as GateFailure):
            throw failure
        case .failure(let error):
            throw GateFailure(error: error, unitsCharged: 0, attempts: 0)
        }
    }

    /// The proxy's answer when the gate gave none: a refusal, an unreachable upstream, a request
    /// that cannot be sent, a client gone or a shutdown, or a ledger that cannot be written.
    private func failure(
        _ error: any Error, unitsCharged: Int, request: Request, outgoing: HTTPRequest, endpoint: String
    ) -> Response {
        switch error {
        case let refusal as TollgateError:
            let retryAfter: TimeInterval
            let status: HTTPResponse.Status
            let code: String
            switch refusal {
            case .throttled(let seconds):
                (status, code, retryAfter) = (.tooManyRequests, "throttled", seconds)
            case .quotaExceeded(_, _, _, let resetsAt):
                (status, code, retryAfter) = (.tooManyRequests, "quota_exceeded", resetsAt.timeIntervalSince(clock.now()))
            case .circuitOpen(let seconds):
                (status, code, retryAfter) = (.serviceUnavailable, "circuit_open", seconds)
            }
            logger.info("\(outgoing.method.rawValue) \(request.uri.path) refused: \(refusal)", metadata: ["proxy.endpoint": "\(endpoint)"])
            var answer = self.refusal(status, code: code, message: refusal.description, endpoint: endpoint,
                                      retryAfter: max(1, SaturatingConversion.int(retryAfter.rounded(.up))),
                                      unitsCharged: unitsCharged)
            if let rate = RateLimitFields.fields(gate: gate, endpoint: endpoint, now: clock.now()) {
                answer.headers[RateLimitFields.policy] = rate.policy
                answer.headers[RateLimitFields.rateLimit] = rate.limit
            }
            return answer
        case HTTPTransportError.invalidRequest(let reason):
            logger.info("\(outgoing.method.rawValue) \(request.uri.path) cannot be sent: \(reason)",
                        metadata: ["proxy.endpoint": "\(endpoint)"])
            return refusal(.badRequest, code: "invalid_request", message: "The request cannot be sent: \(reason)",
                           endpoint: endpoint, unitsCharged: unitsCharged)
        case is CancellationError:
            // The client has gone (it reads nothing), or the proxy is shutting down.
            logger.info("\(outgoing.method.rawValue) \(request.uri.path) cancelled after \(unitsCharged) units",
                        metadata: ["proxy.endpoint": "\(endpoint)"])
            var answer = refusal(.serviceUnavailable, code: "cancelled",
                                 message: "The request was cancelled before it was answered: the proxy is shutting down.",
                                 endpoint: endpoint, unitsCharged: unitsCharged)
            answer.headers[.connection] = "close"
            return answer
        case let failure as HTTPTransportError:
            logger.warning("\(outgoing.method.rawValue) \(request.uri.path) failed upstream: \(failure)",
                           metadata: ["proxy.endpoint": "\(endpoint)"])
            return refusal(.badGateway, code: "upstream_unreachable", message: failure.description, endpoint: endpoint,
                           unitsCharged: unitsCharged)
        default:
            logger.error("\(outgoing.method.rawValue) \(request.uri.path) failed in the gate: \(error)",
                         metadata: ["proxy.endpoint": "\(endpoint)"])
            return refusal(.internalServerError, code: "gate_failed", message: "\(error)", endpoint: endpoint,
                           unitsCharged: unitsCharged)
        }
    }

    /// The request to send upstream: the upstream's scheme and authority, the client's path under
    /// the upstream's path with dot segments resolved (nil when it would leave it), the client's
    /// query, and the client's fields as sent, less hop-by-hop ones and `Host` (the authority
    /// replaces it). `Accept-Encoding` goes through: the answer comes back in the coding the client
    /// asked for, bytes untouched, and is stored as a variant of its own when the upstream says
    /// `Vary: Accept-Encoding`.
    func upstreamRequest(for request: Request) -> HTTPRequest? {
        guard let path = UpstreamTarget.resolve(basePath: upstream.path, clientPath: request.uri.path,
                                                query: request.uri.query) else { return nil }
        let authority = Self.authority(of: upstream)
        return HTTPRequest(
            method: Self.wireMethod(request.method), scheme: upstream.scheme?.lowercased(), authority: authority, path: path,
            headerFields: ProxyHeaders.forwardable(request.headers, dropping: [ProxyHeaders.host, .contentLength])
        )
    }

    /// `HOST[:PORT]` of `url` as the request's authority, an IPv6 literal in brackets (RFC 3986 §3.2.2):
    /// `URL.host` gives it without them.
    static func authority(of url: URL) -> String {
        var host = url.host ?? ""
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return url.port.map { "\(host):\($0)" } ?? host
    }

    /// The method as the client sent it. SwiftNIO's HTTP/1 decoder names `M-SEARCH` (SSDP) `MSEARCH`,
    /// a method no client sent and no server knows.
    static func wireMethod(_ method: HTTPRequest.Method) -> HTTPRequest.Method {
        method.rawValue == "MSEARCH" ? HTTPRequest.Method("M-SEARCH")! : method
    }

    /// A JSON error answer from the proxy itself.
    private func refusal(
        _ status: HTTPResponse.Status, code: String, message: String, endpoint: String?, retryAfter: Int? = nil,
        unitsCharged: Int = 0
    ) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=utf-8"
        fields[ProxyHeaders.source] = "refused"
        fields[ProxyHeaders.units] = String(unitsCharged)
        if let endpoint { fields[ProxyHeaders.endpoint] = endpoint }
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        let payload = RefusalBody(error: .init(code: code, message: message), message: message,
                                  retryAfter: retryAfter.map(String.init))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(payload)) ?? Data()
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json + Data("\n".utf8))))
    }
}
