import Tollgate

/// A loopback address and port to listen on, parsed from `HOST:PORT`.
///
/// The proxy spends the quota of whoever runs it for anyone who can reach it, so it only listens
/// on loopback: `127.0.0.0/8`, `::1` or `localhost`.
public struct LoopbackAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host, without brackets: `127.0.0.1`, `::1` or `localhost`.
    public var host: String
    /// The port; 0 lets the operating system pick one.
    public var port: Int

    /// Creates an address from a loopback host and a port.
    /// - Parameters:
    ///   - host: A loopback host.
    ///   - port: The port, 0 to 65535.
    /// - Throws: ``GateProxyError/invalidListenAddress(_:reason:)`` for any other host or port.
    public init(host: String, port: Int) throws(GateProxyError) {
        guard Self.isLoopback(host) else {
            throw .invalidListenAddress("\(host):\(port)", reason: "\(host) is not a loopback address (127.0.0.1, ::1 or localhost)")
        }
        do {
            let address = try HostAndPort(host: host, port: port)
            (self.host, self.port) = (address.host, address.port)
        } catch {
            throw .invalidListenAddress(error.text, reason: error.reason)
        }
    }

    /// Parses `HOST:PORT`, such as `127.0.0.1:8080` or `[::1]:8080`.
    /// - Parameter text: The address.
    /// - Throws: ``GateProxyError/invalidListenAddress(_:reason:)`` when it is malformed or not loopback.
    public init(parsing text: String) throws(GateProxyError) {
        let address: HostAndPort
        do { address = try HostAndPort(parsing: text) } catch { throw .invalidListenAddress(error.text, reason: error.reason) }
        try self.init(host: address.host, port: address.port)
    }

    /// Whether `host` only reaches this machine (``HostAndPort/isLoopback(_:)``).
    public static func isLoopback(_ host: String) -> Bool { HostAndPort.isLoopback(host) }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
