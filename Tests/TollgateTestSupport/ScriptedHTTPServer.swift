import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP/1.1 server written on bare sockets, for tests that need to see exactly what
/// reached a server (every header, on which address) and to answer exactly as scripted. It binds
/// any loopback address (127.0.0.2 as well as 127.0.0.1), so two origins can run side by side.
/// Connections are kept alive unless the client says `Connection: close`; an answer with status 0
/// drops the connection instead, as a dead server would.
public final class ScriptedHTTPServer: Sendable {
    /// A request as the server read it.
    public struct Request: Sendable {
        public let method: String
        /// The request target as sent: path and query.
        public let target: String
        /// Header fields in the order sent, names as sent.
        public let headers: [(name: String, value: String)]
        public let body: Data

        /// The first value of a field, by case-insensitive name.
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// An answer to script.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: Data
        /// When set, the head announces the whole body but only this many of its bytes are sent
        /// before the connection is dropped: a body cut short.
        public var cutAfter: Int?

        public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: Data = Data(),
                    cutAfter: Int? = nil) {
            self.status = status
            self.headers = headers
            self.body = body
            self.cutAfter = cutAfter
        }

        public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: String) {
            self.init(status: status, headers: headers, body: Data(body.utf8))
        }
    }

    public let host: String
    public let port: Int
    private let socketDescriptor: Int32
    private let received = Mutex<[Request]>([])
    private let stopped = Mutex(false)
    private let handler: @Sendable (Request) -> Response

    /// `http://HOST:PORT` (an IPv6 host in brackets).
    public var baseURL: String { host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)" }

    /// Every request read so far.
    public var requests: [Request] { received.withLock { $0 } }

    /// Starts listening.
    /// - Parameters:
    ///   - host: A loopback address: IPv4 (`127.0.0.1`, `127.0.0.2`) or IPv6 (`::1`).
    ///   - handler: The answer to each request.
    public init(host: String = "127.0.0.1", handler: @escaping @Sendable (Request) -> Response) throws {
        let (descriptor, port) = host.contains(":") ? try Self.listen6(host) : try Self.listen4(host)
        self.host = host
        self.socketDescriptor = descriptor
        self.port = port
        self.handler = handler
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit {
        stop()
    }

    private static func listen4(_ host: String) throws -> (Int32, Int) {
        let descriptor = socket(AF_INET, PortableSockets.stream, 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr(host)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else { close(descriptor); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func listen6(_ host: String) throws -> (Int32, Int) {
        let descriptor = socket(AF_INET6, PortableSockets.stream, 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = 0
        guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { close(descriptor); throw POSIXError(.EINVAL) }
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else { close(descriptor); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin6_port)))
    }

    /// Stops accepting connections.
    public func stop() {
        // Closing twice could close a descriptor the process has since reused for something else.
        guard stopped.withLock({ wasStopped in defer { wasStopped = true }; return !wasStopped }) else { return }
        shutdown(socketDescriptor, Int32(SHUT_RDWR))
        close(socketDescriptor)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(socketDescriptor, nil, nil)
            guard connection >= 0 else { return }
            Thread { [self] in serve(connection) }.start()
        }
    }

    /// Serves requests on one connection until the client closes it (keep-alive), or after one
    /// answer when the client asked for `Connection: close`.
    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let separator = Array("\r\n\r\n".utf8)
        while true {
            var headEnd = bytes.firstRange(of: separator)?.upperBound
            while headEnd == nil {
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                bytes.append(contentsOf: buffer[..<count])
                headEnd = bytes.firstRange(of: separator)?.upperBound
            }
            let head = String(decoding: bytes[..<(headEnd! - 4)], as: UTF8.self)
            bytes.removeFirst(headEnd!)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ", maxSplits: 2).map(String.init)
            guard requestLine.count >= 2 else { return }
            let headers = lines.compactMap { line -> (name: String, value: String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
            while bytes.count < length {
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                bytes.append(contentsOf: buffer[..<count])
            }
            let body = Data(bytes[..<length])
            bytes.removeFirst(length)
            let request = Request(method: requestLine[0], target: requestLine[1], headers: headers, body: body)
            received.withLock { $0.append(request) }
            let response = handler(request)
            // Status 0: the connection is dropped without an answer, as a dead server would.
            if response.status == 0 { return }
            let closes = request.header("Connection")?.lowercased().contains("close") == true
            // 204 and 304 have no body and need no length (RFC 9110 §8.6); HEAD sends the length only.
            let bodiless = response.status == 204 || response.status == 304
            var text = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
            for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
            // A scripted `Transfer-Encoding` (a HEAD's, telling how a GET would be framed) stands in for the length.
            if !bodiless, !response.headers.contains(where: { ["content-length", "transfer-encoding"].contains($0.name.lowercased()) }) {
                text += "Content-Length: \(response.body.count)\r\n"
            }
            if closes { text += "Connection: close\r\n" }
            text += "\r\n"
            var out = Array(text.utf8)
            if request.method != "HEAD", !bodiless { out.append(contentsOf: response.body.prefix(response.cutAfter ?? Int.max)) }
            var sent = 0
            while sent < out.count {
                let count = out[sent...].withUnsafeBytes { PortableSockets.send(connection, $0) }
                guard count > 0 else { return }
                sent += count
            }
            if closes || response.cutAfter != nil { return }
        }
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 404: "Not Found"
        case 410: "Gone"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
