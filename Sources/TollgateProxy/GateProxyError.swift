/// Why the proxy cannot start.
public enum GateProxyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The listen address is malformed or not loopback.
    case invalidListenAddress(String, reason: String)
    /// The upstream is not an absolute http(s) URL.
    case invalidUpstream(String)
    /// The server did not start listening.
    case couldNotStart(String)

    public var description: String {
        switch self {
        case .invalidListenAddress(let address, let reason): "Cannot listen on \(address): \(reason)."
        case .invalidUpstream(let upstream): "The upstream '\(upstream)' is not an absolute http(s) URL."
        case .couldNotStart(let address): "The proxy could not start listening on \(address)."
        }
    }
}
