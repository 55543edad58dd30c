import NIOCore
import NIOHTTP1

/// The HTTP/1 connection rules that Hummingbird's version-free request types cannot see, applied
/// where the request head still carries its version (before the conversion to `HTTPTypes`):
///
/// - **HTTP/1.0** (RFC 9112 §9.3): a connection is closed after the answer unless the client
///   asked for `Connection: keep-alive`, which the answer then confirms; an answer without a
///   length is delimited by closing the connection (never chunked, which a 1.0 client cannot read).
/// - **`Expect: 100-continue`** (RFC 9110 §10.1.1): the client is told `100 Continue` at once
///   (an HTTP/1.0 client never is), so that curl sends its body without a pause, and the
///   expectation stops here: the proxy reads the whole body before it sends anything upstream.
/// - **`CONNECT`**: the decoder stops parsing after it (the rest would be a tunnel), so the
///   connection is closed after the proxy's refusal instead of being left open until the idle timeout.
///
/// - An answer that says `Connection: close` closes the connection once written.
///
/// Requests may be pipelined: each answer is matched with its request in order.
final class HTTP1ConnectionRules: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// What one request's answer must do to the connection.
    private struct Exchange {
        var version: HTTPVersion
        var closesAfterAnswer: Bool
    }

    private var exchanges: [Exchange] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let isHTTP10 = head.version.major == 1 && head.version.minor == 0
        let closes = !head.isKeepAlive || head.method == .CONNECT
        exchanges.append(Exchange(version: head.version, closesAfterAnswer: closes))
        if head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) {
            head.headers.remove(name: "expect")
            if !isHTTP10 {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))),
                                      promise: nil)
            }
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status.code >= 200 && !exchanges.isEmpty:
            if head.headers[canonicalForm: "connection"].contains(where: { $0.lowercased() == "close" }) {
                // The proxy's own answer says so (a shutdown).
                exchanges[0].closesAfterAnswer = true
            }
            let isHTTP10 = exchanges[0].version.major == 1 && exchanges[0].version.minor == 0
            if isHTTP10 {
                head.version = .http1_0
                if !head.headers.contains(name: "content-length") {
                    // No chunked coding for 1.0: the end of the connection ends the body.
                    exchanges[0].closesAfterAnswer = true
                }
                head.headers.replaceOrAdd(name: "connection", value: exchanges[0].closesAfterAnswer ? "close" : "keep-alive")
            } else if exchanges[0].closesAfterAnswer {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where !exchanges.isEmpty:
            let exchange = exchanges.removeFirst()
            guard exchange.closesAfterAnswer else {
                context.write(data, promise: promise)
                return
            }
            let written = context.writeAndFlush(data)
            written.cascade(to: promise)
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        default:
            context.write(data, promise: promise)
        }
    }
}
