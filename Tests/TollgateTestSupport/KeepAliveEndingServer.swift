import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A loopback HTTP/1.1 server whose keep-alive ends the moment a client reuses a connection: it
/// answers the first request on each connection `200` and keeps the connection open, then closes it
/// without a byte of answer when a second request arrives on it. That is the race a client meets
/// when a server's idle timeout ends just as its pool sends on a kept-alive connection, made
/// certain instead of rare. It records every request it read, answered or not.
public final class KeepAliveEndingServer: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    private let channel: any Channel
    private let log: Log

    /// `http://127.0.0.1:PORT`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The method and path of every request read, in order, answered or not.
    public var requests: [String] { log.requests.withLock { $0 } }
    /// How many connections clients opened.
    public var connections: Int { log.connections.withLock { $0 } }

    /// Starts listening on a free port.
    /// - Throws: When the port cannot be bound.
    public init() async throws {
        let log = Log()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                log.connections.withLock { $0 += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(FirstRequestOnly(log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        self.log = log
    }

    /// Stops listening; connections already open end with their client.
    public func stop() async {
        try? await channel.close()
    }

    fileprivate final class Log: Sendable {
        let requests = Mutex<[String]>([])
        let connections = Mutex(0)
    }
}

/// Answers a connection's first request, and closes the connection on its second.
private final class FirstRequestOnly: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let log: KeepAliveEndingServer.Log
    private var answered = 0
    private var head: HTTPRequestHead?

    init(log: KeepAliveEndingServer.Log) {
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            log.requests.withLock { $0.append("\(head?.method.rawValue ?? "?") \(head?.uri ?? "?")") }
            guard answered == 0 else {
                context.close(promise: nil)
                return
            }
            answered += 1
            let body = "answer \(log.requests.withLock { $0.count })"
            let headers = HTTPHeaders([("Content-Type", "text/plain"), ("Content-Length", "\(body.utf8.count)"),
                                       ("Connection", "keep-alive")])
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                          promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
