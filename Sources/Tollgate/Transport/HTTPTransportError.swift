/// A failure below HTTP: nothing, or nothing complete, came back from the server.
///
/// What the gate does with each depends on whether the request may have reached the server
/// (``mayHaveReachedServer``): an attempt that certainly never left the machine is refunded.
///
/// | Case | Reached the server? | Retried | Charged | Circuit |
/// |---|---|---|---|---|
/// | ``timedOut`` | maybe | yes | yes | failure |
/// | ``connectionFailed(_:)`` | maybe | yes | yes | failure |
/// | ``connectionRefused(_:)`` | no | yes | refunded | failure |
/// | ``tlsFailure(_:)`` | no | no | refunded | neutral |
/// | ``malformedResponse(_:)`` | yes | no | yes, once | failure |
/// | ``invalidRequest(_:)`` | no | no | refunded | neutral |
/// | ``responseTooLarge(limit:)`` | yes | no | yes | neutral |
public enum HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server did not answer in time.
    case timedOut
    /// The connection failed after it was made, or broke mid-answer: the request may have arrived.
    case connectionFailed(String)
    /// No connection could be made (refused, no route, unknown host): nothing was sent.
    case connectionRefused(String)
    /// The TLS handshake failed: the server's certificate does not verify (an unknown authority, a
    /// name that does not match, expired), or client and server share no protocol. The handshake
    /// ends before any byte of the request is sent, so the server's application never saw it; and
    /// no retry can make a certificate verify.
    case tlsFailure(String)
    /// The server's answer is not valid HTTP/1.1: too many or too large header fields, a control
    /// character in a field, two `Content-Length`s, `Content-Length` with `Transfer-Encoding`…
    /// The request reached the server, and the same request would get the same answer.
    case malformedResponse(String)
    /// The request cannot be sent as it is (no absolute URL, an unsupported scheme, a body on a
    /// method whose client refuses one…): the caller's error, refused before anything was sent.
    case invalidRequest(String)
    /// The response body was larger than the transport accepts.
    case responseTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .timedOut: "The server did not answer in time."
        case .connectionFailed(let reason): "The connection failed: \(reason)"
        case .connectionRefused(let reason): "No connection could be made to the server: \(reason)"
        case .tlsFailure(let reason): "The TLS handshake failed, so nothing was sent: \(reason)"
        case .malformedResponse(let reason): "The server's answer is not valid HTTP: \(reason)"
        case .invalidRequest(let reason): "The request cannot be sent: \(reason)"
        case .responseTooLarge(let limit): "The response body is larger than \(limit) bytes."
        }
    }

    /// Whether any byte of the request may have reached the server. False when the transport
    /// refused the request itself, never got a connection or failed the TLS handshake: such an
    /// attempt costs no quota.
    public var mayHaveReachedServer: Bool {
        switch self {
        case .timedOut, .connectionFailed, .malformedResponse, .responseTooLarge: true
        case .connectionRefused, .tlsFailure, .invalidRequest: false
        }
    }
}
