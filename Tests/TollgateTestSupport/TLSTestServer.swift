import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A loopback HTTPS/1.1 server with a ``SelfSignedCertificate``, answering every request `200`
/// with a fixed body. It counts the requests that reached it, so a test can prove that a client
/// which refused the certificate sent nothing.
public final class TLSTestServer: Sendable {
    /// The port it listens on, on 127.0.0.1.
    public let port: Int
    /// The certificate it presents: the file a client must trust.
    public let certificate: SelfSignedCertificate
    private let channel: any Channel
    private let log: RequestCount

    /// `https://127.0.0.1:PORT`.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// The requests that reached the server's application (past the TLS handshake).
    public var requestCount: Int { log.value }

    /// Starts a server with a fresh certificate made in `directory`.
    /// - Parameters:
    ///   - directory: Where the certificate and key are written.
    ///   - body: The body of every answer.
    /// - Throws: When the certificate cannot be made or the port cannot be bound.
    public init(in directory: TemporaryDirectory, body: String = "private page") async throws {
        let certificate = try SelfSignedCertificate(in: directory)
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate.certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificate.privateKeyPath, format: .pem))
        )
        let context = try NIOSSLContext(configuration: configuration)
        let log = RequestCount()
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(FixedAnswer(body: body, log: log))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        self.certificate = certificate
        self.log = log
    }

    /// Stops listening; connections already open end with their client.
    public func stop() async {
        try? await channel.close()
    }
}

/// How many requests reached the server.
private final class RequestCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

/// Answers each complete request `200` with the body.
private final class FixedAnswer: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let body: String
    private let log: RequestCount

    init(body: String, log: RequestCount) {
        self.body = body
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        log.increment()
        let headers = HTTPHeaders([("Content-Type", "text/plain"), ("Content-Length", "\(body.utf8.count)")])
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))),
                      promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
