import Foundation
import TollgateTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-route loopback HTTP server that streams a body of any size in 64 KiB chunks without ever
/// holding it, so a test can measure what the client holds. Every request gets the same answer.
final class StreamingServer: Sendable {
    let port: Int
    private let socketDescriptor: Int32
    private let sent = Mutex<Int>(0)

    /// Bytes of body written to clients so far.
    var bytesSent: Int { sent.withLock { $0 } }

    init(bodySize: Int) throws {
        let descriptor = socket(AF_INET, PortableSockets.stream, 0)
        guard descriptor >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else { close(descriptor); throw POSIXError(.EADDRINUSE) }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        socketDescriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop(bodySize: bodySize) }
        thread.start()
    }

    func stop() {
        shutdown(socketDescriptor, Int32(SHUT_RDWR))
        close(socketDescriptor)
    }

    private func acceptLoop(bodySize: Int) {
        while true {
            let connection = accept(socketDescriptor, nil, nil)
            guard connection >= 0 else { return }
            Thread { [self] in serve(connection, bodySize: bodySize) }.start()
        }
    }

    private func serve(_ connection: Int32, bodySize: Int) {
        defer { close(connection) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.suffix(4).elementsEqual(Array("\r\n\r\n".utf8)) {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            request.append(contentsOf: buffer[0..<count])
            if request.count > 65_536 { return }
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \"huge\"\r\n"
            + "Content-Length: \(bodySize)\r\nConnection: close\r\n\r\n"
        guard write(connection, Array(head.utf8)) else { return }
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 64 * 1024)
        var remaining = bodySize
        while remaining > 0 {
            let size = min(remaining, chunk.count)
            guard write(connection, Array(chunk[0..<size])) else { return }
            sent.withLock { $0 += size }
            remaining -= size
        }
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

/// The resident memory of this process, in bytes (Linux `/proc/self/statm`; 0 elsewhere).
func residentMemory() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Samples the resident memory on a thread of its own until stopped, keeping the highest value.
final class MemorySampler: Sendable {
    private let state = Mutex<(peak: Int, running: Bool)>((0, true))

    init() {
        Thread { [self] in
            while state.withLock({ $0.running }) {
                let now = residentMemory()
                state.withLock { $0.peak = max($0.peak, now) }
                usleep(2_000)
            }
        }.start()
    }

    /// Stops sampling and returns the highest resident memory seen.
    func stop() -> Int {
        state.withLock { $0.running = false; return $0.peak }
    }
}
