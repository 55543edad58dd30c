/// A failure below HTTP: nothing, or nothing complete, came back from the server.
///
/// What the gate does with each depends on whether the request may have reached the server
/// (``mayHaveReachedServer``): an attempt that certainly never left the machine is refunded.
public enum HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The server did not answer in time.
    case timedOut
    /// The connection failed after it was made, or broke mid-answer: the request may have arrived.
    case connectionFailed(String)
    /// No connection could be made (refused, no route, unknown host): nothing was sent.
    case connectionRefused(String)
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
        case .invalidRequest(let reason): "The request cannot be sent: \(reason)"
        case .responseTooLarge(let limit): "The response body is larger than \(limit) bytes."
        }
    }

    /// Whether any byte of the request may have reached the server. False when the transport
    /// refused the request itself or never got a connection: such an attempt costs no quota.
    public var mayHaveReachedServer: Bool {
        switch self {
        case .timedOut, .connectionFailed, .responseTooLarge: true
        case .connectionRefused, .invalidRequest: false
        }
    }
}
