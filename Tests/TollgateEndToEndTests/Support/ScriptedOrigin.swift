import Foundation
import HTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP/1.1 origin whose answers a test scripts, byte for byte: each request gets the
/// answer the handler returns for it, with exactly the header lines given (plus `Content-Length`
/// when the script has none), so caching rules can be tested against any header a server may send.
/// Every request that arrived is recorded, with its method, target and header lines.
final class ScriptedOrigin: Sendable {
    struct Received: Sendable {
        var method: String
        var target: String
        var headers: [(String, String)]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    struct Answer: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: Data

        init(_ status: Int = 200, _ headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Data(body.utf8)
        }
    }

    let port: Int
    private let socketDescriptor: Int32
    private let state: Mutex<(received: [Received], handler: @Sendable (Received) -> Answer)>

    /// Requests received so far, in order.
    var received: [Received] { state.withLock { $0.received } }

    /// Replaces what the origin answers.
    func answer(_ handler: @escaping @Sendable (Received) -> Answer) {
        state.withLock { $0.handler = handler }
    }

    /// `http://127.0.0.1:PORT` + path.
    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    init(_ handler: @escaping @Sendable (Received) -> Answer = { _ in Answer() }) throws {
        state = Mutex(([], handler))
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var reuse: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else { close(descriptor); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        socketDescriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// Closes the listening socket: later requests fail to connect.
    func stop() {
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

    /// Serves requests on one connection until the client closes it.
    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var headEnd: Int?
            while headEnd == nil {
                if let end = Self.find(Array("\r\n\r\n".utf8), in: buffer) { headEnd = end; break }
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            guard let end = headEnd else { return }
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count >= 2 else { return }
            let headers = lines.compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
            while buffer.count < length {
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            buffer.removeFirst(length)
            let received = Received(method: String(requestLine[0]), target: String(requestLine[1]), headers: headers)
            let handler = state.withLock { state in
                state.received.append(received)
                return state.handler
            }
            let answer = handler(received)
            // Status 0: the origin drops the connection without answering, as a dead server would.
            if answer.status == 0 { return }
            let noBody = received.method == "HEAD" || answer.status == 304 || answer.status == 204
            var text = "HTTP/1.1 \(answer.status) \(Self.reason(answer.status))\r\n"
            for (name, value) in answer.headers { text += "\(name): \(value)\r\n" }
            if !answer.headers.contains(where: { $0.0.lowercased() == "content-length" }), answer.status != 304,
               answer.status != 204 {
                text += "Content-Length: \(answer.body.count)\r\n"
            }
            text += "\r\n"
            var bytes = Array(text.utf8)
            if !noBody { bytes += answer.body }
            guard write(connection, bytes) else { return }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        [200: "OK", 203: "Non-Authoritative Information", 204: "No Content", 301: "Moved Permanently",
         302: "Found", 303: "See Other", 304: "Not Modified", 404: "Not Found", 410: "Gone",
         500: "Internal Server Error", 503: "Service Unavailable"][status] ?? "Status"
    }

    private func write(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let written = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, flags) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
