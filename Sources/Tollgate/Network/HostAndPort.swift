/// `HOST:PORT` as a listener is given it on the command line: `127.0.0.1:8080`, `[::1]:8080`,
/// `0.0.0.0:9464`. The proxy and the operators' listener both parse their addresses with it, so
/// they read the same text the same way and agree on what loopback is.
public struct HostAndPort: Sendable, Hashable, CustomStringConvertible {
    /// The host, without brackets.
    public var host: String
    /// The port; 0 lets the operating system pick one.
    public var port: Int

    /// Why a text is not `HOST:PORT`.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The text as given.
        public var text: String
        /// What is wrong with it, in words a user can act on.
        public var reason: String

        public var description: String { "'\(text)' is not a listen address: \(reason)" }
    }

    /// Creates an address from its parts.
    /// - Parameters:
    ///   - host: The host, without brackets.
    ///   - port: The port, 0 to 65535.
    /// - Throws: ``ParseError`` for an empty host or a port out of range.
    public init(host: String, port: Int) throws(ParseError) {
        let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        guard !host.isEmpty else { throw ParseError(text: text, reason: "the host is missing") }
        guard (0...65_535).contains(port) else {
            throw ParseError(text: text, reason: "the port must be between 0 and 65535")
        }
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; an IPv6 host is written in brackets.
    /// - Parameters:
    ///   - text: The address.
    ///   - example: The address the error message suggests, such as `127.0.0.1:8080`.
    /// - Throws: ``ParseError`` when it is malformed.
    public init(parsing text: String, example: String = "127.0.0.1:8080") throws(ParseError) {
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ParseError(text: text, reason: "write an IPv6 address as [::1]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            port = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw ParseError(text: text, reason: "write it as HOST:PORT, such as \(example)")
            }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port) else {
            throw ParseError(text: text, reason: "'\(port)' is not a port number")
        }
        try self.init(host: String(host), port: number)
    }

    /// Whether only this machine can reach it (see ``isLoopback(_:)``).
    public var isLoopback: Bool { Self.isLoopback(host) }

    /// Whether `host` only reaches this machine: `127.0.0.0/8`, `::1` or `localhost`.
    /// - Parameter host: A host name or address, without brackets.
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
