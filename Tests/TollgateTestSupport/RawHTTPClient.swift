import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A client on bare sockets that sends bytes exactly as given (a `..` in the path, a body on a
/// GET), for tests of what a server does with requests ordinary clients would clean up first.
public enum RawHTTPClient {
    /// An answer: status, header fields (names lowercased) and body bytes.
    public struct Answer: Sendable {
        public let status: Int
        public let headers: [String: String]
        public let body: Data
    }

    /// Opens a connection to a loopback port, or throws.
    public static func connect(port: Int, host: String = "127.0.0.1") throws -> Int32 {
        let descriptor = socket(AF_INET, PortableSockets.stream, 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                PortableSockets.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { close(descriptor); throw POSIXError(.ECONNREFUSED) }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return descriptor
    }

    /// Sends `request` (with `\r\n` line ends) and reads the answer until the server closes or the
    /// body's `Content-Length` is complete.
    public static func exchange(port: Int, _ request: String, body: Data = Data()) throws -> Answer {
        let descriptor = try connect(port: port)
        defer { close(descriptor) }
        let bytes = Array(request.utf8) + Array(body)
        _ = bytes.withUnsafeBytes { PortableSockets.send(descriptor, $0) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[..<count])
            if let answer = parse(received), answer.body.count >= Int(answer.headers["content-length"] ?? "-1") ?? Int.max {
                return answer
            }
        }
        guard let answer = parse(received) else { throw POSIXError(.EBADMSG) }
        return answer
    }

    /// Sends `request` and reads the answer to its end, counting the body's bytes without keeping
    /// them (for answers too large to hold).
    public static func countBody(port: Int, _ request: String) throws -> (status: Int, bodyBytes: Int) {
        let descriptor = try connect(port: port)
        defer { close(descriptor) }
        _ = Array(request.utf8).withUnsafeBytes { PortableSockets.send(descriptor, $0) }
        var head: [UInt8] = []
        var bodyBytes = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var status = 0
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            if status == 0 {
                head.append(contentsOf: buffer[..<count])
                if let end = head.firstRange(of: Array("\r\n\r\n".utf8)) {
                    status = parse(Array(head[..<end.upperBound]))?.status ?? -1
                    bodyBytes = head.count - end.upperBound
                }
            } else {
                bodyBytes += count
            }
        }
        return (status, bodyBytes)
    }

    /// Whether the server has closed `descriptor` (a read returns end of file) within `seconds`.
    public static func isClosedByServer(_ descriptor: Int32, within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, 0) == 0
    }

    private static func parse(_ bytes: [UInt8]) -> Answer? {
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            return nil
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: Data(bytes[end.upperBound...]))
    }
}
