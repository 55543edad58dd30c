import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Puts the upstream's `Date` back on the proxy's answers. Hummingbird stamps every response with
/// its own clock, but a proxy passes the origin's `Date` on (RFC 9110 §6.6.1), and a cached
/// answer's age is reckoned from it (RFC 9111 §4.2.3): the responder parks the upstream's value in
/// ``ProxyHeaders/upstreamDate``, and this handler moves it back into `Date` on the way out.
final class UpstreamDateRestorer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), let date = head.headerFields[ProxyHeaders.upstreamDate] else {
            context.write(data, promise: promise)
            return
        }
        head.headerFields[ProxyHeaders.upstreamDate] = nil
        head.headerFields[.date] = date
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
