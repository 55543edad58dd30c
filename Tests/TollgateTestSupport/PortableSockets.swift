import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few socket calls whose spelling differs between Glibc and Darwin, for the test servers and
/// clients on bare sockets.
public enum PortableSockets {
    /// `SOCK_STREAM` as `socket(2)` takes it.
    public static var stream: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    /// Flags for `send(2)` that keep a closed peer from raising SIGPIPE (Darwin sets `SO_NOSIGPIPE`
    /// on the socket instead: see ``noSignalOnClosedPeer(_:)``).
    public static var sendFlags: Int32 {
        #if canImport(Glibc)
        Int32(MSG_NOSIGNAL)
        #else
        0
        #endif
    }

    /// Keeps writes to a closed peer from raising SIGPIPE, where the flag is per socket.
    public static func noSignalOnClosedPeer(_ descriptor: Int32) {
        #if canImport(Darwin)
        var on: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// `connect(2)`.
    public static func connect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.connect(descriptor, address, length)
        #else
        Darwin.connect(descriptor, address, length)
        #endif
    }

    /// `send(2)` of all of `bytes` at once, with ``sendFlags``.
    public static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
        Glibc.send(descriptor, bytes.baseAddress, bytes.count, sendFlags)
        #else
        Darwin.send(descriptor, bytes.baseAddress, bytes.count, sendFlags)
        #endif
    }

    /// The directory of the running test binary, where SwiftPM also puts the package's executables
    /// (`tollgate`, `TollgateWorker`): beside the `.xctest` bundle on macOS.
    public static let productsDirectory: URL = {
        #if canImport(Darwin)
        if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        #else
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #endif
    }()
}
