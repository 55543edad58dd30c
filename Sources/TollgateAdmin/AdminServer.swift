import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TollgateCore
import TollgateSQLite

/// The operators' listener: `/metrics` in the Prometheus text format, the web dashboard at `/`
/// and its data at `/api/snapshot`, all read from the store at each request, so that every
/// process over the same store (a fleet over PostgreSQL) reports the same shared state.
///
/// It binds to loopback unless it is given a token; with a token, every request must carry it
/// (`Authorization: Bearer TOKEN`, or `?token=TOKEN` in a browser).
///
/// Like the proxy's listener it closes connections idle for ``idleTimeout`` and holds at most
/// ``maximumConnections`` at once, so silent sockets cannot take the file descriptors the process
/// shares with its store and upstream. On loopback it answers only requests addressed to a
/// loopback name (`Host: localhost`, `127.0.0.1`, `[::1]`), so a web page whose name rebinds to
/// 127.0.0.1 cannot read it.
///
/// ```swift
/// let metrics = ProcessMetrics()
/// let gate = try Gate(storage: store, transport: transport, metrics: metrics.factory)
/// let admin = try await AdminServer.start(
///     listen: try AdminAddress(parsing: "127.0.0.1:9464"),
///     exposition: MetricsExposition(process: metrics, reader: OperatorsSnapshotReader(storage: store)))
/// ```
public final class AdminServer: Sendable {
    /// The address it listens on, with the port the system picked when asked for port 0.
    public let address: AdminAddress
    private let services: ServiceGroup
    private let server: Mutex<Task<Void, any Error>?>

    /// `http://HOST:PORT`, the listener's base URL.
    public var baseURL: URL { URL(string: "http://\(address)")! }

    private init(address: AdminAddress, services: ServiceGroup, server: Task<Void, any Error>) {
        self.address = address
        self.services = services
        self.server = Mutex(server)
    }

    /// Starts listening and returns once the socket is bound.
    /// - Parameters:
    ///   - listen: The address; port 0 picks a free port (read it from ``address``).
    ///   - exposition: What `/metrics` reports, and the store the dashboard reads.
    ///   - databaseName: How the dashboard names the database (never with a password).
    ///   - token: The token every request must carry; required for a non-loopback address.
    ///   - refreshSeconds: Seconds between the web dashboard's refreshes.
    ///   - stopsOnSignals: Whether SIGINT and SIGTERM stop it (for a command that runs only it).
    ///   - idleTimeout: How long a connection may stay without a request before it is closed; 10 s
    ///     by default, as the proxy's.
    ///   - maximumConnections: The most connections held at once; 64 by default.
    ///   - logger: Where it logs a store that cannot be read.
    /// - Returns: The running listener.
    /// - Throws: ``AdminServerError/tokenRequired(_:)`` for a non-loopback address without a token,
    ///   ``AdminServerError/addressInUse(_:)``, ``AdminServerError/couldNotStart(_:)``.
    public static func start(
        listen: AdminAddress,
        exposition: MetricsExposition,
        databaseName: String = "",
        token: String? = nil,
        refreshSeconds: Int = 5,
        stopsOnSignals: Bool = false,
        idleTimeout: Duration = .seconds(10),
        maximumConnections: Int = 64,
        logger: Logger = Logger.current
    ) async throws -> AdminServer {
        let token = token.flatMap { $0.isEmpty ? nil : $0 }
        guard listen.isLoopback || token != nil else { throw AdminServerError.tokenRequired(listen.description) }
        guard idleTimeout > .zero, maximumConnections >= 1 else {
            throw AdminServerError.couldNotStart("\(listen): idleTimeout and maximumConnections must be positive")
        }
        let responder = AdminResponder(exposition: exposition, databaseName: databaseName, token: token,
                                       refreshSeconds: max(1, refreshSeconds),
                                       loopbackOnly: listen.isLoopback ? listen.host : nil, logger: logger)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            responder: responder,
            server: .http1(configuration: .init(idleTimeout: .nanoseconds(
                SaturatingConversion.int64(idleTimeout.timeInterval * 1e9)))),
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
        let services = ServiceGroup(configuration: .init(
            services: [application], gracefulShutdownSignals: stopsOnSignals ? [.sigterm, .sigint] : [], logger: logger
        ))
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
                throw AdminServerError.addressInUse(listen.description)
            } catch {}
            throw AdminServerError.couldNotStart(listen.description)
        }
        var bound = listen
        bound.port = port
        return AdminServer(address: bound, services: services, server: server)
    }

    /// Waits until the listener stops (``stop()``, or a signal when it was started with `stopsOnSignals`).
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
