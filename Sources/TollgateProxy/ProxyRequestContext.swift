import Hummingbird
import NIOCore

/// The proxy's request context: Hummingbird's basic one, plus the client's channel, so that the
/// responder can notice the client going away (``ClientConnectionWatcher``).
struct ProxyRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The client's connection.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
