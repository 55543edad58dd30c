import Foundation
import HTTPTypes

/// Sends one HTTP request and returns the whole response: what the gate calls for the network step.
///
/// `URLSessionTransport` ships with the core; `TollgateAsyncHTTPClient` adds one over
/// AsyncHTTPClient. A transport does no caching, retrying or redirect following of its own: a
/// `3xx` comes back as it is, and the gate decides whether to follow it (see ``RedirectPolicy``).
public protocol HTTPTransport: Sendable {
    /// Sends `request` and waits for the complete response.
    /// - Parameters:
    ///   - request: The request, with an absolute URL (scheme, authority and path).
    ///   - body: The request body, if any.
    /// - Returns: The response head and its whole body.
    /// - Throws: ``HTTPTransportError`` for timeouts and connection failures, so the circuit
    ///   breaker can classify them, and for requests refused before anything was sent
    ///   (``HTTPTransportError/invalidRequest(_:)``, ``HTTPTransportError/connectionRefused(_:)``),
    ///   so the gate refunds them.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)

    /// Sends `request` and returns the body whole when it is at most `limit` bytes, else the
    /// bytes read so far and a stream of the rest, so an answer of any size passes through without
    /// being held. A transport that cannot stream returns every body whole (the default).
    /// - Parameters:
    ///   - request: The request, with an absolute URL.
    ///   - body: The request body, if any.
    ///   - limit: The largest body returned whole.
    /// - Returns: The response head and its body.
    /// - Throws: ``HTTPTransportError``, as ``send(_:body:)``.
    func send(_ request: HTTPRequest, body: Data?, streamingPast limit: Int) async throws -> (HTTPResponse, HTTPResponseBody)
}
