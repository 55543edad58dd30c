import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Tollgate

/// Answers each request by sending it upstream through the gate.
struct GateProxyResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let gate: Gate
    let upstream: URL
    let naming: EndpointNaming
    let maximumBodySize: Int
    let clock: any TollgateClock
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maximumBodySize)
        } catch {
            return refusal(.contentTooLarge, code: "request_too_large",
                           message: "The request body is larger than \(maximumBodySize) bytes.", endpoint: nil)
        }
        let outgoing = upstreamRequest(for: request)
        let endpoint = naming.endpoint(for: outgoing)
        let bodyData = body.readableBytes == 0 ? nil : Data(body.readableBytesView)
        do {
            let answer = try await gate.send(outgoing, body: bodyData, endpoint: endpoint)
            logger.info("\(outgoing.method.rawValue) \(request.uri.path) → \(answer.status.code)", metadata: [
                "proxy.endpoint": "\(endpoint)", "proxy.source": "\(answer.source)", "proxy.units": "\(answer.unitsCharged)",
            ])
            var fields = ProxyHeaders.forwardable(answer.response.headerFields, dropping: [.contentLength])
            fields[ProxyHeaders.source] = answer.source.description
            fields[ProxyHeaders.units] = String(answer.unitsCharged)
            fields[ProxyHeaders.endpoint] = endpoint
            return Response(
                status: answer.response.status, headers: fields,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
            )
        } catch let refusal as TollgateError {
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
            return self.refusal(status, code: code, message: refusal.description, endpoint: endpoint,
                                retryAfter: max(1, Int(retryAfter.rounded(.up))))
        } catch let failure as HTTPTransportError {
            logger.warning("\(outgoing.method.rawValue) \(request.uri.path) failed upstream: \(failure)",
                           metadata: ["proxy.endpoint": "\(endpoint)"])
            return refusal(.badGateway, code: "upstream_unreachable", message: failure.description, endpoint: endpoint)
        } catch {
            logger.error("\(outgoing.method.rawValue) \(request.uri.path) failed in the gate: \(error)",
                         metadata: ["proxy.endpoint": "\(endpoint)"])
            return refusal(.internalServerError, code: "gate_failed", message: "\(error)", endpoint: endpoint)
        }
    }

    /// The request to send upstream: the upstream's scheme and authority, its path as a prefix, the
    /// client's path and query, and the client's fields without hop-by-hop ones, `Host` (the
    /// authority replaces it) and `Accept-Encoding` (the gate stores and serves identity bodies).
    func upstreamRequest(for request: Request) -> HTTPRequest {
        let prefix = upstream.path.hasSuffix("/") ? String(upstream.path.dropLast()) : upstream.path
        var path = prefix + (request.uri.path.hasPrefix("/") ? request.uri.path : "/" + request.uri.path)
        if let query = request.uri.query, !query.isEmpty { path += "?" + query }
        let authority = upstream.port.map { "\(upstream.host ?? ""):\($0)" } ?? (upstream.host ?? "")
        return HTTPRequest(
            method: request.method, scheme: upstream.scheme?.lowercased(), authority: authority, path: path,
            headerFields: ProxyHeaders.forwardable(request.headers, dropping: [ProxyHeaders.host, .contentLength, .acceptEncoding])
        )
    }

    /// A JSON error answer from the proxy itself.
    private func refusal(
        _ status: HTTPResponse.Status, code: String, message: String, endpoint: String?, retryAfter: Int? = nil
    ) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "application/json; charset=utf-8"
        fields[ProxyHeaders.source] = "refused"
        fields[ProxyHeaders.units] = "0"
        if let endpoint { fields[ProxyHeaders.endpoint] = endpoint }
        if let retryAfter { fields[.retryAfter] = String(retryAfter) }
        var payload: [String: String] = ["error": code, "message": message]
        if let retryAfter { payload["retry_after"] = String(retryAfter) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = (try? encoder.encode(payload)) ?? Data()
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: json + Data("\n".utf8))))
    }
}
