import Tollgate

/// Where the operators' listener binds: `HOST:PORT`, loopback unless a token guards it.
public struct AdminAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host, without brackets.
    public var host: String
    /// The port; 0 lets the operating system pick one.
    public var port: Int

    /// Parses `HOST:PORT`, such as `127.0.0.1:9464`, `[::1]:9464` or `0.0.0.0:9464`.
    /// - Parameter text: The address.
    /// - Throws: ``AdminServerError/invalidAddress(_:reason:)`` when it is malformed.
    public init(parsing text: String) throws(AdminServerError) {
        do {
            let address = try HostAndPort(parsing: text, example: "127.0.0.1:9464")
            (host, port) = (address.host, address.port)
        } catch {
            throw .invalidAddress(text, reason: error.reason)
        }
    }

    /// Whether only this machine can reach it (`127.0.0.0/8`, `::1`, `localhost`): the same rule
    /// as the proxy's (``HostAndPort/isLoopback(_:)``).
    public var isLoopback: Bool { HostAndPort.isLoopback(host) }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
