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
        guard (0...65_535).contains(port) else {
            throw .invalidListenAddress("\(host):\(port)", reason: "the port must be between 0 and 65535")
        }
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, such as `127.0.0.1:8080` or `[::1]:8080`.
    /// - Parameter text: The address.
    /// - Throws: ``GateProxyError/invalidListenAddress(_:reason:)`` when it is malformed or not loopback.
    public init(parsing text: String) throws(GateProxyError) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw .invalidListenAddress(text, reason: "write an IPv6 address as [::1]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw .invalidListenAddress(text, reason: "write it as HOST:PORT, such as 127.0.0.1:8080")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port) else {
            throw .invalidListenAddress(text, reason: "'\(port)' is not a port number")
        }
        try self.init(host: String(host), port: number)
    }

    /// Whether `host` only reaches this machine.
    public static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        if lowered == "localhost" || lowered == "::1" || lowered == "0:0:0:0:0:0:0:1" { return true }
        let octets = lowered.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4,
              octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) && (Int($0) ?? 256) <= 255 })
        else { return false }
        return octets[0] == "127"
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
