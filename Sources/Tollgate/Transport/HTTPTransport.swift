import Foundation
import HTTPTypes

/// Sends one HTTP request and returns the whole response: what the gate calls for the network step.
///
/// `URLSessionTransport` ships with the core; `TollgateAsyncHTTPClient` adds one over
/// AsyncHTTPClient. A transport does no caching, retrying or redirect policy of its own beyond the
/// client's defaults: the gate decides those.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and waits for the complete response.
    /// - Parameters:
    ///   - request: The request, with an absolute URL (scheme, authority and path).
    ///   - body: The request body, if any.
    /// - Returns: The response head and its whole body.
    /// - Throws: ``HTTPTransportError`` for timeouts and connection failures, so the circuit
    ///   breaker can classify them.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)
}

/// A failure below HTTP: nothing, or nothing complete, came back from the server.
public enum HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server did not answer in time.
    case timedOut
    /// The connection could not be made or was lost.
    case connectionFailed(String)
    /// The request cannot be sent as it is (no URL, a bad header…).
    case invalidRequest(String)
    /// The response body was larger than the transport accepts.
    case responseTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .timedOut: "The server did not answer in time."
        case .connectionFailed(let reason): "The connection failed: \(reason)"
        case .invalidRequest(let reason): "The request cannot be sent: \(reason)"
        case .responseTooLarge(let limit): "The response body is larger than \(limit) bytes."
        }
    }
}
