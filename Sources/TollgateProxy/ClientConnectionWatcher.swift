import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Notices that a client has gone — its connection closed or reset, or its input ended — while
/// the proxy is still working on its request, so the request's remaining attempts can be cancelled
/// (nothing is spent on an answer no one waits for).
///
/// One per connection, in the pipeline after HTTP decoding; the responder finds it with
/// ``watching(_:)`` and registers what to do with ``Signal/onDisconnect(_:)``.
final class ClientConnectionWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    /// Whether the client has gone, and who to tell. Safe to share across tasks.
    final class Signal: Sendable {
        private struct State {
            var gone = false
            var handlers: [@Sendable () -> Void] = []
        }
        private let state = Mutex(State())

        /// Whether the client has gone.
        var isDisconnected: Bool { state.withLock { $0.gone } }

        /// Runs `handler` once the client has gone: at once if it already has.
        func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
            let runNow = state.withLock { state -> Bool in
                if state.gone { return true }
                state.handlers.append(handler)
                return false
            }
            if runNow { handler() }
        }

        /// Forgets the handlers (the request is answered: nothing left to cancel).
        func clear() {
            state.withLock { $0.handlers.removeAll() }
        }

        fileprivate func disconnected() {
            let handlers = state.withLock { state -> [@Sendable () -> Void] in
                guard !state.gone else { return [] }
                state.gone = true
                defer { state.handlers.removeAll() }
                return state.handlers
            }
            for handler in handlers { handler() }
        }
    }

    let signal = Signal()

    /// The watcher's signal on `channel`, or nil when the channel has no watcher.
    static func watching(_ channel: any Channel) async -> Signal? {
        try? await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: ClientConnectionWatcher.self).signal
        }.get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        signal.disconnected()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client's end of file: curl killed, or a client that gave up. Remote half-closure is
        // on (Hummingbird's default), so this comes without the channel closing.
        if let event = event as? ChannelEvent, event == .inputClosed { signal.disconnected() }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? IOError, [ECONNRESET, EPIPE].contains(error.errnoCode) { signal.disconnected() }
        context.fireErrorCaught(error)
    }
}
