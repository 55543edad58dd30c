import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Tollgate
import TollgateSimulation
import TollgateAsyncHTTPClient

/// A reverse proxy on loopback that runs every request through a ``Gate``, so any HTTP client —
/// curl, a Python script — gets the ETag cache, the quota ledger, the throttle and the circuit
/// breaker, sharing the same SQLite file as every Swift tool that uses it.
///
/// A request to `http://127.0.0.1:PORT/youtube/v3/videos?id=v1` is sent to the same path and
/// query under the upstream URL, named by an ``EndpointNaming`` (`videos.list`), and answered with:
/// - the upstream's response (for a revalidated or stale answer, the stored response), with
///   `X-Tollgate-Source` (`network`, `cache`, `revalidated`, `stale (…)`), `X-Tollgate-Units`
///   (the units charged) and `X-Tollgate-Endpoint`;
/// - `429 Too Many Requests` with `Retry-After` when the throttle or the quota refuses;
/// - `503 Service Unavailable` with `Retry-After` when the circuit is open;
/// - `502 Bad Gateway` when the upstream cannot be reached and nothing is stored.
///
/// Hop-by-hop header fields are never forwarded, in either direction.
///
/// Links to the upstream lead back through the proxy: in `Link` (every URI reference), `Location`
/// and `Content-Location`, and in the JSON bodies of the media types given as `rewrittenBodyTypes`, a
/// URL on the upstream's origin, at or under its base path, becomes the same path under `http://` and
/// the `Host` the client addressed the proxy by — so pagination and hypermedia stay cached, throttled
/// and counted. Other origins are left byte for byte. The cache keeps the upstream's bytes; each
/// client gets its own names on the way out, and the upstream's `ETag`, which its `If-None-Match`
/// still matches.
///
/// Nothing is spent for a client that has gone: when a client disconnects, its request's remaining
/// attempts are cancelled (the attempt in flight finishes and is settled as any other). A shutdown
/// (``stop()``, or a signal) cancels the retry waits of the requests in flight, which are answered
/// with the last attempt's outcome or `503`; past the grace period the attempts in flight are
/// abandoned too (their charges stay: they may have reached the upstream).
///
/// ```swift
/// let gate = try Gate(store: try SQLiteStore(path: "tollgate.sqlite"))
/// let proxy = try await GateProxy.start(gate: gate, upstream: URL(string: "https://www.googleapis.com")!,
///                                       listen: try LoopbackAddress(parsing: "127.0.0.1:8080"))
/// try await proxy.waitUntilStopped()
/// ```
public final class GateProxy: Sendable {
    /// The address it listens on, with the port the system picked when asked for port 0.
    public let address: LoopbackAddress
    /// Where requests are forwarded.
    public let upstream: URL
    private let services: ServiceGroup
    private let server: Mutex<Task<Void, any Error>?>

    /// `http://HOST:PORT`, the proxy's own base URL.
    public var baseURL: URL { URL(string: "http://\(address)")! }

    private init(address: LoopbackAddress, upstream: URL, services: ServiceGroup, server: Task<Void, any Error>) {
        self.address = address
        self.upstream = upstream
        self.services = services
        self.server = Mutex(server)
    }

    /// Starts listening and returns once the socket is bound.
    /// - Parameters:
    ///   - gate: The gate every request goes through.
    ///   - upstream: The API's base URL, such as `https://www.googleapis.com`. A path in it prefixes
    ///     every request's path.
    ///   - listen: A loopback address; port 0 picks a free port (read it from ``address``).
    ///   - naming: How requests are named for the cost table, the circuit and the throttle.
    ///   - transport: How requests reach the upstream. By default AsyncHTTPClient as configured by
    ///     `AsyncHTTPClientTransport`: it passes the client's header fields (`Accept-Encoding`
    ///     included) and the upstream's bytes through unchanged, and follows no redirect.
    ///   - rewrittenBodyTypes: Media types, such as `application/json`, whose answers' JSON string
    ///     values that are URLs to the upstream are pointed at the proxy on the way out (bodies held
    ///     whole; a compressed one with a URL to rewrite goes out decoded; a streamed one passes as the
    ///     upstream sent it). None by default; header fields are rewritten whatever this says.
    ///   - maximumBodySize: The largest request body accepted, in bytes (413 past it).
    ///   - idleTimeout: How long a connection may stay without a complete request head or between
    ///     requests before it is closed, so slow or idle clients cannot hold connections. 10 s by default.
    ///   - maximumConnections: The most client connections open at once; more wait in the listen
    ///     backlog until one closes. 256 by default.
    ///   - clock: The wall clock for `Retry-After` of a spent quota (seconds to the Pacific reset).
    ///   - stopsOnSignals: Whether SIGINT and SIGTERM shut the proxy down gracefully (for a
    ///     command-line tool that runs it in the foreground).
    ///   - shutdownGracePeriod: How long a shutdown waits for the attempts in flight to finish
    ///     before it abandons them. 10 s by default.
    ///   - recorder: Where every exchange is written as HAR, secrets redacted (`--record`); none by default.
    ///   - logger: Where the proxy logs one line per request (info) and failures.
    /// - Returns: The running proxy.
    /// - Throws: ``GateProxyError/invalidUpstream(_:)``, ``GateProxyError/addressInUse(_:)`` when
    ///   another socket holds the address, ``GateProxyError/couldNotStart(_:)``, or the server's error.
    public static func start(
        gate: Gate,
        upstream: URL,
        listen: LoopbackAddress,
        naming: EndpointNaming = .youTubeDataAPIv3,
        rewrittenBodyTypes: Set<String> = [],
        transport: any HTTPTransport = AsyncHTTPClientTransport(),
        maximumBodySize: Int = 16 * 1024 * 1024,
        idleTimeout: Duration = .seconds(10),
        maximumConnections: Int = 256,
        clock: any TollgateClock = SystemClock(),
        stopsOnSignals: Bool = false,
        shutdownGracePeriod: Duration = .seconds(10),
        recorder: HTTPArchiveRecorder? = nil,
        logger: Logger = Logger.current
    ) async throws -> GateProxy {
        guard let scheme = upstream.scheme?.lowercased(), ["http", "https"].contains(scheme), upstream.host != nil else {
            throw GateProxyError.invalidUpstream(upstream.absoluteString)
        }
        guard maximumConnections >= 1, idleTimeout > .zero, shutdownGracePeriod > .zero else {
            throw GateProxyError.couldNotStart(
                "\(listen): maximumConnections, idleTimeout and shutdownGracePeriod must be positive"
            )
        }
        let responder = GateProxyResponder(
            gate: gate, transport: transport, upstream: upstream, naming: naming,
            linkedUpstream: UpstreamLinkRewriter.Upstream(upstream),
            rewrittenBodyTypes: Set(rewrittenBodyTypes.map { $0.lowercased() }), maximumBodySize: maximumBodySize,
            clock: clock, recorder: recorder, logger: logger
        )
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            responder: responder,
            server: HTTPServerBuilder { respond in
                ProxyChildChannel(base: HTTP1Channel(responder: respond, configuration: .init(
                    additionalChannelHandlers: [UpstreamDateRestorer(), ClientConnectionWatcher()],
                    idleTimeout: .nanoseconds(SaturatingConversion.int64(idleTimeout.timeInterval * 1e9))
                )))
            },
            configuration: ApplicationConfiguration(
                address: .hostname(listen.host, port: listen.port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(maximumConnections, logger: logger)
            ),
            onServerRunning: { channel in
                portContinuation.yield(channel.localAddress?.port ?? 0)
                portContinuation.finish()
            },
            logger: logger
        )
        var group = ServiceGroupConfiguration(
            services: [application], gracefulShutdownSignals: stopsOnSignals ? [.sigterm, .sigint] : [], logger: logger
        )
        // Past the grace period the shutdown cancels what is left: the attempts in flight too.
        group.maximumGracefulShutdownDuration = shutdownGracePeriod
        let services = ServiceGroup(configuration: group)
        let server = Task {
            defer { portContinuation.finish() }
            try await services.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            server.cancel()
            do {
                try await server.value
            } catch let error as IOError where error.errnoCode == EADDRINUSE {
                throw GateProxyError.addressInUse(listen.description)
            }
            throw GateProxyError.couldNotStart(listen.description)
        }
        return GateProxy(
            address: try LoopbackAddress(host: listen.host, port: port), upstream: upstream, services: services, server: server
        )
    }

    /// Waits until the proxy stops (``stop()``, or a signal when it was started with `stopsOnSignals`).
    /// - Throws: The server's error, if it failed.
    public func waitUntilStopped() async throws {
        let task = server.withLock { $0 }
        try await task?.value
    }

    /// Stops accepting requests, lets those in flight finish, and waits until the socket is closed.
    public func stop() async {
        let task = server.withLock { task -> Task<Void, any Error>? in
            defer { task = nil }
            return task
        }
        await services.triggerGracefulShutdown()
        _ = try? await task?.value
    }
}
