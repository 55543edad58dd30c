/// Why the proxy cannot start.
public enum GateProxyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The listen address is malformed or not loopback.
    case invalidListenAddress(String, reason: String)
    /// The upstream is not an absolute http(s) URL.
    case invalidUpstream(String)
    /// The server did not start listening.
    case couldNotStart(String)
    /// Another socket is already bound to the address (`EADDRINUSE`).
    case addressInUse(String)

    public var description: String {
        switch self {
        case .invalidListenAddress(let address, let reason): "Cannot listen on \(address): \(reason)."
        case .invalidUpstream(let upstream): "The upstream '\(upstream)' is not an absolute http(s) URL."
        case .couldNotStart(let address): "The proxy could not start listening on \(address)."
        case .addressInUse(let address):
            "Cannot listen on \(address): another process is already listening there. Stop that process, or "
                + "choose another port (tollgate proxy --listen 127.0.0.1:0 picks a free one)."
        }
    }
}
