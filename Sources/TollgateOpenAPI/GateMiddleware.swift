import Foundation
import HTTPTypes
import OpenAPIRuntime
import Tollgate

/// A `ClientMiddleware` that puts any swift-openapi-generator client behind a ``Tollgate/Gate``:
/// its ETag cache, circuit breaker, throttle, quota ledger and retries.
///
/// The operation's `operationID` is the endpoint name in the gate's cost table; `endpointNames`
/// renames the ones that differ (`["Videos_list": "videos.list"]`).
///
/// ```swift
/// let client = Client(serverURL: url, transport: transport,
///                     middlewares: [GateMiddleware(gate: gate)])
/// ```
public struct GateMiddleware: ClientMiddleware {
    private let gate: Gate
    private let endpointNames: [String: String]
    private let maximumRequestBodySize: Int

    /// Creates the middleware.
    /// - Parameters:
    ///   - gate: The gate every request goes through.
    ///   - endpointNames: Endpoint names for operation IDs that differ from them.
    ///   - maximumRequestBodySize: The largest request body collected before sending; 16 MiB.
    public init(gate: Gate, endpointNames: [String: String] = [:], maximumRequestBodySize: Int = 16 << 20) {
        self.gate = gate
        self.endpointNames = endpointNames
        self.maximumRequestBodySize = maximumRequestBodySize
    }

    /// The endpoint name for an operation ID.
    /// - Parameter operationID: The OpenAPI operation ID.
    /// - Returns: Its mapped name, or the operation ID itself.
    public func endpoint(for operationID: String) -> String {
        endpointNames[operationID] ?? operationID
    }

    public func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let requestBody: Data? = if let body {
            Data(try await [UInt8](collecting: body, upTo: maximumRequestBodySize))
        } else {
            nil
        }
        let answer = try await withoutActuallyEscaping(next) { next in
            try await gate.send(
                Self.absolute(request, baseURL: baseURL), body: requestBody,
                endpoint: endpoint(for: operationID),
                // `next` sends the operation's own request: it cannot carry a batch's other target.
                options: GateRequestOptions(joinsBatches: false),
                via: NextTransport(original: request, baseURL: baseURL, next: next)
            )
        }
        return (answer.response, HTTPBody(answer.body))
    }

    /// The request with the server URL's scheme, authority and path prefix, as the gate keys it.
    static func absolute(_ request: HTTPRequest, baseURL: URL) -> HTTPRequest {
        var absolute = request
        absolute.scheme = baseURL.scheme
        absolute.authority = baseURL.port.map { "\(baseURL.host ?? ""):\($0)" } ?? baseURL.host
        let prefix = baseURL.path.hasSuffix("/") ? String(baseURL.path.dropLast()) : baseURL.path
        absolute.path = prefix + (request.path ?? "")
        return absolute
    }
}

/// Sends the gate's network step through the rest of the middleware chain and the client's own
/// transport, keeping the request as the generated client made it, plus the gate's headers.
private struct NextTransport: HTTPTransport {
    let original: HTTPRequest
    let baseURL: URL
    let next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var outgoing = original
        outgoing.headerFields = request.headerFields
        let (response, responseBody) = try await next(outgoing, body.map { HTTPBody($0) }, baseURL)
        let data: Data = if let responseBody {
            Data(try await [UInt8](collecting: responseBody, upTo: 64 << 20))
        } else {
            Data()
        }
        return (response, data)
    }
}
