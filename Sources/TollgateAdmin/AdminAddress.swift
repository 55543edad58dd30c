import TollgateProxy

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
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw .invalidAddress(text, reason: "write an IPv6 address as [::1]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw .invalidAddress(text, reason: "write it as HOST:PORT, such as 127.0.0.1:9464")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !host.isEmpty else { throw .invalidAddress(text, reason: "the host is missing") }
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port),
              (0...65_535).contains(number) else {
            throw .invalidAddress(text, reason: "'\(port)' is not a port number between 0 and 65535")
        }
        self.host = String(host)
        self.port = number
    }

    /// Whether only this machine can reach it (`127.0.0.0/8`, `::1`, `localhost`): the same rule
    /// as the proxy's ``LoopbackAddress``.
    public var isLoopback: Bool { LoopbackAddress.isLoopback(host) }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
